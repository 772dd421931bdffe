#!/usr/bin/env python3
"""A soak of `podsync serve --workers 2` on SQLite, with a ledger (README.md here).

    python bench/soak/soak.py --minutes 20 --run build/soak-run

Starts podsync itself from the venv it runs in (or `--bin-dir`), on 127.0.0.1 only,
with its own feed server; every client loop is bounded by the deadline and an
iteration cap. Every acknowledged write is checked against pulls, live and after a
restart. With `--tracemalloc N` the workers trace N frames per allocation and
`--heap-every M` asks each worker for a heap report every M minutes (SIGUSR2,
podsync/serve/heap_report.py), written under RUN/heap for heap_diff.py.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import aiohttp
from aiohttp import web

HOST = "127.0.0.1"

ap = argparse.ArgumentParser()
ap.add_argument("--minutes", type=float, default=70)
ap.add_argument(
    "--kill-at",
    type=float,
    default=None,
    help="minute at which one worker gets SIGKILL (default: half-way; negative: never)",
)
ap.add_argument(
    "--bin-dir",
    default=str(Path(sys.executable).parent),
    help="the bin/ of a venv with podsync installed (default: this Python's)",
)
ap.add_argument(
    "--scale",
    type=float,
    default=1.0,
    help="clients as a share of 15 gpodder, 8 Nextcloud, 7 OPA phones and 3 web users",
)
ap.add_argument("--tracemalloc", type=int, default=0, help="frames per allocation traced (0: off)")
ap.add_argument(
    "--heap-every", type=float, default=0.0, help="minutes between heap reports (0: none)"
)
ap.add_argument("--port", type=int, default=24080)
ap.add_argument("--feed-port", type=int, default=24101)
ap.add_argument("--run", default=None, help="output directory (default: a new temporary one)")
ap.add_argument("--upload-every", type=float, default=2.0)
ap.add_argument("--web-think", type=float, default=0.8)
ap.add_argument("--backup-every", type=float, default=10.0, help="minutes")
ap.add_argument("--sample-every", type=float, default=60.0, help="seconds")
ap.add_argument("--seed", type=int, default=20261128)
ap.add_argument(
    "--history",
    type=int,
    default=0,
    help="plays each account has before the load starts (a long history from the first minute)",
)
args = ap.parse_args()
if args.kill_at is None:
    args.kill_at = args.minutes / 2
if args.kill_at < 0:
    args.kill_at = float("inf")

RUN = os.path.abspath(args.run or tempfile.mkdtemp(prefix="podsync-soak-"))
PODSYNC = str(Path(args.bin_dir) / "podsync")
HEAP_DIR = f"{RUN}/heap"
BASE = f"http://{HOST}:{args.port}"
FEEDBASE = f"http://{HOST}:{args.feed_port}"
CONFIG = f"{RUN}/podsync.toml"
DB = f"{RUN}/podsync.db"
SERVER_LOG = f"{RUN}/server.log"
random.seed(args.seed)
T0 = time.monotonic()
DEADLINE = T0 + args.minutes * 60
MAX_ITERS = 100000  # hard cap on any client loop
NUSERS = 10
PASSWORD = "soak-password-%02d-xyz"

os.makedirs(RUN, exist_ok=True)
os.makedirs(f"{RUN}/backups", exist_ok=True)
os.makedirs(HEAP_DIR, exist_ok=True)
EVENTS = open(f"{RUN}/events.log", "a", buffering=1)
LEDGER = open(f"{RUN}/ledger.jsonl", "a", buffering=1)
METRICS = open(f"{RUN}/metrics.jsonl", "a", buffering=1)


def now_rel() -> float:
    return time.monotonic() - T0


def event(msg: str) -> None:
    line = f"{dt.datetime.utcnow().isoformat(timespec='seconds')}Z t={now_rel():7.1f}s {msg}"
    EVENTS.write(line + "\n")
    print(line, flush=True)


def utc_iso(ms: bool = False) -> str:
    t = dt.datetime.now(dt.UTC)
    if ms:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    return t.strftime("%Y-%m-%dT%H:%M:%S")


# ---------------------------------------------------------------- statistics
class Stats:
    def __init__(self) -> None:
        self.total = 0
        self.by_kind: dict[str, Counter] = defaultdict(Counter)
        self.non2xx = 0
        self.s5xx = 0
        self.exc = 0
        self.samples: list[str] = []
        self.lat: dict[str, list[float]] = defaultdict(list)

    def rec(self, kind: str, status, dt_s: float, detail: str = "") -> None:
        self.total += 1
        self.by_kind[kind][str(status)] += 1
        if len(self.lat[kind]) < 200000:
            self.lat[kind].append(dt_s)
        if status == "EXC":
            self.exc += 1
        elif not (200 <= status < 300):
            self.non2xx += 1
            if status >= 500:
                self.s5xx += 1
        if (status == "EXC" or not (200 <= status < 300)) and len(self.samples) < 400:
            self.samples.append(f"t={now_rel():.1f} {kind} {status} {detail[:300]}")
            event(f"NON2XX {kind} {status} {detail[:200]}")


STATS = Stats()


async def call(session: aiohttp.ClientSession, method: str, path: str, kind: str, **kw):
    """One request; returns (status|None, body bytes|None, headers|None)."""
    t = time.monotonic()
    try:
        async with session.request(
            method, BASE + path, timeout=aiohttp.ClientTimeout(total=60), **kw
        ) as r:
            body = await r.read()
            st = r.status
            hdrs = r.headers
    except Exception as e:  # connection reset during kill -9, timeouts
        STATS.rec(kind, "EXC", time.monotonic() - t, f"{method} {path} {type(e).__name__}: {e}")
        return None, None, None
    STATS.rec(kind, st, time.monotonic() - t, f"{method} {path} {body[:200]!r}")
    return st, body, hdrs


def ledger(**entry) -> None:
    entry["t"] = round(now_rel(), 2)
    LEDGER.write(json.dumps(entry) + "\n")


def alive() -> bool:
    return time.monotonic() < DEADLINE


async def nap(seconds: float) -> None:
    left = DEADLINE - time.monotonic()
    await asyncio.sleep(max(0.0, min(seconds, left)))


# ---------------------------------------------------------------- feed server
FEED_FETCHES = Counter()


def episode_url(feed: str, k: int) -> str:
    return f"{FEEDBASE}/audio/{feed}/{k}.mp3"


def feed_url(name: str) -> str:
    return f"{FEEDBASE}/feed/{name}.xml"


async def feed_handler(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    FEED_FETCHES["feed"] += 1
    items = []
    for k in range(12):
        pub = (dt.datetime(2026, 1, 1) + dt.timedelta(days=k)).strftime(
            "%a, %d %b %Y %H:%M:%S +0000"
        )
        items.append(
            f"<item><title>{name} episode {k} soakword{k}</title><guid>{name}-{k}</guid>"
            f"<pubDate>{pub}</pubDate><link>{FEEDBASE}/page/{name}/{k}</link>"
            f'<enclosure url="{episode_url(name, k)}" length="1000000" type="audio/mpeg"/>'
            f"<itunes:duration>3600</itunes:duration></item>"
        )
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" '
        'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>'
        f"<title>Soak podcast {name}</title><link>{FEEDBASE}/page/{name}</link>"
        f"<description>soak {name}</description>{''.join(items)}</channel></rss>"
    )
    return web.Response(text=xml, content_type="application/rss+xml")


async def other_handler(request: web.Request) -> web.Response:
    FEED_FETCHES["other"] += 1
    return web.Response(status=404, text="no")


# ---------------------------------------------------------------- clients
def basic(user: str, pw: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}


class Positions:
    """Unique, increasing positions per client, so every action is distinct."""

    def __init__(self) -> None:
        self.pos = random.randint(0, 100)

    def next(self) -> tuple[int, int]:
        started = self.pos
        self.pos += random.randint(5, 40)
        return started, self.pos


async def gpodder_phone(idx: int, user: str, pw: str) -> None:
    dev = f"phone{idx:02d}"
    name = f"{user}-gp{idx:02d}"
    hdr = basic(user, pw)
    conn = aiohttp.TCPConnector(limit=2)
    async with aiohttp.ClientSession(connector=conn, headers=hdr) as s:
        await nap(random.uniform(0, 20))
        st, _, _ = await call(
            s,
            "POST",
            f"/api/2/devices/{user}/{dev}.json",
            "gp.device",
            json={"caption": f"AntennaPod {idx}", "type": "mobile"},
        )
        subscribed: list[str] = []
        next_feed = 0
        pos = Positions()
        sub_since = 0
        ep_since = 0
        last_pull = 0.0
        last_delta = time.monotonic()

        async def upload_subs(add: list[str], remove: list[str]) -> None:
            for _attempt in range(4):
                st, _body, _ = await call(
                    s,
                    "POST",
                    f"/api/2/subscriptions/{user}/{dev}.json",
                    "gp.subs.up",
                    json={"add": add, "remove": remove},
                )
                if st == 200:
                    for u in add:
                        ledger(
                            api="gpodder",
                            kind="sub",
                            user=user,
                            dev=dev,
                            url=u,
                            state=True,
                            ack=True,
                        )
                    for u in remove:
                        ledger(
                            api="gpodder",
                            kind="sub",
                            user=user,
                            dev=dev,
                            url=u,
                            state=False,
                            ack=True,
                        )
                    return
                await nap(1.0)
            for u in add + remove:
                ledger(
                    api="gpodder", kind="sub", user=user, dev=dev, url=u, state=u in add, ack=False
                )

        initial = [feed_url(f"{name}-{next_feed + i}") for i in range(5)]
        next_feed += 5
        await upload_subs(initial, [])
        subscribed.extend(initial)
        for _it in range(MAX_ITERS):
            if not alive():
                break
            now = time.monotonic()
            if now - last_pull >= 30 + random.uniform(-3, 3):
                last_pull = now
                st, body, _ = await call(
                    s,
                    "GET",
                    f"/api/2/subscriptions/{user}/{dev}.json?since={sub_since}",
                    "gp.subs.pull",
                )
                if st == 200:
                    sub_since = json.loads(body)["timestamp"]
                st, body, _ = await call(
                    s, "GET", f"/api/2/episodes/{user}.json?since={ep_since}", "gp.ep.pull"
                )
                if st == 200:
                    ep_since = json.loads(body)["timestamp"]
            if now - last_delta >= 60 + random.uniform(-5, 5):
                last_delta = now
                new = feed_url(f"{name}-{next_feed}")
                next_feed += 1
                old = subscribed.pop(0)
                await upload_subs([new], [old])
                subscribed.append(new)
            # episode actions: 1-3 plays of own subscribed feeds' episodes
            actions = []
            for _ in range(random.randint(1, 3)):
                feed = random.choice(subscribed)
                fname = feed.rsplit("/", 1)[1][:-4]
                k = random.randrange(12)
                started, position = pos.next()
                a = {
                    "podcast": feed,
                    "episode": episode_url(fname, k),
                    "device": dev,
                    "action": "play",
                    "timestamp": utc_iso(),
                    "started": started,
                    "position": position,
                    "total": 100000,
                }
                if random.random() < 0.05:
                    a = {
                        "podcast": feed,
                        "episode": episode_url(fname, k),
                        "device": dev,
                        "action": "download",
                        "timestamp": utc_iso(),
                    }
                actions.append(a)
            for _attempt in range(4):
                st, body, _ = await call(
                    s, "POST", f"/api/2/episodes/{user}.json", "gp.ep.up", json=actions
                )
                if st == 200:
                    for a in actions:
                        ledger(api="gpodder", kind="ep", user=user, dev=dev, a=a, ack=True)
                    break
                await nap(1.0)
            await nap(args.upload_every * random.uniform(0.7, 1.3))


async def nextcloud_phone(idx: int, user: str, apppw: str) -> None:
    name = f"{user}-nc{idx:02d}"
    hdr = basic(user, apppw)
    nc = "/index.php/apps/gpoddersync"
    conn = aiohttp.TCPConnector(limit=2)
    async with aiohttp.ClientSession(connector=conn, headers=hdr) as s:
        await nap(random.uniform(0, 20))
        subscribed: list[str] = []
        next_feed = 0
        pos = Positions()
        sub_since = 0
        ep_since = 0
        last_pull = 0.0
        last_delta = time.monotonic()

        async def upload_subs(add: list[str], remove: list[str]) -> None:
            for _attempt in range(4):
                st, _body, _ = await call(
                    s,
                    "POST",
                    f"{nc}/subscription_change/create",
                    "nc.subs.up",
                    json={"add": add, "remove": remove},
                )
                if st == 200:
                    for u in add:
                        ledger(
                            api="nextcloud",
                            kind="sub",
                            user=user,
                            dev=name,
                            url=u,
                            state=True,
                            ack=True,
                        )
                    for u in remove:
                        ledger(
                            api="nextcloud",
                            kind="sub",
                            user=user,
                            dev=name,
                            url=u,
                            state=False,
                            ack=True,
                        )
                    return
                await nap(1.0)
            for u in add + remove:
                ledger(
                    api="nextcloud",
                    kind="sub",
                    user=user,
                    dev=name,
                    url=u,
                    state=u in add,
                    ack=False,
                )

        # Kasts-like sign-in check
        await call(s, "GET", f"{nc}/subscriptions?since=0", "nc.subs.pull")
        initial = [feed_url(f"{name}-{next_feed + i}") for i in range(5)]
        next_feed += 5
        await upload_subs(initial, [])
        subscribed.extend(initial)
        for _it in range(MAX_ITERS):
            if not alive():
                break
            now = time.monotonic()
            if now - last_pull >= 30 + random.uniform(-3, 3):
                last_pull = now
                st, body, _ = await call(
                    s, "GET", f"{nc}/subscriptions?since={sub_since}", "nc.subs.pull"
                )
                if st == 200:
                    sub_since = json.loads(body)["timestamp"]
                st, body, _ = await call(
                    s, "GET", f"{nc}/episode_action?since={ep_since}", "nc.ep.pull"
                )
                if st == 200:
                    ep_since = json.loads(body)["timestamp"]
            if now - last_delta >= 60 + random.uniform(-5, 5):
                last_delta = now
                new = feed_url(f"{name}-{next_feed}")
                next_feed += 1
                old = subscribed.pop(0)
                await upload_subs([new], [old])
                subscribed.append(new)
            actions = []
            for _ in range(random.randint(1, 3)):
                feed = random.choice(subscribed)
                fname = feed.rsplit("/", 1)[1][:-4]
                k = random.randrange(12)
                started, position = pos.next()
                actions.append(
                    {
                        "podcast": feed,
                        "episode": episode_url(fname, k),
                        "guid": f"{fname}-{k}",
                        "action": "PLAY",
                        "timestamp": utc_iso(),
                        "started": started,
                        "position": position,
                        "total": 100000,
                    }
                )
            for _attempt in range(4):
                st, body, _ = await call(
                    s, "POST", f"{nc}/episode_action/create", "nc.ep.up", json=actions
                )
                if st == 200:
                    for a in actions:
                        ledger(api="nextcloud", kind="ep", user=user, dev=name, a=a, ack=True)
                    break
                await nap(1.0)
            await nap(args.upload_every * random.uniform(0.7, 1.3))


class OpaAuth:
    def __init__(self, s, user, pw):
        self.s, self.user, self.pw = s, user, pw
        self.access = None
        self.refresh_token = None
        self.relogins = 0

    async def login(self) -> bool:
        for _attempt in range(5):
            st, body, _ = await call(
                self.s,
                "POST",
                "/auth/login",
                "opa.login",
                json={"username": self.user, "password": self.pw},
            )
            if st == 200:
                d = json.loads(body)
                self.access, self.refresh_token = d["access_token"], d["refresh_token"]
                return True
            await nap(2.0)
        return False

    async def refresh(self) -> bool:
        st, body, _ = await call(
            self.s,
            "POST",
            "/auth/refresh",
            "opa.refresh",
            json={"refresh_token": self.refresh_token},
        )
        if st == 200:
            d = json.loads(body)
            self.access = d["access_token"]
            if d.get("refresh_token"):
                self.refresh_token = d["refresh_token"]
            return True
        if st is not None and st in (400, 401):
            event(f"OPA refresh for {self.user} answered {st}: logging in again")
            self.relogins += 1
            return await self.login()
        return False

    def h(self) -> dict:
        return {"Authorization": f"Bearer {self.access}"}


async def opa_client(idx: int, user: str, pw: str) -> None:
    name = f"{user}-opa{idx:02d}"
    client_id = str(uuid.uuid4())
    conn = aiohttp.TCPConnector(limit=2)
    async with aiohttp.ClientSession(connector=conn, headers={"Client-ID": client_id}) as s:
        await nap(random.uniform(0, 20))
        auth = OpaAuth(s, user, pw)
        if not await auth.login():
            event(f"OPA {name} could not log in; giving up")
            return
        pool = [feed_url(f"{name}-{i}") for i in range(12)]
        state = {u: False for u in pool}
        sync_ids: dict[str, str] = {}
        since = ""
        last_pull = 0.0
        last_list = time.monotonic()
        next_refresh = time.monotonic() + random.uniform(120, 300)
        last_occ = ""
        for _it in range(MAX_ITERS):
            if not alive():
                break
            now = time.monotonic()
            if now >= next_refresh:
                next_refresh = now + random.uniform(120, 300)
                await auth.refresh()
            if now - last_pull >= 30 + random.uniform(-3, 3):
                last_pull = now
                path = since or "/api/v1/sync"
                st, body, _ = await call(s, "GET", path, "opa.sync.pull", headers=auth.h())
                if st == 200:
                    since = json.loads(body).get("next_since", since)
                elif st == 401:
                    await auth.refresh()
            if now - last_list >= 120:
                last_list = now
                path = "/api/v1/subscriptions?limit=100&include_unsubscribed=true"
                for _page in range(20):
                    st, body, _ = await call(s, "GET", path, "opa.list", headers=auth.h())
                    if st != 200:
                        break
                    d = json.loads(body)
                    if not d.get("has_next"):
                        break
                    path = d["next_cursor"]
            reqs = []
            for u in random.sample(pool, random.randint(1, 3)):
                occ = utc_iso(ms=True)
                while occ <= last_occ:
                    await asyncio.sleep(0.002)
                    occ = utc_iso(ms=True)
                last_occ = occ
                if state[u] and u in sync_ids and random.random() < 0.25:
                    reqs.append(
                        {
                            "action_id": str(uuid.uuid4()),
                            "type": "subscription",
                            "action": "update",
                            "occurred_at": occ,
                            "data": {"sync_id": sync_ids[u], "guid": f"guid-{uuid.uuid4()}"},
                        }
                    )
                else:
                    act = "unsubscribe" if state[u] else "subscribe"
                    reqs.append(
                        {
                            "action_id": str(uuid.uuid4()),
                            "type": "subscription",
                            "action": act,
                            "occurred_at": occ,
                            "data": {"feed_url": u},
                        }
                    )
            body = {"requests": reqs}
            acked = False
            for _attempt in range(4):
                st, rb, _ = await call(
                    s, "POST", "/api/v1/sync", "opa.sync.up", json=body, headers=auth.h()
                )
                if st == 200:
                    res = json.loads(rb)["results"]
                    byid = {r["action_id"]: r for r in res}
                    for rq in reqs:
                        r = byid.get(rq["action_id"], {})
                        url = rq["data"].get("feed_url") or next(
                            (k for k, v in sync_ids.items() if v == rq["data"].get("sync_id")), None
                        )
                        ledger(
                            api="opa",
                            kind="sub",
                            user=user,
                            dev=name,
                            req=rq,
                            status=r.get("status"),
                            result=r.get("data"),
                            url=url,
                            ack=True,
                        )
                        if r.get("status") == "applied":
                            if rq["action"] == "subscribe":
                                state[url] = True
                            elif rq["action"] == "unsubscribe":
                                state[url] = False
                            sid = (r.get("data") or {}).get("sync_id")
                            if sid and url:
                                sync_ids[url] = sid
                        elif r.get("status") != "applied":
                            event(
                                f"OPA {name} action {rq['action']} status {r.get('status')} "
                                f"{r.get('reason')}"
                            )
                    acked = True
                    break
                if st == 401:
                    await auth.refresh()
                else:
                    await nap(1.0)
            if not acked:
                for rq in reqs:
                    ledger(
                        api="opa",
                        kind="sub",
                        user=user,
                        dev=name,
                        req=rq,
                        ack=False,
                        url=rq["data"].get("feed_url"),
                    )
            await nap(args.upload_every * random.uniform(0.7, 1.3))
        ledger(api="opa", kind="relogins", user=user, dev=name, n=auth.relogins)


HREF_POD = re.compile(r'href="(/ui/podcasts/[0-9a-fA-F-]+)"')
HREF_EP = re.compile(r'href="(/ui/episodes/[^"?#]+)"')
DATA_CSRF = re.compile(r'data-csrf="([^"]+)"')
DATA_PROG = re.compile(r'data-progress="([^"]+)"')
AUDIO = re.compile(r'<a href="([^"]+)" rel="noopener noreferrer">Its file</a>')


async def web_user(idx: int, user: str, pw: str) -> None:
    conn = aiohttp.TCPConnector(limit=2)
    jar = aiohttp.CookieJar(unsafe=True)
    origin = {"Origin": BASE}
    async with aiohttp.ClientSession(connector=conn, cookie_jar=jar) as s:
        await nap(20 + random.uniform(0, 10))  # after the phones made feeds

        async def login() -> bool:
            await call(s, "GET", "/ui/login", "web.login_form")
            st, body, _ = await call(
                s,
                "POST",
                "/ui/login",
                "web.login",
                data={"username": user, "password": pw},
                headers=origin,
            )
            ok = st == 200 and b"Sign in</button>" not in body
            if not ok:
                event(f"web {user} sign-in failed: {st}")
            return ok

        if not await login():
            await nap(5)
            if not await login():
                return
        pods: list[str] = []
        words = ["soak", "episode", "podcast", "soakword3", user]
        for it in range(MAX_ITERS):
            if not alive():
                break
            for path in ("/ui/", "/ui/history", "/ui/subscriptions"):
                st, body, _ = await call(s, "GET", path, "web.page")
                if st == 200 and b'action="/ui/login"' in body and b"Sign in</button>" in body:
                    event(f"web {user} session lost; signing in again")
                    await login()
                if st == 200 and path == "/ui/subscriptions":
                    found = HREF_POD.findall(body.decode("utf-8", "replace"))
                    if found:
                        pods = found
                await nap(args.web_think)
            if pods:
                pod = random.choice(pods)
                st, body, _ = await call(s, "GET", pod, "web.podcast")
                await nap(args.web_think)
                eps = HREF_EP.findall(body.decode("utf-8", "replace")) if st == 200 else []
                eps = [e for e in eps if not e.endswith("/progress")]
                if eps:
                    ep = random.choice(eps)
                    st, body, _ = await call(s, "GET", ep, "web.episode")
                    text = body.decode("utf-8", "replace") if st == 200 else ""
                    csrf = DATA_CSRF.search(text)
                    prog = DATA_PROG.search(text)
                    audio = AUDIO.search(text)
                    if csrf and prog:
                        url = prog.group(1)
                        pos = random.randint(0, 2000)
                        for _beat in range(3):
                            started, position = pos, pos + 30
                            pos = position
                            st, rb, _ = await call(
                                s,
                                "POST",
                                url,
                                "web.progress",
                                data={
                                    "csrf": csrf.group(1),
                                    "started": str(started),
                                    "position": str(position),
                                    "total": "3600",
                                },
                                headers={"Accept": "application/json", **origin},
                            )
                            if st == 200:
                                d = json.loads(rb)
                                if d.get("saved"):
                                    ledger(
                                        api="web",
                                        kind="ep",
                                        user=user,
                                        dev="web",
                                        ref=url,
                                        episode=audio.group(1) if audio else None,
                                        started=started,
                                        position=position,
                                        total=3600,
                                        ack=True,
                                    )
                                    if d.get("episode"):
                                        url = f"/ui/episodes/{d['episode']}/progress"
                                else:
                                    event(f"web progress not saved: {d}")
                            await nap(1.0)
                    await nap(args.web_think)
            q = random.choice(words)
            await call(s, "GET", f"/ui/search?q={q}", "web.search")
            await nap(args.web_think)
            await call(s, "GET", "/ui/stats", "web.stats")
            await nap(args.web_think)
            if it % 5 == 0:
                await call(s, "GET", "/ui/export.opml", "web.opml")
                await call(s, "GET", "/ui/devices", "web.page")
                await nap(args.web_think)


# ---------------------------------------------------------------- server control
SERVER: dict = {}


def write_config() -> None:
    with open(CONFIG, "w") as f:
        f.write(f"""[server]
