"""A JSON answer written as it is read: the episode pulls of a long history.

`StreamedJson` is returned by a handler like any response (the wrappers still set
its headers: cookies, Cache-Control) and writes its body when aiohttp finishes the
response: the head, each piece as the iterator gives it (each write waits until the
client has taken enough of the last), then the tail, which may depend on what was
read (a cursor, stored by the tail before it leaves). The body has no length ahead,
so it goes out chunked.

Once the headers are out, a failure can no longer be answered with an error: the
connection is closed mid-body (the client sees a cut answer, never a complete wrong
one, and asks again) and the failure is logged.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from podsync.errors import Unavailable

log = logging.getLogger("podsync.web")

JSON_TYPE = "application/json; charset=utf-8"


class StreamedJson(web.StreamResponse):
    def __init__(
        self,
        head: bytes,
        pieces: AsyncIterator[bytes],
        tail: Callable[[], Awaitable[bytes]],
    ) -> None:
        super().__init__(status=200, headers={"Content-Type": JSON_TYPE})
        self._head = head
        self._pieces = pieces
        self._tail = tail
        self._streamed = False

    async def write_eof(self, data: bytes = b"") -> None:
        request = self._req
        if not self._streamed and request is not None and request.method != "HEAD":
            self._streamed = True
            written = 0
            try:
                await self.write(self._head)
                async for piece in self._pieces:
                    await self.write(piece)
                    written += len(piece)
                await self.write(await self._tail())
            except ConnectionError:
                raise  # the client went away: aiohttp logs it and closes
            except Exception as exc:
                log.warning(
                    "%s %s: the answer was cut off after %d bytes: %s",
                    request.method,
                    request.path,
                    written,
                    exc,
                    exc_info=not isinstance(exc, Unavailable),
                )
                if request.transport is not None:
                    request.transport.close()
                raise ConnectionResetError("answer cut off") from exc
        await super().write_eof(data)
