"""The floor podsync is measured against: two bare aiohttp handlers on one port.

- ``GET /bare/page``: a fixed ~250-byte JSON document (no auth, no database).
- ``POST /bare/sync``: parses a sync envelope of 30 actions and inserts one row per
  action into SQLite in one transaction (WAL, ``synchronous = FULL``, aiosqlite,
  one writer connection), then answers with a small JSON document.

The POST keeps aiosqlite (`pip install aiosqlite`; podsync itself dropped it in
issue 12) so that the ceiling is the one the figures before issue 12 were measured
against. Nothing else: no middleware, no auth, no validation beyond what the JSON parser
does. It is what the simplest correct server on the same stack costs, so the
bench can print every podsync figure as a ratio to it.

    python bench/bare_server.py --port 8099 --db /tmp/bare.db
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from typing import Any

import aiosqlite
from aiohttp import web

PAGE = json.dumps(
    {
        "results": [
            {
                "sync_id": "3f3b2a58-0a7e-4c61-9d43-4a2f5ad1c0b1",
                "guid": "b3c5e7d9-1f2a-5b4c-8d6e-0a1b2c3d4e5f",
                "feed_url": "https://example.org/podcasts/the-bench-show/feed.xml",
                "subscribed_at": "2026-11-22T07:00:00.123456Z",
            }
        ],
        "has_next": True,
        "next_cursor": "/api/v1/subscriptions?since=AAAAAAAAAAA&limit=50",
    },
    separators=(",", ":"),
).encode()

DB = web.AppKey("db", aiosqlite.Connection)
WRITE_LOCK = web.AppKey("write_lock", asyncio.Lock)


async def page(request: web.Request) -> web.Response:
    return web.Response(body=PAGE, content_type="application/json")


async def sync(request: web.Request) -> web.Response:
    body: dict[str, Any] = await request.json()
    rows = [(a["action_id"], a["data"]["feed_url"], a["occurred_at"]) for a in body["requests"]]
    conn = request.app[DB]
    async with request.app[WRITE_LOCK]:
        await conn.execute("BEGIN IMMEDIATE")
        try:
            await conn.executemany(
                "INSERT INTO actions (action_id, feed_url, occurred_at) VALUES (?, ?, ?)", rows
            )
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
        await conn.execute("COMMIT")
    return web.json_response({"applied": len(rows)})


def make_app(db_path: str) -> web.Application:
    app = web.Application()

    async def database(app: web.Application) -> Any:
        conn = await aiosqlite.connect(db_path, isolation_level=None)
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = FULL")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS actions ("
            " id INTEGER PRIMARY KEY, action_id TEXT NOT NULL UNIQUE,"
            " feed_url TEXT NOT NULL, occurred_at TEXT NOT NULL)"
        )
        app[DB] = conn
        app[WRITE_LOCK] = asyncio.Lock()
        yield
        await conn.close()

    app.cleanup_ctx.append(database)
    app.router.add_get("/bare/page", page)
    app.router.add_post("/bare/sync", sync)
    return app


async def run_until_signal(app: web.Application, host: str, port: int) -> None:
    """Serve `app` on host:port until SIGINT or SIGTERM (bench/floor_server.py too)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True, help="SQLite file (created)")
    args = parser.parse_args()
    asyncio.run(run_until_signal(make_app(args.db), args.host, args.port))


if __name__ == "__main__":
    main()