host = "{HOST}"
port = {args.port}
workers = 2
shutdown_timeout = 10

[database]
path = "{DB}"

[log]
level = "info"
access_log = true

[feeds]
fetch_metadata = true
allow_private = true
""")
    os.chmod(CONFIG, 0o600)


def podsync_cmd(*a: str, env=None, input_text=None, timeout=120) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.pop("PODSYNC_DATABASE_PATH", None)
    if env:
        e.update(env)
    return subprocess.run(
        [PODSYNC, "--config", CONFIG, *a],
        input=input_text,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
    )


def setup_users() -> dict:
    creds = {"users": {}, "apppw": {}}
    if os.path.exists(f"{RUN}/creds.json"):
        return json.load(open(f"{RUN}/creds.json"))
    r = podsync_cmd("db", "migrate")
    event(f"db migrate rc={r.returncode} {r.stdout.strip()[:200]} {r.stderr.strip()[:200]}")
    for i in range(NUSERS):
        u = f"u{i:02d}"
        r = podsync_cmd("user", "add", u, "--password-stdin", input_text=PASSWORD % i + "\n")
        if r.returncode != 0:
            raise SystemExit(f"user add {u}: {r.stderr}")
        creds["users"][u] = PASSWORD % i
    r = podsync_cmd(
        "user", "add", "admin", "--admin", "--password-stdin", input_text="admin-soak-pw-1234\n"
    )
    for j in range(8):
        u = f"u{(j + 3) % NUSERS:02d}"
        r = podsync_cmd("user", "app-passwords", u, "--create", f"NC phone {j}")
        if r.returncode != 0:
            raise SystemExit(f"app-passwords {u}: {r.stderr}")
        creds["apppw"][str(j)] = [u, r.stdout.strip().splitlines()[-1].strip()]
    json.dump(creds, open(f"{RUN}/creds.json", "w"))
    return creds


def start_server(tag: str) -> subprocess.Popen:
    log = open(SERVER_LOG, "a")
    log.write(f"\n===== soak: starting server ({tag}) at {utc_iso()} =====\n")
    log.flush()
    env = dict(os.environ)
    if args.tracemalloc:
        env["PYTHONTRACEMALLOC"] = str(args.tracemalloc)
    if args.heap_every:
        env["PODSYNC_DEBUG_HEAP_DIR"] = HEAP_DIR
    p = subprocess.Popen(
        [PODSYNC, "--config", CONFIG, "serve", "--workers", "2"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    open(f"{RUN}/server.pid", "w").write(str(p.pid))
    event(f"server started ({tag}) pid {p.pid}")
    return p


async def wait_healthy(seconds: float = 60) -> bool:
    async with aiohttp.ClientSession() as s:
        for _ in range(int(seconds * 4)):
            try:
                async with s.get(BASE + "/healthz", timeout=aiohttp.ClientTimeout(total=2)) as r:
                    if r.status == 200:
                        return True
            except (aiohttp.ClientError, TimeoutError):
                pass  # not listening yet
            await asyncio.sleep(0.25)
    return False


def children_of(ppid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            fields = st[st.rindex(")") + 2 :].split()
            if int(fields[1]) == ppid:
                out.append(int(d))
        except (OSError, ValueError):
            pass
    return sorted(out)


def proc_info(pid: int) -> dict:
    info = {"pid": pid}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Rss", "Pss", "Private_Dirty", "Anonymous"):
                    info[k.lower()] = int(v.split()[0])
        info["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    info["threads"] = int(line.split()[1])
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        fields = st[st.rindex(")") + 2 :].split()
        tck = os.sysconf("SC_CLK_TCK")
        info["cpu_s"] = (int(fields[11]) + int(fields[12])) / tck
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            info["cmd"] = f.read().replace(b"\0", b" ").decode()[:120]
    except OSError as e:
        info["error"] = str(e)
    return info


LOGPOS = {"off": 0, "lines": 0, "status": Counter(), "tracebacks": 0, "errors": 0}
ACCESS = re.compile(r'"[A-Z]+ [^"]*" (\d{3}) ')


def scan_log() -> None:
    try:
        with open(SERVER_LOG, "rb") as f:
            f.seek(LOGPOS["off"])
            data = f.read()
            LOGPOS["off"] += len(data)
    except OSError:
        return
    for line in data.decode("utf-8", "replace").splitlines():
        LOGPOS["lines"] += 1
        m = ACCESS.search(line)
        if m:
            LOGPOS["status"][m.group(1)[0] + "xx"] += 1
        if "Traceback" in line:
            LOGPOS["tracebacks"] += 1
        if (
            " ERROR " in line
            or " CRITICAL " in line
            or line.startswith("ERROR")
            or ("error" in line.lower() and "podsync.access" not in line and not m)
        ):
            LOGPOS["errors"] += 1


PREV = {"t": None, "total": 0, "cpu": {}, "served2": 0, "stat": None}
# The core probe: a fixed piece of pure-Python work, timed in this thread's CPU time
# at every sample. If the server's CPU a request rises while the probe's does not,
# the server does more work a request; if both rise together, the cores got slower
# (a shared host), which the load average does not show.
PROBE_BODY = json.dumps([{"id": i, "url": f"https://probe.example/{i}"} for i in range(400)])


def core_probe_ms() -> float:
    start = time.thread_time()
    for _ in range(20):
        json.loads(PROBE_BODY)
        sum(i * i for i in range(5_000))
    return round(1000 * (time.thread_time() - start), 2)


def steal_share() -> float | None:
    """The share of the machine's CPU time stolen by the host since the last sample."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    before, PREV["stat"] = PREV["stat"], fields
    if before is None:
        return None
    delta = [a - b for a, b in zip(fields, before, strict=True)]
    total = sum(delta[:8])  # user .. steal; guest time is counted in user already
    return round(delta[7] / total, 4) if total > 0 and len(delta) > 7 else None


