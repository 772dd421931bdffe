"""New episodes: the items of a person's podcasts published since they subscribed,
that they have not played and not dismissed (table `inbox_dismissals`).

What it reads is the person's own: their subscriptions (the index on the user),
each feed's items since the subscription (the index on url key and date), and
their episodes of those podcasts that have a play. Nothing of other people's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.episode_keys import ACTION_CODES, full_url
from podsync.store import Connection
from podsync.store.subscriptions import with_feed_items
from podsync.store.value_lists import each_key, in_list

_PLAY = ACTION_CODES["play"]


@dataclass(frozen=True, slots=True)
class Candidate:
    subscription_id: int
    sync_id: str
    podcast_key: str
    feed_url: str
    podcast_title: str | None
    episode_url: str
    guid: str
    title: str
    published_at: int
    duration: int | None


def item_key(guid: str | None, episode_url: str) -> str:
    """As the queue's: "g" and the guid, else "u" and the enclosure URL."""
    return f"g{guid}" if guid else f"u{episode_url}"


async def candidates(
    conn: Connection, user_id: int, limit: int, podcast_key: str | None = None
) -> list[Candidate]:
    """Up to `limit` items of the person's subscribed podcasts published since they
    subscribed and not dismissed, newest first."""
    source = with_feed_items(
        conn.dialect,
        "fe.url_key, fe.episode_url, fe.guid, fe.title, fe.published_at, fe.duration, fe.feed_rank",
        "fe.published_at >= s.subscribed_at",
    )
    only = " AND s.url_key = ?" if podcast_key is not None else ""
    params: list[Any] = [user_id]
    if podcast_key is not None:
        params.append(podcast_key)
    rows = await conn.fetch_all(
        "SELECT s.id, s.sync_id, s.url_key, s.feed_url, coalesce(s.title, fi.title), "
        "fe.episode_url, fe.guid, fe.title, fe.published_at, fe.duration "
        f"FROM {source} LEFT JOIN feed_info fi ON fi.url_key = s.url_key "
        f"WHERE s.user_id = ? AND s.unsubscribed_at IS NULL{only} "
        "AND NOT EXISTS (SELECT 1 FROM inbox_dismissals d WHERE d.user_id = s.user_id "
        "AND d.podcast_key = s.url_key AND d.item_key = CASE WHEN fe.guid <> '' "
        "THEN 'g' || fe.guid ELSE 'u' || fe.episode_url END) "
        "ORDER BY fe.published_at DESC, fe.feed_rank DESC, fe.url_key, fe.episode_url "
        "LIMIT ?",
        (*params, limit),
    )
    return [
        Candidate(int(i), str(a), str(k), str(u), t, str(eu), str(g or ""), str(et), int(p), d)
        for i, a, k, u, t, eu, g, et, p, d in rows
    ]


async def played_items(
    conn: Connection, user_id: int, podcast_keys: list[str]
) -> set[tuple[str, str]]:
    """The person's episodes of these podcasts that have a play: (url key, "g" and
    guid) and (url key, "u" and URL) of each."""
    found: set[tuple[str, str]] = set()
    # By the episode's own actions: left to itself SQLite probes each episode through
    # the primary key's user prefix, a pass over the person's whole history per episode
    # (185 ms a page at 20 podcasts and 2,000 actions; seconds with a long history).
    # PostgreSQL made an EXISTS one join with all of the person's plays (every episode
    # of the instance read, analysed or not): a probe with LIMIT 1 is one per episode,
    # the person checked as an expression no index serves (`later_of_same`).
    pinned = " INDEXED BY episode_actions_episode" if conn.dialect == "sqlite" else ""
    for start in range(0, len(podcast_keys), 500):
        marks, bound = in_list(podcast_keys[start : start + 500], 500, dialect=conn.dialect)
        rows = await conn.fetch_all(
            "SELECT f.url_key, e.url, e.prefixed, f.prefix, e.guid FROM episode_feeds f "
            "JOIN episodes e ON e.feed_id = f.id "
            f"WHERE f.user_id = ? AND f.url_key IN ({marks}) "
            f"AND (SELECT 1 FROM episode_actions a{pinned} WHERE a.episode_id = e.id "
            "AND a.action = ? AND a.user_id + 0 = ? LIMIT 1) IS NOT NULL",
            (user_id, *bound, _PLAY, user_id),
        )
        for key, url, prefixed, prefix, guid in rows:
            found.add((str(key), "u" + full_url(str(url), prefixed, str(prefix))))
            if guid:
                found.add((str(key), f"g{guid}"))
    return found


