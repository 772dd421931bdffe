"""What the feed fetcher learned about feeds: title, website, artwork, the titles of
their episodes, and each feed's fetch state (tables `feed_info`, `feed_episodes`).

One row per distinct feed (its url key), shared by every user subscribed to it. The
fetcher writes here only; the sync tables are never touched, so nothing learned from
a feed reaches an app's sync state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from podsync.store import Connection

# Keep IN lists modest on both engines.
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class FeedInfo:
    """One feed as the fetcher knows it. Times are microseconds since the epoch."""

    url_key: str  # podsync.feeds.url_key of the feed URL: every spelling of one feed
    feed_url: str  # the URL fetched (the first subscriber's spelling)
    title: str | None
    link: str | None  # the feed's website
    artwork_url: str | None
    fetched_at: int | None  # the last fetch that succeeded (200 or 304)
    checked_at: int | None  # the last fetch tried, whatever its outcome
    last_error: str | None  # why the last fetch failed; None once one succeeds
    failures: int  # fetches failed in a row (the backoff's exponent)
    next_try_at: int  # when the fetcher will try again


@dataclass(frozen=True, slots=True)
class EpisodeTitle:
    url_key: str
    episode_url: str  # the enclosure URL ("" when the item has none)
    guid: str | None
    title: str


_INFO = (
    "url_key, feed_url, title, link, artwork_url, fetched_at, checked_at, last_error, "
    "failures, next_try_at"
)


def _info(row: Any) -> FeedInfo:
    return FeedInfo(*row)


def _chunks(values: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


async def infos(conn: Connection, url_keys: Iterable[str]) -> dict[str, FeedInfo]:
    """The known feeds among `url_keys`, by url key (a feed never fetched is absent)."""
    found: dict[str, FeedInfo] = {}
    for chunk in _chunks(sorted(set(url_keys))):
        rows = await conn.fetch_all(
            f"SELECT {_INFO} FROM feed_info WHERE url_key IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        for row in rows:
            info = _info(row)
            found[info.url_key] = info
    return found


async def failing(conn: Connection, limit: int) -> list[FeedInfo]:
    """Feeds whose last fetch failed, the longest-failing first."""
    rows = await conn.fetch_all(
        f"SELECT {_INFO} FROM feed_info WHERE last_error IS NOT NULL "
        "ORDER BY failures DESC, url_key LIMIT ?",
        (limit,),
    )
    return [_info(r) for r in rows]


async def counts(conn: Connection) -> tuple[int, int, int]:
    """(feeds known, feeds fetched at least once, feeds whose last fetch failed)."""
    row = await conn.fetch_one(
        "SELECT count(*), count(fetched_at), count(last_error) FROM feed_info"
    )
    return (0, 0, 0) if row is None else (int(row[0]), int(row[1]), int(row[2]))


async def episode_titles(
    conn: Connection, url_keys: Iterable[str], episode_urls: Iterable[str], guids: Iterable[str]
) -> list[EpisodeTitle]:
    """Episode titles of the feeds `url_keys` whose enclosure URL is among
    `episode_urls` or whose guid is among `guids` (the caller pairs them up)."""
    keys = set(url_keys)
    if not keys:
        return []
    found: list[EpisodeTitle] = []
    for column, values in (("episode_url", episode_urls), ("guid", guids)):
        for chunk in _chunks(sorted(set(values))):
            rows = await conn.fetch_all(
                "SELECT url_key, episode_url, guid, title FROM feed_episodes "
                f"WHERE {column} IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            found += [EpisodeTitle(*r) for r in rows if r[0] in keys]
    return found