def sample(tag: str = "") -> dict:
    p = SERVER["proc"]
    scan_log()
    procs = [proc_info(p.pid)] + [proc_info(c) for c in children_of(p.pid)]
    cpu_now = {i["pid"]: i.get("cpu_s", 0.0) for i in procs}
    dcpu = 0.0
    for pid, c in cpu_now.items():
        dcpu += c - PREV["cpu"].get(pid, 0.0)
    served = sum(LOGPOS["status"].values())
    dreq = served - PREV["served2"]
    wal = os.path.getsize(DB + "-wal") if os.path.exists(DB + "-wal") else 0
    rec = {
        "t_min": round(now_rel() / 60, 2),
        "utc": utc_iso(),
        "tag": tag,
        "load": open("/proc/loadavg").read().split()[:3],
        "procs": procs,
        "wal_bytes": wal,
        "db_bytes": os.path.getsize(DB),
        "client_requests": STATS.total,
        "client_non2xx": STATS.non2xx,
        "client_5xx": STATS.s5xx,
        "client_exc": STATS.exc,
        "server_status": dict(LOGPOS["status"]),
        "log_tracebacks": LOGPOS["tracebacks"],
        "log_error_lines": LOGPOS["errors"],
        "cpu_s_interval": round(dcpu, 2),
        "server_requests_interval": dreq,
        "cpu_ms_per_req": round(1000 * dcpu / dreq, 3) if dreq else None,
        "feed_fetches": dict(FEED_FETCHES),
        "probe_cpu_ms": core_probe_ms(),
        "steal": steal_share(),
    }
    PREV["cpu"] = cpu_now
    PREV["served2"] = served
    METRICS.write(json.dumps(rec) + "\n")
    rss = " ".join(
        f"{i['pid']}:rss={i.get('rss', 0) // 1024}M/pss={i.get('pss', 0) // 1024}M"
        f"/fd={i.get('fds')}/thr={i.get('threads')}"
        for i in procs
    )
    event(
        f"SAMPLE {tag} {rss} wal={wal // 1024}K req={STATS.total} srv={served} "
        f"non2xx={STATS.non2xx} 5xx={STATS.s5xx} exc={STATS.exc} tb={LOGPOS['tracebacks']} "
        f"cpu/req={rec['cpu_ms_per_req']}ms probe={rec['probe_cpu_ms']}ms "
        f"steal={rec['steal']} load={rec['load']}"
    )
    return rec