async def dismiss(conn: Connection, user_id: int, keys: list[tuple[str, str]], now: int) -> None:
    """Keep these items out of the person's New episodes. Call in a write."""
    await conn.execute_many(
        "INSERT INTO inbox_dismissals (user_id, podcast_key, item_key, dismissed_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (user_id, podcast_key, item_key) DO NOTHING",
        [(user_id, k, i, now) for k, i in keys],
    )


async def items_up_to(
    conn: Connection, podcast_key: str, published_at: int, limit: int
) -> list[tuple[str, str]]:
    """(enclosure URL, guid) of a feed's items published at or before a time, newest
    first (the index on url key and date)."""
    rows = await conn.fetch_all(
        "SELECT episode_url, guid FROM feed_episodes WHERE url_key = ? AND published_at <= ? "
        "ORDER BY published_at DESC, feed_rank DESC LIMIT ?",
        (podcast_key, published_at, limit),
    )
    return [(str(u), str(g or "")) for u, g in rows]


async def feed_summaries(
    conn: Connection, url_keys: list[str]
) -> dict[str, tuple[int | None, int]]:
    """Each feed's newest item's date and its number of items (the index on url key
    and date). PostgreSQL counts each feed's on its own (`each_key`): on a new
    instance's statistics it read the items of every feed on the server for the
    page's few."""
    found: dict[str, tuple[int | None, int]] = {}
    if conn.dialect == "postgresql" and url_keys:
        rows = await conn.fetch_all(
            each_key(
                [("url_key", "text")],
                "SELECT k.url_key, max(published_at), count(*) FROM feed_episodes "
                "WHERE url_key = k.url_key HAVING count(*) > 0",
            ),
            (list(url_keys),),
        )
        return {str(k): (None if n is None else int(n), int(c)) for k, n, c in rows}
    for start in range(0, len(url_keys), 500):
        marks, bound = in_list(url_keys[start : start + 500], 500, dialect=conn.dialect)
        rows = await conn.fetch_all(
            "SELECT url_key, max(published_at), count(*) FROM feed_episodes "
            f"WHERE url_key IN ({marks}) GROUP BY url_key",
            bound,
        )
        for key, newest, items in rows:
            found[str(key)] = (None if newest is None else int(newest), int(items))
    return found


async def listed_among(conn: Connection, url_key: str, keys: list[str]) -> int:
    """How many of a feed's items are among `keys` ("g" and a guid, "u" and a URL)."""
    guids = [k[1:] for k in keys if k.startswith("g")]
    urls = [k[1:] for k in keys if k.startswith("u")]
    seen: set[tuple[str, str]] = set()
    for column, values in (("guid", guids), ("episode_url", urls)):
        for start in range(0, len(values), 500):
            marks, bound = in_list(values[start : start + 500], 500, dialect=conn.dialect)
            rows = await conn.fetch_all(
                "SELECT episode_url, guid FROM feed_episodes WHERE url_key = ? "
                f"AND {column} IN ({marks})",
                (url_key, *bound),
            )
            seen.update((str(u), str(g or "")) for u, g in rows)
    # An item by its guid when it has one, else by its file.
    return len({g or u for u, g in seen})


async def count_stamp(conn: Connection, user_id: int) -> tuple[int, int, int, int]:
    """Numbers that change whenever the person's count of New episodes may: their
    subscriptions' last change, their last episode action (a play, or a listening
    session's save, which replaces its play by a later one), their dismissals (never
    taken back), and the successful fetches of the feeds they subscribe to (the
    fetcher stores a feed's items, then records the fetch): the sum of those
    fetches' seconds, not their latest, since fetches run side by side and one that
    started earlier may record later; a feed is fetched again a minute apart at the
    soonest, so its second always moves. Index seeks on the person's own rows, and
    one per subscribed feed."""
    row = await conn.fetch_one(
        "SELECT (SELECT coalesce(max(change_seq), 0) FROM subscriptions WHERE user_id = ?), "
        "(SELECT coalesce(max(seq), 0) FROM episode_actions WHERE user_id = ?), "
        "(SELECT count(*) FROM inbox_dismissals WHERE user_id = ?), "
        "(SELECT coalesce(sum(fi.fetched_at / 1000000), 0) FROM subscriptions s "
        "JOIN feed_info fi ON fi.url_key = s.url_key "
        "WHERE s.user_id = ? AND s.unsubscribed_at IS NULL)",
        (user_id, user_id, user_id, user_id),
    )
    assert row is not None
    subscriptions, actions, dismissals, fetched = row
    return int(subscriptions), int(actions), int(dismissals), int(fetched)
