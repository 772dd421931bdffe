"""What the feed fetcher learned about feeds: title, website, artwork, the titles of
their episodes, and each feed's fetch state (tables `feed_info`, `feed_episodes`).

One row per distinct feed (its url key), shared by every user subscribed to it. The
fetcher writes here only; the sync tables are never touched, so nothing learned from
a feed reaches an app's sync state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from podsync.store import Connection
from podsync.store.value_lists import each_key, in_list
from podsync.words import note_words, title_words

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
    artwork_hash: str | None = None  # the image podsync keeps of it (store/artwork.py)
    artwork_error: str | None = None  # why the last try at the image failed


@dataclass(frozen=True, slots=True)
class EpisodeTitle:
    url_key: str
    episode_url: str  # the enclosure URL ("" when the item has none)
    guid: str | None
    title: str


_INFO = (
    "url_key, feed_url, title, link, artwork_url, fetched_at, checked_at, last_error, "
    "failures, next_try_at, artwork_hash, artwork_error"
)


def _info(row: Any) -> FeedInfo:
    return FeedInfo(*row)


def _lists(values: Sequence[str], dialect: str) -> Iterable[tuple[str, list[object]]]:
    """`in_list` of each chunk of `values`."""
    for start in range(0, len(values), _CHUNK):
        yield in_list(values[start : start + _CHUNK], _CHUNK, dialect=dialect)


async def infos(conn: Connection, url_keys: Iterable[str]) -> dict[str, FeedInfo]:
    """The known feeds among `url_keys`, by url key (a feed never fetched is absent)."""
    found: dict[str, FeedInfo] = {}
    for marks, bound in _lists(sorted(set(url_keys)), conn.dialect):
        rows = await conn.fetch_all(
            f"SELECT {_INFO} FROM feed_info WHERE url_key IN ({marks})", bound
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
    conn: Connection, by_url: Iterable[tuple[str, str]], by_guid: Iterable[tuple[str, str]]
) -> list[EpisodeTitle]:
    """Episode titles of the items (url key, enclosure URL) `by_url` and (url key,
    guid) `by_guid` name; on SQLite also of other pairs of the same keys and values
    (the caller looks its own pairs up in the answer).

    PostgreSQL looks each pair up on its own (`each_key`): `feed_episodes` holds
    every user's feeds, and on a new instance's statistics it read the whole table
    for a page of 50 titles."""
    found: list[EpisodeTitle] = []
    for column, pairs in (("episode_url", by_url), ("guid", by_guid)):
        wanted = sorted({(k, v) for k, v in pairs if v})
        if not wanted:
            continue
        if conn.dialect == "postgresql":
            rows = await conn.fetch_all(
                each_key(
                    [("a", "text"), ("b", "text")],
                    "SELECT url_key, episode_url, guid, title FROM feed_episodes "
                    f"WHERE url_key = k.a AND {column} = k.b",
                ),
                [[k for k, _ in wanted], [v for _, v in wanted]],
            )
            found += [EpisodeTitle(k, u, g or None, t) for k, u, g, t in rows]
            continue
        keys = sorted({k for k, _ in wanted})
        values = sorted({v for _, v in wanted})
        for key_marks, key_bound in _lists(keys, conn.dialect):
            for marks, bound in _lists(values, conn.dialect):
                rows = await conn.fetch_all(
                    "SELECT url_key, episode_url, guid, title FROM feed_episodes "
                    f"WHERE url_key IN ({key_marks}) AND {column} IN ({marks})",
                    [*key_bound, *bound],
                )
                found += [EpisodeTitle(k, u, g or None, t) for k, u, g, t in rows]
    return found


# --- The fetcher's side: discovering feeds, claiming them, recording outcomes.


@dataclass(frozen=True, slots=True)
class DueFeed:
    """A feed a process has claimed for one fetch, with what is kept of its artwork
    (services/feeds/artwork.py decides from it whether to fetch the image)."""

    url_key: str
    feed_url: str
    etag: str | None
    last_modified: str | None
    failures: int
    artwork_hash: str | None = None
    artwork_source: str | None = None
    artwork_etag: str | None = None
    artwork_last_modified: str | None = None
    artwork_error: str | None = None
    artwork_checked_at: int | None = None


_DUE = (
    "url_key, feed_url, etag, last_modified, failures, artwork_hash, artwork_source, "
    "artwork_etag, artwork_last_modified, artwork_error, artwork_checked_at"
)


def _due(row: Any) -> DueFeed:
    checked = row[10]
    return DueFeed(
        url_key=str(row[0]),
        feed_url=str(row[1]),
        etag=row[2],
        last_modified=row[3],
        failures=int(row[4]),
        artwork_hash=row[5],
        artwork_source=row[6],
        artwork_etag=row[7],
        artwork_last_modified=row[8],
        artwork_error=row[9],
        artwork_checked_at=None if checked is None else int(checked),
    )


class FeedItem(NamedTuple):
    """One episode row of a feed: "" for an item without an enclosure URL or a guid."""

    episode_url: str
    guid: str
    title: str
    published_at: int | None = None  # microseconds since the epoch, None when unknown
    duration: int | None = None  # seconds, as the feed says (itunes:duration)
    link: str | None = None  # the item's web page
    media_type: str | None = None  # the enclosure's declared type
    notes: str | None = None  # show notes, sanitized HTML (services/feeds/notes.py)
    chapters: str | None = None  # chapters, inline or their address (services/feeds/chapters.py)


@dataclass(frozen=True, slots=True)
class LearnedFeed:
    """What one successful fetch found (already cleaned and bounded)."""

    title: str | None
    link: str | None
    artwork_url: str | None
    episodes: Sequence[FeedItem]  # in the feed's order, top first
    description: str | None = None  # the feed's own, plain text (MAX_DESCRIPTION)


async def discover(conn: Connection, now: int, limit: int) -> int:
    """Add the feeds of subscriptions changed since the last call (any process's) to
    `feed_info`, due at once; return how many subscriptions were looked at (up to
    about `limit`). Walks each user's changes from where the last call stopped (the
    partial index `users_undiscovered` names the users with changes unread), so each
    call costs what changed, not what exists. Call in a write."""
    users = await conn.fetch_all(
        "SELECT id, discovered_seq, change_seq FROM users WHERE change_seq > discovered_seq "
        "ORDER BY id LIMIT ?",
        (limit,),
    )
    seen = 0
    first_spelling: dict[str, str] = {}
    for user_id, discovered, counter in users:
        budget = limit - seen
        if budget <= 0:
            break
        rows = await conn.fetch_all(
            "SELECT change_seq, url_key, feed_url, unsubscribed_at FROM subscriptions "
            "WHERE user_id = ? AND change_seq > ? AND change_seq <= ? ORDER BY change_seq LIMIT ?",
            (user_id, discovered, counter, budget),
        )
        for _, key, url, unsubscribed_at in rows:
            if unsubscribed_at is None:  # a feed subscribed again comes by again
                first_spelling.setdefault(str(key), str(url))
        seen += max(len(rows), 1)
        # Up to the counter read with the rows, or to the last row of a read cut short.
        reached = int(rows[-1][0]) if len(rows) == budget else int(counter)
        await conn.execute(
            "UPDATE users SET discovered_seq = ? WHERE id = ? AND discovered_seq < ?",
            (reached, user_id, reached),
        )
    if first_spelling:
        await conn.execute_many(
            "INSERT INTO feed_info (url_key, feed_url, next_try_at) VALUES (?, ?, ?) "
            "ON CONFLICT (url_key) DO NOTHING",
            [(key, url, now) for key, url in first_spelling.items()],
        )
    return seen


async def claim_due(
    conn: Connection, now: int, lease_until: int, limit: int, claimer: str
) -> list[DueFeed]:
    """Claim up to `limit` feeds due at `now` that someone still subscribes to: each
    claimed feed's next try moves to `lease_until`, so no other process (or pass)
    fetches it meanwhile, and `claimer` names who claimed it (services/feeds/claims.py).
    The claim is a conditional UPDATE per feed: when two
    processes race for one, the second updates no row and leaves it. Ordered by the
    index on `next_try_at` alone, so that the scan stops at `limit` feeds: ties (the
    feeds one discovery write added) come in the index's order, and a tie-break on
    url_key would read and sort all of them (a thousand) for every claim."""
    candidates = await conn.fetch_all(
        f"SELECT {_DUE}, next_try_at FROM feed_info f "
        "WHERE next_try_at <= ? AND EXISTS (SELECT 1 FROM subscriptions s "
        "WHERE s.url_key = f.url_key AND s.unsubscribed_at IS NULL) "
        "ORDER BY next_try_at LIMIT ?",
        (now, limit),
    )
    claimed = []
    for row in candidates:
        won = await conn.execute(
            "UPDATE feed_info SET next_try_at = ?, claimed_by = ? "
            "WHERE url_key = ? AND next_try_at = ?",
            (lease_until, claimer, row[0], row[11]),
        )
        if won:
            claimed.append(_due(row))
    return claimed


async def add_feed(
    conn: Connection, url_key: str, feed_url: str, now: int, *, checked: bool = False
) -> None:
    """Know of a feed (due at once) if it is not known yet; `checked`: as fetched `now`
    (a Subscribe's check, stored a moment before its subscription, which the pruner's
    collection of feeds nobody subscribes to then leaves). Call in a write."""
    await conn.execute(
        "INSERT INTO feed_info (url_key, feed_url, next_try_at, checked_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (url_key) DO "
        + ("UPDATE SET checked_at = excluded.checked_at" if checked else "NOTHING"),
        (url_key, feed_url, now, now if checked else None),
    )


async def claim_now(
    conn: Connection, url_key: str, now: int, tried_before: int, lease_until: int, claimer: str
) -> DueFeed | None:
    """Claim one feed for a fetch now, unless it was tried since `tried_before` or a
    claim on it still runs (its next try lies past `now` by more than a refresh, which
    a lease does not: a lease is minutes). Call in a write."""
    row = await conn.fetch_one(
        f"SELECT {_DUE}, next_try_at, checked_at FROM feed_info WHERE url_key = ?",
        (url_key,),
    )
    if row is None or (row[12] is not None and int(row[12]) > tried_before):
        return None
    won = await conn.execute(
        "UPDATE feed_info SET next_try_at = ?, checked_at = ?, claimed_by = ? "
        "WHERE url_key = ? AND next_try_at = ?",
        (lease_until, now, claimer, url_key, row[11]),
    )
    return _due(row) if won else None


async def due_state(conn: Connection, url_key: str) -> DueFeed | None:
    """The feed as a claim would give it, without claiming it."""
    row = await conn.fetch_one(f"SELECT {_DUE} FROM feed_info WHERE url_key = ?", (url_key,))
    return None if row is None else _due(row)


_ITEM = "episode_url, guid, title, published_at, duration, link, media_type, notes, chapters"


def optional_int(value: Any) -> int | None:
    """An integer column that may be NULL, as a Python int or None."""
    return None if value is None else int(value)


async def stored_episodes(conn: Connection, url_key: str) -> list[tuple[Any, ...]]:
    """The feed's stored rows: a FeedItem's fields, then feed_rank."""
    rows = await conn.fetch_all(
        f"SELECT {_ITEM}, feed_rank FROM feed_episodes WHERE url_key = ?", (url_key,)
    )
    return [
        (str(u), str(g), str(t), optional_int(p), optional_int(d), link, kind, notes,
         chapters, optional_int(r))
        for u, g, t, p, d, link, kind, notes, chapters, r in rows
    ]  # fmt: skip


async def change_episodes(
    conn: Connection,
    url_key: str,
    removed: Sequence[tuple[str, str]],
    added: Sequence[Sequence[Any]],
) -> None:
    """Delete the rows of the (episode_url, guid) pairs `removed`; write the rows
    `added` (a FeedItem's fields, then feed_rank), each in place of its pair's
    stored rows, with the words search finds the title and the notes by (`podsync.words`). Call
    in a write; the fetcher passes a few hundred at a time, so that no write holds
    the lock long."""
    gone = [*removed, *((row[0], row[1]) for row in added)]
    if gone:
        await conn.execute_many(
            "DELETE FROM feed_episodes WHERE url_key = ? AND episode_url = ? AND guid = ?",
            [(url_key, *pair) for pair in gone],
        )
    if added:
        await conn.execute_many(
            f"INSERT INTO feed_episodes (url_key, {_ITEM}, feed_rank, words, note_words) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(url_key, *row, title_words(str(row[2])), note_words(row[7])) for row in added],
        )


async def record_fetched(
    conn: Connection,
    url_key: str,
    learned: LearnedFeed | None,
    etag: str | None,
    last_modified: str | None,
    now: int,
    next_try_at: int,
) -> None:
    """A fetch succeeded: with `learned` (200) the feed's title, website and artwork
    are replaced (its episodes go through `change_episodes`), without (304, not
    modified) they stay. Call in a write."""
    if learned is not None:
        await conn.execute(
            "UPDATE feed_info SET title = ?, link = ?, artwork_url = ?, description = ? "
            "WHERE url_key = ?",
            (learned.title, learned.link, learned.artwork_url, learned.description, url_key),
        )
    await conn.execute(
        "UPDATE feed_info SET etag = ?, last_modified = ?, fetched_at = ?, checked_at = ?, "
        "last_error = NULL, failures = 0, next_try_at = ?, claimed_by = NULL WHERE url_key = ?",
        (etag, last_modified, now, now, next_try_at, url_key),
    )


async def record_failures(conn: Connection, failed: Sequence[tuple[str, str, int, int]]) -> None:
    """Fetches failed, each a (url_key, error, checked_at, next_try_at): keep what was
    learned before, note why and when to try again. One statement for all, so a
    fetcher pass records a claimed batch's failures in one write. Call in a write."""
    if failed:
        await conn.execute_many(
            "UPDATE feed_info SET checked_at = ?, last_error = ?, failures = failures + 1, "
            "next_try_at = ?, claimed_by = NULL WHERE url_key = ?",
            [(now, error, next_try_at, url_key) for url_key, error, now, next_try_at in failed],
        )


async def description(conn: Connection, url_key: str) -> str | None:
    """What the feed says of itself (plain text), as last fetched."""
    row = await conn.fetch_one("SELECT description FROM feed_info WHERE url_key = ?", (url_key,))
    return None if row is None or row[0] is None else str(row[0])