async def monitor() -> None:
    killed = False
    nxt = time.monotonic()
    for _i in range(100000):
        if not alive():
            break
        await asyncio.sleep(max(0, nxt - time.monotonic()))
        nxt += args.sample_every
        if not alive():
            break
        sample()
        if not killed and now_rel() >= args.kill_at * 60:
            killed = True
            await kill_worker()


async def kill_worker() -> None:
    p = SERVER["proc"]
    before = children_of(p.pid)
    workers = [c for c in before if "serve" in proc_info(c).get("cmd", "") or True]
    if not workers:
        event("KILL: no worker found")
        return
    victim = workers[0]
    info = proc_info(victim)
    event(f"KILL -9 worker pid {victim} cmd={info.get('cmd')} (children before: {before})")
    t = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    SERVER["killed"] = {"pid": victim, "t_min": round(now_rel() / 60, 2), "children_before": before}
    replaced = None
    for _ in range(240):
        await asyncio.sleep(0.25)
        now_children = children_of(p.pid)
        new = [c for c in now_children if c not in before]
        if new and victim not in now_children:
            # wait for it to serve: the log line "worker N of 2 serving (pid X)"
            scan_log()
            try:
                txt = open(SERVER_LOG, "rb").read()[-200000:].decode("utf-8", "replace")
            except OSError:
                txt = ""
            if f"(pid {new[0]})" in txt and "serving" in txt:
                replaced = (new, time.monotonic() - t)
                break
    SERVER["killed"]["replaced"] = replaced
    SERVER["killed"]["children_after"] = children_of(p.pid)
    event(
        f"KILL result: replaced={replaced} children now {children_of(p.pid)} "
        f"exc since kill={STATS.exc}"
    )


