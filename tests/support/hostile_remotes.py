"""Other servers that try to take podsync down through an import, on loopback: pages
of junk that never end, one huge array of numbers, a device list that names one
device thousands of times, a million feeds, an answer that trickles for ever. Each
signs in `remote` with REMOTE_PASSWORD, counts the calls it gets, and makes its
answers as it sends them (the test's own memory stays small)."""

from __future__ import annotations

import asyncio
import contextlib
import json

from aiohttp import web

from tests.support.remote_peers import FEEDS, ThreadedServer


class HostileGpodder(ThreadedServer):
    """A gpodder server: one device (`phone`) with FEEDS[:2], no episode actions.
    Subclasses make one of its answers hostile."""

    def __enter__(self) -> HostileGpodder:
        super().__enter__()
        return self

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/api/2/auth/{user}/login.json", self._login)
        app.router.add_get("/api/2/devices/{user}.json", self.devices)
        app.router.add_get("/api/2/subscriptions/{user}/{device}.json", self.device_list)
        app.router.add_get("/api/2/episodes/{user}.json", self.episodes)

    def count(self, request: web.Request) -> None:
        self.calls.append(f"{request.method} {request.path_qs}")

    async def _login(self, request: web.Request) -> web.Response:
        self.count(request)
        if not self.authorized(request):
            return web.json_response({"message": "wrong password"}, status=401)
        return web.json_response({})

    async def devices(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        return web.json_response([{"id": "phone", "caption": "Phone", "type": "mobile"}])

    async def device_list(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        return web.json_response({"add": FEEDS[:2], "remove": [], "timestamp": 5})

    async def episodes(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        return web.json_response({"actions": [], "timestamp": 5})


async def stream(
    request: web.Request, head: bytes, piece: bytes, times: int, tail: bytes
) -> web.StreamResponse:
    """An answer of `head`, `piece` `times` times, `tail`, written as it goes (until
    the client goes away)."""
    response = web.StreamResponse()
    response.content_type = "application/json"
    await response.prepare(request)
    batch = max(1, (1 << 20) // max(1, len(piece)))
    with contextlib.suppress(ConnectionError):
        await response.write(head)
        left = times
        while left:
            n = min(left, batch)
            await response.write(piece * n)
            left -= n
        await response.write(tail)
        await response.write_eof()
    return response


class JunkPages(HostileGpodder):
    """Every answer of episode actions holds `per_page` new malformed actions
    (`{"n": ...}`) and a newer timestamp: a server that never stops paging junk."""

    def __init__(self, per_page: int = 200_000) -> None:
        super().__init__()
        self.per_page = per_page

    async def episodes(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        since = int(request.query.get("since", "0"))
        first = since * self.per_page
        items = ",".join(f'{{"n":{first + i}}}' for i in range(self.per_page))
        body = f'{{"timestamp":{since + 1},"actions":[{items}]}}'.encode()
        return web.Response(body=body, content_type="application/json")


class HugeArray(HostileGpodder):
    """One answer `{"timestamp":1,"actions":[1,1,1,...]}` of `count` numbers."""

    def __init__(self, count: int = 62_000_000) -> None:
        super().__init__()
        self.numbers = count

    async def episodes(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        head = b'{"timestamp":1,"actions":['
        return await stream(request, head, b"1,", self.numbers - 1, b"1]}")


class OneDeviceManyTimes(HostileGpodder):
    """A device list naming `phone` `times` times."""

    def __init__(self, times: int = 20_000) -> None:
        super().__init__()
        self.times = times

    async def devices(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        device = json.dumps({"id": "phone", "caption": "Phone", "type": "mobile"}).encode()
        return await stream(request, b"[", device + b",", self.times - 1, device + b"]")


class ManyFeeds(HostileGpodder):
    """A device whose list names `count` distinct feeds; its episode actions (if
    `bad_positions`) hold that many plays, each with its own out-of-range position."""

    def __init__(self, count: int = 1_000_000, bad_positions: int = 0) -> None:
        super().__init__()
        self.feeds = count
        self.bad_positions = bad_positions

    async def device_list(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            await response.write(b'{"add":[')
            for start in range(0, self.feeds, 10_000):
                stop = min(self.feeds, start + 10_000)
                urls = ",".join(f'"https://feeds.example.net/{n}/rss"' for n in range(start, stop))
                await response.write(("," if start else "").encode() + urls.encode())
            await response.write(b'],"remove":[],"timestamp":5}')
            await response.write_eof()
        return response

    async def episodes(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        if request.query.get("since") != "0":
            return web.json_response({"actions": [], "timestamp": 1})
        items = [
            {
                "podcast": "https://feeds.example.net/1/rss",
                "episode": f"https://media.example.net/{n}.mp3",
                "action": "play",
                "timestamp": "2026-10-01T10:00:00",
                "started": 0,
                "position": 2**31 + n,
                "total": 3600,
            }
            for n in range(self.bad_positions)
        ]
        return web.json_response({"actions": items, "timestamp": 1})


class Trickle(HostileGpodder):
    """Episode actions that trickle: one new action every `pause_s`, for ever (until
    the client goes away). An import from it runs until it is stopped."""

    def __init__(self, pause_s: float = 0.05) -> None:
        super().__init__()
        self.pause_s = pause_s
        self.streaming = 0  # answers being written now
        self.closing = False

    def __exit__(self, *exc: object) -> None:
        self.closing = True  # end the answers still trickling
        super().__exit__(*exc)

    async def episodes(self, request: web.Request) -> web.StreamResponse:
        self.count(request)
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        self.streaming += 1
        try:  # until the client goes away
            await response.write(b'{"timestamp":1,"actions":[')
            n = 0
            while not self.closing:
                action = {
                    "podcast": FEEDS[0],
                    "episode": f"https://media.example.com/trickle-{n}.mp3",
                    "action": "download",
                    "timestamp": "2026-10-01T10:00:00",
                }
                await response.write((b"," if n else b"") + json.dumps(action).encode())
                n += 1
                await asyncio.sleep(self.pause_s)
        except ConnectionError:
            pass
        finally:
            self.streaming -= 1
        return response
