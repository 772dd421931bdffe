"""Schema step 32: on SQLite an entity whose guid is derived from its own feed URL is
left out of the guid's index (`guid_by_url`), and every lookup of contract section 6
still finds what it found when every entity was in that index.

The differential test runs the same random batches for two users of one database:
alice's entities are marked as the store marks them, bob's never (as before the
step), and every outcome must be the same, entity by entity."""

from __future__ import annotations

import random
from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.feeds import derive_guid
from podsync.rules import Command, Subscribe, Unsubscribe, Update
from podsync.services.sync import BatchOutcome, SyncService
from podsync.storage import loop_share
from podsync.storage.engine import Engine, create_engine
from podsync.store import subscriptions
from tests.support.migration_support import add_user

HOSTS = ("a.example/feed", "b.example/show/", "c.example/pod?id=1", "moved.example/a")
# Spellings of one feed (one url key, and for most of them one derived guid too).
URLS = [
    f"{scheme}://{host}{slash}"
    for host in HOSTS
    for scheme in ("https", "http")
    for slash in ("", "/")
]
# Guids a client may send: its own, and guids derived from the feeds' URLs (a feed
# that moved keeps the guid derived from its first address).
GUIDS = ["given-1", "given-2", *(derive_guid(f"https://{host}") for host in HOSTS)]


async def marks(db: Engine, user_id: int) -> dict[str, int | None]:
    async with db.read() as conn:
        rows = await conn.fetch_all(
            "SELECT feed_url, guid_by_url FROM subscriptions WHERE user_id = ?", (user_id,)
        )
    return {str(url): mark for url, mark in rows}


def command(rng: random.Random, ids: list[str]) -> Command:
    """A random command; `ids` are the user's sync ids in creation order."""
    kind = rng.choice(["subscribe"] * 4 + ["unsubscribe", "update"])
    url, guid = rng.choice(URLS), rng.choice([None, None, *GUIDS])
    if kind == "subscribe":
        return Subscribe(url, guid=guid)
    if kind == "unsubscribe" or not ids:
        how = rng.choice(["url", "guid", "id"] if ids else ["url", "guid"])
        if how == "url":
            return Unsubscribe(feed_url=url)
        if how == "guid":
            return Unsubscribe(guid=rng.choice(GUIDS))
        return Unsubscribe(sync_id=rng.choice(ids))
    target = rng.choice(ids)
    if rng.random() < 0.5:
        return Update(target, feed_url=url)
    return Update(target, guid=rng.choice(GUIDS))


def shape(outcome: BatchOutcome, ids: list[str]) -> list[Any]:
    """The outcome with each sync id as its entity's place in creation order."""
    for result in outcome.results:
        if result.created and result.entity is not None:
            ids.append(result.entity.sync_id)

    def place(text: str | None) -> str | None:
        for n, sync_id in enumerate(ids):
            text = None if text is None else text.replace(sync_id, f"<{n}>")
        return text

    return [
        (
            r.status,
            place(r.reason),
            r.created,
            None
            if r.entity is None
            else (
                place(r.entity.sync_id),
                r.entity.guid,
                r.entity.feed_url,
                r.entity.url_key,
                r.entity.subscribed_at,
                r.entity.unsubscribed_at,
            ),
        )
        for r in outcome.results
    ]


def with_sync_ids(c: Command, mine: list[str], theirs: list[str]) -> Command:
    """`c` (made with `mine`'s sync ids) with the other user's entity in the same place."""
    if isinstance(c, Update):
        return Update(theirs[mine.index(c.sync_id)], feed_url=c.feed_url, guid=c.guid)
    if isinstance(c, Unsubscribe) and c.sync_id is not None:
        return Unsubscribe(sync_id=theirs[mine.index(c.sync_id)])
    return c