async def admin_backups() -> None:
    nxt = time.monotonic() + args.backup_every * 60
    results = []
    SERVER["backups"] = results
    for n in range(1, 101):
        await asyncio.sleep(max(0, min(nxt, DEADLINE) - time.monotonic()))
        if not alive():
            break
        nxt += args.backup_every * 60
        dest = f"{RUN}/backups/podsync-{n:02d}.db"
        t = time.monotonic()
        r = await asyncio.to_thread(podsync_cmd, "db", "backup", dest, timeout=300)
        tb = time.monotonic() - t
        t = time.monotonic()
        c = await asyncio.to_thread(
            podsync_cmd, "db", "check", env={"PODSYNC_DATABASE_PATH": dest}, timeout=300
        )
        tc = time.monotonic() - t
        res = {
            "n": n,
            "t_min": round(now_rel() / 60, 2),
            "backup_rc": r.returncode,
            "backup_s": round(tb, 2),
            "backup_out": (r.stdout + r.stderr).strip()[-300:],
            "check_rc": c.returncode,
            "check_s": round(tc, 2),
            "check_out": (c.stdout + c.stderr).strip()[-300:],
            "size": os.path.getsize(dest) if os.path.exists(dest) else None,
        }
        results.append(res)
        event(f"BACKUP {json.dumps(res)}")


