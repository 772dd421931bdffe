"""What one save of the web player's progress costs the database: at most three
transactions (the episode read, one write, the episode read back), counted at the
SQLite engine (its read, snapshot and write blocks) with the statements each sends
(sqlite3's trace callback), on the first save (the device `web` is made) and on the
next ones (the device's sync time noted at most once a minute)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

from podsync.services.web_listening import Progress
from podsync.storage.sqlite import Database
from podsync.store import users
from podsync.web.keys import DB
from podsync.web.lazy_app import _LazyResource
from podsync.web.ui.keys import WEB_LISTENING
from tests.conftest import MakeConfig
from tests.support.feed_site import FeedSite, rss
from tests.ui.test_webui_episodes import CDN, app_for, links
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_podcast_episodes import act, site, subscribe, upload

__all__ = ["site"]

# Statements that only open, close or mark a transaction.
_FRAMING = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


class Cost:
    def __init__(self) -> None:
        self.transactions = 0
        self.statements: list[str] = []

    @property
    def queries(self) -> int:
        return sum(1 for s in self.statements if not s.lstrip().upper().startswith(_FRAMING))


async def ui_part(main: web.Application) -> web.Application:
    """The web UI's application (built by the first page a test opened)."""
    for resource in main.router.resources():
        if isinstance(resource, _LazyResource) and resource.canonical == "/ui":
            return await resource._part.app()
    raise AssertionError("no web UI in the route table")


@contextmanager
def counted(db: Database) -> Iterator[Cost]:
    """Count the engine's transactions and the statements SQLite runs meanwhile."""
    cost = Cost()
    raws: list[sqlite3.Connection] = [db._writer, *db._all_readers]  # type: ignore[list-item]
    originals: dict[str, Callable[..., Any]] = {}
    for name in ("read", "snapshot", "write"):
        original = getattr(db, name)
        originals[name] = original

        def wrapper(*args: Any, _original: Callable[..., Any] = original, **kw: Any) -> Any:
            cost.transactions += 1
            return _original(*args, **kw)

        setattr(db, name, wrapper)
    for raw in raws:
        raw.set_trace_callback(cost.statements.append)
    try:
        yield cost
    finally:
        for name in originals:
            delattr(db, name)
        for raw in [db._writer, *db._all_readers]:
            if raw is not None:
                raw.set_trace_callback(None)


async def test_a_player_save_costs_at_most_three_transactions(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    site.feed = rss(episodes=2)
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    show = site.url("/show.xml")
    await subscribe(ui, csrf, show)
    await upload(ui, [act(show, f"{CDN}/2.mp3", "download", "2026-11-10T08:00:00")])
    href = (await links(ui, "/ui/history"))["Episode 2: a conversation about things"]
    ref = href.rsplit("/", 1)[1]
    db = ui.app[DB]
    assert isinstance(db, Database)
    async with db.read() as conn:
        user = await users.get_by_name(conn, "alice")
    assert user is not None
    listening = (await ui_part(ui.app))[WEB_LISTENING]
    costs = []
    for position in (30, 60, 90):
        with counted(db) as cost:
            episode = await listening.progress(user, ref, Progress(0, position, 600))
        assert episode.state is not None and episode.state.play is not None
        assert episode.state.play.position == position
        costs.append(cost)
    report = [(c.transactions, c.queries, len(c.statements)) for c in costs]
    print("player save (transactions, queries, statements):", report)
    first, *later = costs
    assert first.transactions <= 3, report
    assert all(c.transactions <= 3 for c in later), report
