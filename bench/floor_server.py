"""The floor under podsync's reads: podsync's own store calls on a bare aiohttp handler.

- ``GET /floor/list``: what a list page asks the database, and nothing else: the
  user's row (the bearer check's lookup) and a page of 50 views with the flag for
  the other side (`store.subscriptions.page_and_edge`), joined into a body.
- ``GET /floor/poll``: a change-feed poll at the head: the user's row and
  `store.subscriptions.changes_and_counter` after the database's counter.

No middleware, no token, no cursor signing, no ETag, no request id: what any
server on this stack pays to answer from podsync's database with podsync's SQL.
`bench/load.py --only floor` prints both against the bare GET, so the distance
between these rows and the list and feed rows is what podsync's own code costs.

    python bench/floor_server.py --port 8098 --db podsync.db --user bench-10k
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
from pathlib import Path

from aiohttp import web
from bare_server import run_until_signal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from podsync.storage.sqlite_connection import Connection
from podsync.store import subscriptions, users

PAGE = 50
JSON = "application/json"


def make_app(db_path: str, user_name: str) -> web.Application:
    raw = sqlite3.connect(
        Path(db_path).absolute().as_uri() + "?mode=ro", uri=True, isolation_level=None
    )
    conn = Connection(raw)
    user_id, head = raw.execute(
        "SELECT id, (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'change_seq') "
        "FROM users WHERE name = ?",
        (user_name,),
    ).fetchone()

    async def list_page(request: web.Request) -> web.Response:
        await users.get_by_id(conn, user_id)
        rows, _ = await subscriptions.page_and_edge(conn, user_id, 0, True, False, PAGE + 1)
        body = b'{"results":[' + b",".join(view for _, view in rows[:PAGE]) + b"]}"
        return web.Response(body=body, content_type=JSON)

    async def poll(request: web.Request) -> web.Response:
        await users.get_by_id(conn, user_id)
        rows, _ = await subscriptions.changes_and_counter(conn, user_id, head, None, PAGE + 1)
        body = b'{"results":[' + b",".join(view for _, _, view in rows) + b"]}"
        return web.Response(body=body, content_type=JSON)

    async def close(app: web.Application) -> None:
        raw.close()

    app = web.Application()
    app.router.add_get("/floor/list", list_page)
    app.router.add_get("/floor/poll", poll)
    app.on_cleanup.append(close)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True, help="a podsync SQLite database (read only)")
    parser.add_argument("--user", required=True, help="the user whose list is read")
    args = parser.parse_args()
    asyncio.run(run_until_signal(make_app(args.db, args.user), args.host, args.port))


if __name__ == "__main__":
    main()