async def seed_history(creds: dict) -> None:
    """--history plays per account through the gpodder API, 1,000 an upload, a play
    every 20 minutes of the months before (not in the ledger: the load's own writes
    are what it checks)."""
    if not args.history:
        return
    start = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=20 * args.history + 60)
    async with aiohttp.ClientSession() as s:
        for u, pw in creds["users"].items():
            for first in range(0, args.history, 1000):
                batch = []
                for n in range(first, min(first + 1000, args.history)):
                    feed = feed_url(f"{u}-history-{n % 20}")
                    batch.append(
                        {
                            "podcast": feed,
                            "episode": episode_url(f"{u}-history-{n % 20}", n % 300),
                            "device": "history",
                            "action": "play",
                            "timestamp": (start + dt.timedelta(minutes=20 * n)).strftime(
                                "%Y-%m-%dT%H:%M:%S"
                            ),
                            "started": 0,
                            "position": 60 + n % 1000,
                            "total": 100000,
                        }
                    )
                st, _, _ = await call(
                    s,
                    "POST",
                    f"/api/2/episodes/{u}.json",
                    "seed.history",
                    json=batch,
                    headers=basic(u, pw),
                )
                if st != 200:
                    raise SystemExit(f"seeding the history of {u}: {st}")
    event(f"history seeded: {args.history} plays per account")


