"""Finding a person's episodes by words of their titles (`podsync/words.py`): the
feed items of the podcasts they have a subscription to (subscribed or not), newest
first, a page at a time.

SQLite reads its FTS5 index (`feed_episode_words`, schema step 22), PostgreSQL its
GIN index over the same words; each word typed must start a word of the title.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.store import Connection

_COLUMNS = "fe.url_key, fe.episode_url, fe.guid, fe.title, fe.published_at, fe.duration"
_ORDER = (
    "fe.published_at DESC NULLS LAST, fe.feed_rank DESC NULLS LAST, fe.url_key, "
    "fe.episode_url, fe.guid"
)
_MINE = "fe.url_key IN (SELECT url_key FROM subscriptions WHERE user_id = ?)"


@dataclass(frozen=True, slots=True)
class FoundItem:
    podcast_key: str
    episode_url: str
    guid: str
    title: str
    published_at: int | None
    duration: int | None


def _found(row: Any) -> FoundItem:
    key, url, guid, title, published, duration = row
    return FoundItem(
        str(key),
        str(url),
        str(guid),
        str(title),
        None if published is None else int(published),
        None if duration is None else int(duration),
    )


async def find(
    conn: Connection, user_id: int, words: list[str], limit: int, offset: int
) -> list[FoundItem]:
    """Up to `limit` items whose titles have every one of `words` (each the start of
    a word of the title), after `offset`, newest first. `words` come from
    `podsync.words.query_words`: runs of letters and digits, at least one."""
    assert words and all(w.isalnum() for w in words)
    if conn.dialect == "sqlite":
        match = " ".join(f'"{w}"*' for w in words)
        sql = (
            f"SELECT {_COLUMNS} FROM feed_episode_words w "
            "JOIN feed_episodes fe ON fe.rowid = w.rowid "
            f"WHERE feed_episode_words MATCH ? AND {_MINE} ORDER BY {_ORDER} LIMIT ? OFFSET ?"
        )
        params: tuple[Any, ...] = (match, user_id, limit, offset)
    else:
        # Text cast to tsquery is read as it is (no parser, no dictionary): the
        # same words as the index holds, each a prefix.
        query = " & ".join(f"'{w}':*" for w in words)
        sql = (
            f"SELECT {_COLUMNS} FROM feed_episodes fe "
            "WHERE array_to_tsvector(string_to_array(fe.words, ' ')) @@ ?::tsquery "
            f"AND {_MINE} ORDER BY {_ORDER} LIMIT ? OFFSET ?"
        )
        params = (query, user_id, limit, offset)
    return [_found(r) for r in await conn.fetch_all(sql, params)]