@pytest.mark.parametrize("seed", range(6))
async def test_marked_entities_are_found_as_if_every_guid_were_indexed(
    config: Config, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    async with create_engine(config.database) as db:
        alice, bob = await add_user(db, "alice"), await add_user(db, "bob")
        sync = SyncService(db, config.sync)
        now = timestamps.now_us()
        alice_ids: list[str] = []
        bob_ids: list[str] = []
        marked = 0
        for batch in range(40):
            commands = [command(rng, alice_ids) for _ in range(rng.randint(1, 5))]
            at = now + batch * 1_000_000
            mine = shape(await sync.apply(alice, "phone", commands, now=at), alice_ids)
            theirs_commands = [with_sync_ids(c, alice_ids, bob_ids) for c in commands]
            with monkeypatch.context() as patch:  # bob: every entity in the guid index
                patch.setattr(subscriptions, "_by_url", lambda entity: None)
                theirs = shape(await sync.apply(bob, "phone", theirs_commands, now=at), bob_ids)
            assert mine == theirs, (batch, commands)
            marked += sum(1 for mark in (await marks(db, alice)).values() if mark)
        assert set((await marks(db, bob)).values()) <= {None}
        assert marked > 0  # the batches did leave marked entities to find


async def test_a_feed_that_moved_is_found_by_the_guid_of_its_first_address(
    config: Config,
) -> None:
    first, moved = "https://old.example/feed", "https://new.example/feed"
    async with create_engine(config.database) as db:
        alice = await add_user(db, "alice")
        sync = SyncService(db, config.sync)
        # A gpodder app subscribes: the guid is derived, the entity marked.
        created = await sync.apply(alice, "phone", [Subscribe(first)])
        entity = created.results[0].entity
        assert entity is not None and entity.guid == derive_guid(first)
        assert await marks(db, alice) == {first: 1}
        # An app that reads the feed's podcast:guid sends it with the new address:
        # the same entity, not a second one; the user's marked entities are now in
        # the guid's index.
        again = await sync.apply(alice, "tablet", [Subscribe(moved, guid=derive_guid(first))])
        assert again.results[0].status == "ignored"
        assert again.results[0].entity is not None
        assert again.results[0].entity.sync_id == entity.sync_id
        assert await marks(db, alice) == {first: None}
        # Moved by an update: the entity keeps its guid, and is found by it.
        await sync.apply(alice, "tablet", [Update(entity.sync_id, feed_url=moved)])
        gone = await sync.apply(alice, "phone", [Unsubscribe(guid=derive_guid(first))])
        assert gone.results[0].status == "applied"
        assert await marks(db, alice) == {moved: None}


async def test_an_unsubscribe_by_guid_alone_finds_a_marked_entity(config: Config) -> None:
    url = "https://feeds.example/show.xml"
    async with create_engine(config.database) as db:
        alice = await add_user(db, "alice")
        sync = SyncService(db, config.sync)
        await sync.apply(alice, "phone", [Subscribe(url), Subscribe("https://x.example/1")])
        assert await marks(db, alice) == {url: 1, "https://x.example/1": 1}
        gone = await sync.apply(alice, "web", [Unsubscribe(guid=derive_guid(url))])
        assert gone.results[0].status == "applied"
        assert await marks(db, alice) == {url: None, "https://x.example/1": None}
        # Marked again only by a new entity: a subscribe of the same feed in
        # another spelling is the same entity (its url key), and keeps its place.
        back = await sync.apply(alice, "phone", [Subscribe("http://feeds.example/show.xml/")])
        assert back.results[0].status == "applied" and not back.results[0].created
        assert await marks(db, alice) == {url: None, "https://x.example/1": None}


async def test_a_guid_of_its_own_or_a_new_one_leaves_the_entity_in_the_index(
    config: Config,
) -> None:
    url, other = "https://feeds.example/a", "https://feeds.example/b"
    async with create_engine(config.database) as db:
        alice = await add_user(db, "alice")
        sync = SyncService(db, config.sync)
        done = await sync.apply(
            alice, "web", [Subscribe(url, guid="its-own"), Subscribe(other, guid=None)]
        )
        assert await marks(db, alice) == {url: None, other: 1}
        entity = done.results[1].entity
        assert entity is not None
        await sync.apply(alice, "web", [Update(entity.sync_id, guid="renamed")])
        assert await marks(db, alice) == {url: None, other: None}
        found = await sync.apply(alice, "web", [Unsubscribe(guid="renamed")])
        assert found.results[0].status == "applied"
        assert found.results[0].entity is not None
        assert found.results[0].entity.sync_id == entity.sync_id


async def test_indexing_many_marked_entities_goes_in_pieces_and_shares_the_loop(
    config: Config,
) -> None:
    count = 3 * 256 + 5
    async with create_engine(config.database) as db:
        alice = await add_user(db, "alice")
        sync = SyncService(db, config.sync)
        urls = [f"https://feeds.example/{n}" for n in range(count)]
        await sync.apply(alice, "phone", [Subscribe(u) for u in urls])
        assert set((await marks(db, alice)).values()) == {1}
        passes: list[int] = []
        async with db.write(user=alice) as conn:
            with loop_share.sharing():
                monkey = loop_share.HOLD_S
                loop_share.HOLD_S = 0.0  # every check is due: a pass between pieces
                try:
                    assert await subscriptions.index_guids(conn, alice) == count
                finally:
                    loop_share.HOLD_S = monkey
                passes.append(loop_share.passes())
        assert passes[0] >= 3
        assert set((await marks(db, alice)).values()) == {None}
        # Every one is found by its derived guid alone.
        gone = await sync.apply(alice, "web", [Unsubscribe(guid=derive_guid(u)) for u in urls])
        assert [r.status for r in gone.results] == ["applied"] * count


async def test_a_new_address_or_guid_puts_the_entity_in_the_index(config: Config) -> None:
    hosts = ("first", "moved", "third", "fourth")
    first, moved, third, fourth = (f"https://{h}.example/feed" for h in hosts)
    async with create_engine(config.database) as db:
        alice = await add_user(db, "alice")
        sync = SyncService(db, config.sync)
        done = await sync.apply(alice, "phone", [Subscribe(first)])
        entity = done.results[0].entity
        assert entity is not None
        # Moved by an update naming only the new address (no other guid: nothing is
        # indexed before it): the entity's guid is no longer its URL's.
        await sync.apply(alice, "web", [Update(entity.sync_id, feed_url=moved)])
        assert await marks(db, alice) == {moved: None}
        # An app that still has the first address finds it by that address's guid.
        again = await sync.apply(alice, "phone", [Subscribe(first)])
        assert again.results[0].status == "ignored"
        assert again.results[0].entity is not None
        assert again.results[0].entity.sync_id == entity.sync_id
        # A guid set in a batch that derives it from one of its URLs: not indexed
        # before the batch, but the changed entity is.
        other = (await sync.apply(alice, "phone", [Subscribe(third)])).results[0].entity
        assert other is not None
        await sync.apply(
            alice,
            "web",
            [Subscribe(fourth), Update(other.sync_id, guid=derive_guid(fourth))],
        )
        assert await marks(db, alice) == {moved: None, third: None, fourth: 1}