def clients(full: int) -> int:
    return max(1, round(full * args.scale))


async def heap_reports() -> None:
    """SIGUSR2 to every worker every --heap-every minutes: each writes a heap report."""
    if not args.heap_every:
        return
    nxt = time.monotonic()
    for _ in range(10000):
        await asyncio.sleep(max(0, min(nxt, DEADLINE) - time.monotonic()))
        if not alive():
            break
        nxt += args.heap_every * 60
        workers = children_of(SERVER["proc"].pid)
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR2)
        event(f"HEAP report asked of {workers}")


# ---------------------------------------------------------------- verification
async def pull_all(tag: str, creds: dict) -> dict:
    """Pull everything and compare with the ledger of acknowledged writes."""
    entries = [json.loads(line) for line in open(f"{RUN}/ledger.jsonl")]
    out = {"tag": tag}
    async with aiohttp.ClientSession() as s:
        gp_actions: dict[str, set] = {}
        gp_counts = {}
        for u, pw in creds["users"].items():
            keys = set()
            since = 0
            n = 0
            for _page in range(100):
                st, body, _ = await call(
                    s,
                    "GET",
                    f"/api/2/episodes/{u}.json?since={since}",
                    "verify.gp.ep",
                    headers=basic(u, pw),
                )
                if st != 200:
                    out.setdefault("errors", []).append(f"gp pull {u} {st}")
                    break
                d = json.loads(body)
                for a in d["actions"]:
                    keys.add(
                        (
                            a.get("episode"),
                            a.get("action", "").lower(),
                            a.get("started"),
                            a.get("position"),
                            a.get("timestamp", "")[:19],
                        )
                    )
                    keys.add(
                        (
                            a.get("episode"),
                            a.get("action", "").lower(),
                            a.get("started"),
                            a.get("position"),
                            None,
                        )
                    )
                n += len(d["actions"])
                if not d["actions"] or d["timestamp"] == since:
                    break
                since = d["timestamp"]
            gp_actions[u] = keys
            gp_counts[u] = n
        out["gp_pulled_actions"] = gp_counts
        # Nextcloud pull, per app password
        nc_actions: dict[str, set] = {}
        for _j, (u, apw) in creds["apppw"].items():
            if u in nc_actions:
                continue
            st, body, _ = await call(
                s,
                "GET",
                "/index.php/apps/gpoddersync/episode_action?since=0",
                "verify.nc.ep",
                headers=basic(u, apw),
            )
            keys = set()
            if st == 200:
                for a in json.loads(body)["actions"]:
                    keys.add(
                        (
                            a.get("episode"),
                            a.get("action", "").lower(),
                            a.get("started"),
                            a.get("position"),
                            a.get("timestamp", "")[:19],
                        )
                    )
            else:
                out.setdefault("errors", []).append(f"nc pull {u} {st}")
            nc_actions[u] = keys
        # subscription lists: gpodder simple API and OPA (include_unsubscribed)
        gp_subs: dict[str, set] = {}
        opa_subs: dict[str, dict] = {}
        for u, pw in creds["users"].items():
            st, body, _ = await call(
                s, "GET", f"/subscriptions/{u}.json", "verify.gp.subs", headers=basic(u, pw)
            )
            gp_subs[u] = (
                {x if isinstance(x, str) else x["url"] for x in json.loads(body)}
                if st == 200
                else set()
            )
            st, body, _ = await call(
                s, "POST", "/auth/login", "verify.opa.login", json={"username": u, "password": pw}
            )
            tok = json.loads(body)["access_token"]
            path = "/api/v1/subscriptions?limit=500&include_unsubscribed=true"
            subs = {}
            for _page in range(100):
                st, body, _ = await call(
                    s, "GET", path, "verify.opa.list", headers={"Authorization": f"Bearer {tok}"}
                )
                if st != 200:
                    out.setdefault("errors", []).append(f"opa list {u} {st}")
                    break
                d = json.loads(body)
                for r in d["results"]:
                    subs[r["feed_url"]] = r
                if not d.get("has_next"):
                    break
                path = d["next_cursor"]
            opa_subs[u] = subs
    # compare episode actions
    miss = Counter()
    checked = Counter()
    samples = []
    for e in entries:
        if e.get("kind") != "ep" or not e.get("ack"):
            continue
        u = e["user"]
        if e["api"] in ("gpodder", "nextcloud"):
            a = e["a"]
            key = (
                a["episode"],
                a["action"].lower(),
                a.get("started"),
                a.get("position"),
                a["timestamp"][:19],
            )
            checked[e["api"]] += 1
            if key not in gp_actions[u]:
                miss[e["api"] + " via gpodder pull"] += 1
                if len(samples) < 20:
                    samples.append(e)
            if e["api"] == "nextcloud" and u in nc_actions:
                checked["nextcloud (nc pull)"] += 1
                if key not in nc_actions[u]:
                    miss["nextcloud via nc pull"] += 1
        elif e["api"] == "web":
            checked["web"] += 1
            key = (e["episode"], "play", e["started"], e["position"], None)
            if key not in gp_actions[u]:
                miss["web via gpodder pull"] += 1
                if len(samples) < 20:
                    samples.append(e)
    # subscriptions: final state per (user, url) from the owning device's acked ops
    final: dict[tuple, object] = {}
    for e in entries:
        if e.get("kind") != "sub":
            continue
        k = (e["user"], e["url"])
        if e["api"] in ("gpodder", "nextcloud"):
            final[k] = e["state"] if e["ack"] else "uncertain"
        elif e["api"] == "opa":
            rq = e["req"]
            if not e["ack"]:
                final[k] = "uncertain"
            elif e.get("status") == "applied" and rq["action"] in ("subscribe", "unsubscribe"):
                final[k] = rq["action"] == "subscribe"
    sub_checked = Counter()
    sub_bad = Counter()
    for (u, url), want in final.items():
        if want == "uncertain":
            sub_checked["uncertain"] += 1
            continue
        sub_checked["checked"] += 1
        in_gp = url in gp_subs[u]
        o = opa_subs[u].get(url)
        in_opa = o is not None and "unsubscribed_at" not in o
        if in_gp != want:
            sub_bad["gpodder list disagrees"] += 1
            if len(samples) < 40:
                samples.append({"user": u, "url": url, "want": want, "gp": in_gp})
        if in_opa != want:
            sub_bad["opa list disagrees"] += 1
            if len(samples) < 40:
                samples.append({"user": u, "url": url, "want": want, "opa": o})
    # OPA guid updates: the last applied update per sync_id
    guids = {}
    for e in entries:
        if (
            e.get("api") == "opa"
            and e.get("kind") == "sub"
            and e.get("ack")
            and e.get("status") == "applied"
        ):
            rq = e["req"]
            if rq["action"] == "update":
                guids[(e["user"], rq["data"]["sync_id"])] = rq["data"]["guid"]
    guid_bad = 0
    for (u, sid), g in guids.items():
        o = next((r for r in opa_subs[u].values() if r["sync_id"] == sid), None)
        if o is None or o.get("guid") != g:
            guid_bad += 1
    out.update(
        {
            "ep_checked": dict(checked),
            "ep_missing": dict(miss),
            "sub_checked": dict(sub_checked),
            "sub_bad": dict(sub_bad),
            "guid_checked": len(guids),
            "guid_bad": guid_bad,
            "samples": samples[:40],
        }
    )
    event(f"VERIFY {tag}: {json.dumps({k: v for k, v in out.items() if k != 'samples'})}")
    return out


