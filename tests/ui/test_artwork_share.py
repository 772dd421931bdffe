"""The artwork store is shared fairly and cleaned (contract section 17): the images
one user's feeds name hold at most `feeds.artwork_user_share_mib` (an image is kept
when one of its feed's subscribers has room), so another user's new podcast still
gets its artwork; and the feeds no subscription refers to any more (everyone
unsubscribed, the subscriber deleted) go with their episodes and artwork, by the
leader's pruner, without a manual step. Through a real `podsync serve`, feeds and
images on loopback."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from podsync.config import Config
from podsync.storage.engine import create_engine
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.feed_site import ThreadedFeedHost, rss
from tests.support.gpodder_support import call
from tests.support.replica_http import basic_header
from tests.support.ui_session import cli
from tests.ui.test_subscribe_fetch_limits import sign_in, subscribe

pytestmark = pytest.mark.both_engines
NAMES = "abcd"
HOUR_US = 3_600_000_000


def image(name: str) -> bytes:
    """A distinct 400 KiB PNG (by its first bytes: nothing is decoded)."""
    return b"\x89PNG\r\n\x1a\n" + name.encode() * (400 * 1024 - 8)


@pytest.fixture
def feeds() -> Iterator[ThreadedFeedHost]:
    host = ThreadedFeedHost({})
    for name in NAMES:
        host.answers[f"/{name}.png"] = (200, "image/png", image(name))
        feed = rss(f"Show {name}", episodes=3, artwork=host.url(f"/{name}.png"))
        host.answers[f"/{name}.xml"] = (200, "application/rss+xml", feed)
    yield host
    host.close()


@pytest.fixture
def config(make_config: MakeConfig, seeded_users: tuple[str, ...]) -> Config:
    feeds = {"fetch_metadata": True, "allow_private": True, "artwork_user_share_mib": 1}
    return make_config(feeds=feeds)


def digest(name: str) -> str:
    return hashlib.sha256(image(name)).hexdigest()


def query(config: Config, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    async def run() -> list[tuple[Any, ...]]:
        db = create_engine(config.database)
        await db.open()
        try:
            async with db.write() as conn:
                if sql.lstrip().upper().startswith("SELECT"):
                    return [tuple(row) for row in await conn.fetch_all(sql, args)]
                await conn.execute(sql, args)
                return []
        finally:
            await db.close()

    return asyncio.run(run())


def kept(config: Config) -> set[str]:
    return {str(row[0]) for row in query(config, "SELECT hash FROM artwork")}


def test_one_users_images_stop_at_their_share_and_anothers_podcast_gets_its_artwork(
    config: Config, serve_process: Callable[..., ServeProcess], feeds: ThreadedFeedHost
) -> None:
    """The finding: one user's OPML of 1,100 feeds with distinct images filled the
    store, and another user's new podcast then got "the artwork store is full"."""
    server = serve_process(config)
    alice = sign_in(server.url, "alice")
    for name in "abc":
        assert subscribe(server.url, alice, feeds.url(f"/{name}.xml")).status == 303
    # Two images (800 KiB) fit alice's 1 MiB; the third does not, and says why.
    assert kept(config) == {digest("a"), digest("b")}
    [(error,)] = query(
        config, "SELECT artwork_error FROM feed_info WHERE feed_url = ?", (feeds.url("/c.xml"),)
    )
    assert "feeds.artwork_user_share_mib" in error
    # bob's new podcast gets its artwork: his share is his own.
    bob = sign_in(server.url, "bob")
    assert subscribe(server.url, bob, feeds.url("/d.xml")).status == 303
    assert kept(config) == {digest("a"), digest("b"), digest("d")}


def test_what_nobody_subscribes_to_any_more_is_collected_by_the_pruner(
    config: Config, serve_process: Callable[..., ServeProcess], feeds: ThreadedFeedHost
) -> None:
    server = serve_process(config)
    alice, bob = sign_in(server.url, "alice"), sign_in(server.url, "bob")
    carol = sign_in(server.url, "carol")
    for session, name in ((alice, "a"), (alice, "b"), (bob, "b"), (bob, "d"), (carol, "d")):
        assert subscribe(server.url, session, feeds.url(f"/{name}.xml")).status == 303
    assert kept(config) == {digest("a"), digest("b"), digest("d")}
    # alice leaves "a" (nobody else has it) and "b" (bob still has it); bob is
    # deleted; carol keeps "d".
    body = f'{{"add": [], "remove": ["{feeds.url("/a.xml")}", "{feeds.url("/b.xml")}"]}}'
    answer = call(
        server.url, "POST", "/api/2/subscriptions/alice/phone.json", body.encode(),
        Authorization=basic_header("alice", PASSWORD), **{"Content-Type": "application/json"},
    )  # fmt: skip
    assert answer.status == 200, answer.body
    server.stop()
    cli(config, "user", "delete", "bob", "--yes")
    # Within the hour after, nothing goes (a Subscribe's check stores its feed a moment
    # before the subscription): the pruner, run at start, leaves all of it.
    server = serve_process(config)
    time.sleep(1)
    assert len(query(config, "SELECT url_key FROM feed_info")) == 3
    server.stop()
    # Two hours on, the next pruner run (at start, then hourly) collects it.
    query(config, "UPDATE feed_info SET checked_at = checked_at - ?", (2 * HOUR_US,))
    query(
        config,
        "UPDATE subscriptions SET unsubscribed_at = unsubscribed_at - ? "
        "WHERE unsubscribed_at IS NOT NULL",
        (2 * HOUR_US,),
    )
    serve_process(config)
    deadline = time.monotonic() + 20
    while len(query(config, "SELECT url_key FROM feed_info")) > 1 or len(kept(config)) > 1:
        assert time.monotonic() < deadline, (query(config, "SELECT feed_url FROM feed_info"),)
        time.sleep(0.2)
    assert query(config, "SELECT feed_url FROM feed_info") == [(feeds.url("/d.xml"),)]
    assert kept(config) == {digest("d")}
    assert query(config, "SELECT count(*) FROM feed_episodes") == [(3,)]  # d's alone