# ---------------------------------------------------------------- main
async def main() -> None:
    write_config()
    creds = setup_users()
    feed_app = web.Application()
    feed_app.router.add_get("/feed/{name}.xml", feed_handler)
    feed_app.router.add_route("*", "/{tail:.*}", other_handler)
    runner = web.AppRunner(feed_app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, HOST, args.feed_port).start()
    SERVER["proc"] = start_server("soak")
    if not await wait_healthy():
        event("server not healthy; stopping")
        SERVER["proc"].terminate()
        return
    await seed_history(creds)
    global T0, DEADLINE
    T0 = time.monotonic()
    DEADLINE = T0 + args.minutes * 60
    event(f"server healthy; children {children_of(SERVER['proc'].pid)}; load starts now (t=0)")
    sample("start")
    users = list(creds["users"].items())
    tasks = []
    for i in range(clients(15)):
        u, pw = users[i % NUSERS]
        tasks.append(asyncio.create_task(gpodder_phone(i, u, pw)))
    for j in range(clients(8)):
        u, apw = creds["apppw"][str(j)]
        tasks.append(asyncio.create_task(nextcloud_phone(j, u, apw)))
    for k in range(clients(7)):
        u, pw = users[(k + 5) % NUSERS]
        tasks.append(asyncio.create_task(opa_client(k, u, pw)))
    for w in range(clients(3)):
        u, pw = users[w]
        tasks.append(asyncio.create_task(web_user(w, u, pw)))
    mon = asyncio.create_task(monitor())
    adm = asyncio.create_task(admin_backups())
    heap = asyncio.create_task(heap_reports())
    done, pending = await asyncio.wait(tasks, timeout=args.minutes * 60 + 120)
    for t in done:
        if t.exception():
            event(f"CLIENT TASK FAILED: {t.exception()!r}")
    for t in pending:
        t.cancel()
    event(f"clients finished: {len(done)} done, {len(pending)} cancelled")
    await asyncio.wait([mon, adm, heap], timeout=330)
    sample("end-of-load")
    summary = {
        "stats": {k: dict(v) for k, v in STATS.by_kind.items()},
        "total": STATS.total,
        "non2xx": STATS.non2xx,
        "s5xx": STATS.s5xx,
        "exc": STATS.exc,
        "samples": STATS.samples,
        "killed": SERVER.get("killed"),
        "backups": SERVER.get("backups"),
        "feed_fetches": dict(FEED_FETCHES),
    }
    lat = {}
    for k, v in STATS.lat.items():
        v = sorted(v)
        lat[k] = {
            "n": len(v),
            "p50_ms": round(1000 * v[len(v) // 2], 1),
            "p99_ms": round(1000 * v[int(len(v) * 0.99)], 1),
            "max_ms": round(1000 * v[-1], 1),
        }
    summary["latency"] = lat
    summary["verify_live"] = await pull_all("live, after load", creds)
    # SIGTERM, timed
    p = SERVER["proc"]
    kids = children_of(p.pid)
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        rc = "timeout"
    term_s = time.monotonic() - t
    left = [c for c in kids if os.path.exists(f"/proc/{c}")]
    summary["sigterm"] = {"rc": rc, "seconds": round(term_s, 3), "children_left": left}
    event(f"SIGTERM: rc={rc} in {term_s:.3f}s; children still present: {left}")
    scan_log()
    c = podsync_cmd("db", "check", timeout=300)
    summary["db_check_after_stop"] = {
        "rc": c.returncode,
        "out": (c.stdout + c.stderr).strip()[-500:],
    }
    event(f"db check after stop: rc={c.returncode} {(c.stdout + c.stderr).strip()[-300:]}")
    summary["wal_after_stop"] = (
        os.path.getsize(DB + "-wal") if os.path.exists(DB + "-wal") else None
    )
    # restart and verify again: nothing acknowledged lost across a clean restart
    SERVER["proc"] = start_server("verify-restart")
    if await wait_healthy():
        summary["verify_after_restart"] = await pull_all("after restart", creds)
    p = SERVER["proc"]
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "timeout(killed)"
    summary["sigterm2"] = {"rc": rc, "seconds": round(time.monotonic() - t, 3)}
    c = podsync_cmd("db", "check", timeout=300)
    summary["db_check_final"] = {"rc": c.returncode, "out": (c.stdout + c.stderr).strip()[-500:]}
    scan_log()
    summary["log"] = {
        "tracebacks": LOGPOS["tracebacks"],
        "error_lines": LOGPOS["errors"],
        "status": dict(LOGPOS["status"]),
        "lines": LOGPOS["lines"],
    }
    json.dump(summary, open(f"{RUN}/summary.json", "w"), indent=1, default=str)
    event("DONE; summary in summary.json")
    await runner.cleanup()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    finally:
        p = SERVER.get("proc")
        if p is not None and p.poll() is None:
            event(f"harness exiting: stopping server pid {p.pid} with SIGTERM")
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
