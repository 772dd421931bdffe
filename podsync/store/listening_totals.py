"""The statistics' running totals (schema step 26): per person and episode the merged
stretches listened to (`listened_episodes`), per person, quarter of an hour and podcast
the seconds of new coverage and the episodes first finished (`listening_totals`).
Kept by the write path as plays are stored (`count_plays`, in the write's
transaction, after `meta.lock_user`), read by the statistics page a few rows a week.

An episode played once has no row of stretches: its one play, stored in
`episode_actions`, says what was listened to, and is read instead when the episode
is played again (then the row is written). A history holds mostly such episodes, and
a row each was a quarter of what its import wrote. So a person's episode without a
row has at most one play counted that listened to anything (pruning deletes a play
only when a later play of the same episode supersedes it, and that second play wrote
the row). A listening session of the web player always has its row (`keep_rows`):
its saves delete the play before.

The web player's listening session lives on the person's row of the episode too: the
token its script made when playback started and the seq of the session's one play.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence, Set
from operator import itemgetter
from typing import Any, NamedTuple

from podsync.episode_keys import ACTION_CODES
from podsync.storage import loop_share
from podsync.store import Connection
from podsync.store.value_lists import each_key, each_row, in_list
from podsync.stretches import EpisodeListened, Totals, format_spans, parse_spans

_KEYS = 500
_OCCURRED_AT = itemgetter(2)  # of a Play


class Play(NamedTuple):
    episode_id: int
    feed_id: int
    occurred_at: int
    started: int | None
    position: int | None
    total: int | None


async def count_plays(
    conn: Connection,
    user_id: int,
    plays: Sequence[Play],
    *,
    stored_from: int,
    created: Set[int] = frozenset(),
    keep_rows: bool = False,
) -> None:
    """Add what these plays (stored now, from seq `stored_from` on) listened to for
    the first time to the totals, in the order they happened. `created`: the episodes
    this write made, which have no row nor play before (a history's import: nearly
    all of them). `keep_rows`: write the row of every episode played."""
    if not plays:
        return
    played = Counter(p.episode_id for p in plays)  # plays counted, these and before
    listened = await _listened(conn, user_id, sorted(played.keys() - created))
    had_row = set(listened)
    without = sorted(played.keys() - created - had_row)
    for episode_id, before in (await _earlier_plays(conn, user_id, without, stored_from)).items():
        listened[episode_id] = _listened_from(before)
        played[episode_id] += len(before)
    totals = Totals()
    changed: set[int] = set()
    count, count_only = totals.play, totals.only_play
    for first, piece in loop_share.pieces(sorted(plays, key=_OCCURRED_AT)):
        if first:
            await loop_share.share()
        for episode_id, feed_id, occurred_at, started, position, total in piece:
            episode = listened.get(episode_id)
            if episode is None:
                if played[episode_id] == 1 and not keep_rows:  # its only play: no row
                    count_only(feed_id, occurred_at, started, position, total)
                    continue
                episode = listened[episode_id] = EpisodeListened()
            if count(episode, feed_id, occurred_at, started, position, total):
                changed.add(episode_id)
    # A row is written when this write changed it, and made once a second play of
    # its episode listened to anything (or for a listening session).
    written = [
        e
        for e in sorted(played)
        if (e in changed if e in had_row else keep_rows or (played[e] > 1 and _says(listened[e])))
    ]
    if written:
        await conn.execute_many(
            "INSERT INTO listened_episodes (user_id, episode_id, spans, finished_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (user_id, episode_id) DO UPDATE "
            "SET spans = excluded.spans, finished_at = excluded.finished_at",
            [
                (user_id, e, format_spans(listened[e].spans), listened[e].finished_at)
                for e in written
            ],
        )
    if totals.added:
        await conn.execute_many(
            "INSERT INTO listening_totals (user_id, quarter, feed_id, seconds, finished) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, quarter, feed_id) DO UPDATE "
            "SET seconds = listening_totals.seconds + excluded.seconds, "
            "finished = listening_totals.finished + excluded.finished",
            [
                (user_id, quarter, feed_id, seconds, finishes)
                for (quarter, feed_id), (seconds, finishes) in sorted(totals.added.items())
            ],
        )


def _says(listened: EpisodeListened) -> bool:
    """Whether an episode's plays listened to anything (or finished it): a row of
    one none of whose did says no more than no row."""
    return bool(listened.spans) or listened.finished_at is not None


def _listened_from(plays: list[Any]) -> EpisodeListened:
    """What an episode's plays stored before (in the order they happened) listened to:
    at most one of them did, else the episode has its row."""
    listened = EpisodeListened()
    counted_before = Totals()  # their seconds are in the totals already
    for occurred_at, started, position, total in plays:
        counted_before.play(listened, 0, int(occurred_at), started, position, total)
    return listened


async def _listened(
    conn: Connection, user_id: int, episode_ids: list[int]
) -> dict[int, EpisodeListened]:
    found: dict[int, EpisodeListened] = {}
    for episode_id, spans, finished_at in await _listened_rows(conn, user_id, episode_ids):
        found[int(episode_id)] = EpisodeListened(
            parse_spans(str(spans)), None if finished_at is None else int(finished_at)
        )
    return found


# PostgreSQL looks each episode's row up on its own (`each_key`): left to choose,
# on a new instance's statistics (a user of a few rows) it read all of the user's
# rows and filtered them by the list.
_LISTENED_EACH = each_key(
    [("id", "bigint")],
    "SELECT episode_id, spans, finished_at FROM listened_episodes "
    "WHERE user_id = ? AND episode_id = k.id",
)


async def _listened_rows(conn: Connection, user_id: int, episode_ids: list[int]) -> list[Any]:
    """The rows of these episodes: (episode id, spans, finished_at) each."""
    if conn.dialect == "postgresql":
        return await conn.fetch_all(_LISTENED_EACH, (episode_ids, user_id))
    found: list[Any] = []
    for start in range(0, len(episode_ids), _KEYS):
        marks, bound = in_list(episode_ids[start : start + _KEYS], _KEYS, dialect=conn.dialect)
        found += await conn.fetch_all(
            "SELECT episode_id, spans, finished_at FROM listened_episodes "
            f"WHERE user_id = ? AND episode_id IN ({marks})",
            [user_id, *bound],
        )
    return found


async def _earlier_plays(
    conn: Connection, user_id: int, episode_ids: list[int], before_seq: int
) -> dict[int, list[Any]]:
    """Of these episodes (without a row), the plays stored before seq `before_seq`:
    (occurred_at, started, position, total) each, in the order they happened. Found
    by the episode, the user checked as an expression no index serves
    (`episode_actions.later_of_same`): as a column, PostgreSQL on a new instance's
    statistics read all of the user's actions and filtered them."""
    found: dict[int, list[Any]] = {}
    for start in range(0, len(episode_ids), _KEYS):
        marks, bound = in_list(episode_ids[start : start + _KEYS], _KEYS, dialect=conn.dialect)
        rows = await conn.fetch_all(
            "SELECT episode_id, occurred_at, started, position, total FROM episode_actions "
            f"WHERE episode_id IN ({marks}) AND user_id + 0 = ? AND action = ? AND seq < ? "
            "ORDER BY episode_id, occurred_at, seq",
            [*bound, user_id, ACTION_CODES["play"], before_seq],
        )
        for episode_id, *play in rows:
            found.setdefault(int(episode_id), []).append(play)
    return found


async def session_seq(conn: Connection, user_id: int, episode_id: int, token: str) -> int | None:
    """The seq of the play of the person's listening session `token` on the episode,
    None when that is not the session the episode's row names."""
    row = await conn.fetch_one(
        "SELECT session_seq FROM listened_episodes "
        "WHERE user_id = ? AND episode_id = ? AND session = ?",
        (user_id, episode_id, token),
    )
    return None if row is None or row[0] is None else int(row[0])


async def set_session(
    conn: Connection, user_id: int, episode_id: int, token: str, seq: int
) -> None:
    """The episode's current listening session (one a person and episode: a new one
    replaces the one before)."""
    await conn.execute(
        "INSERT INTO listened_episodes (user_id, episode_id, spans, session, session_seq) "
        "VALUES (?, ?, '', ?, ?) ON CONFLICT (user_id, episode_id) DO UPDATE "
        "SET session = excluded.session, session_seq = excluded.session_seq",
        (user_id, episode_id, token, seq),
    )


class Span(NamedTuple):
    """A stretch of time the statistics add up: its slot and quarters [low, high)."""

    slot: int
    low: int
    high: int


def _spans(spans: Sequence[Span]) -> tuple[str, list[int]]:
    values = ",".join(["(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))"] * len(spans))
    return f"WITH s (i, lo, hi) AS (VALUES {values}) ", [n for span in spans for n in span]


def _in_spans(dialect: str, columns: str, condition: str) -> str:
    """The spans `s` joined with the person's rows `t` of each (a range of the primary
    key a span). PostgreSQL reads each span's range on its own (`each_row`): left to
    choose, on a new instance's statistics it read all of the person's rows once for
    every span."""
    where = f"t.user_id = ? AND t.quarter >= s.lo AND t.quarter < s.hi AND {condition}"
    if dialect == "postgresql":
        return f"s {each_row(f'SELECT {columns} FROM listening_totals t WHERE {where}', 't')}"
    return f"s JOIN listening_totals t ON {where}"


async def listened(conn: Connection, user_id: int, spans: Sequence[Span]) -> list[Any]:
    """(span slot, podcast url key, seconds) per span and podcast with any."""
    with_spans, params = _spans(spans)
    rows = await conn.fetch_all(
        f"{with_spans}, t (i, feed_id, seconds) AS ("
        f"SELECT s.i, t.feed_id, sum(t.seconds) FROM "
        f"{_in_spans(conn.dialect, 't.feed_id, t.seconds', 't.seconds > 0')} "
        "GROUP BY s.i, t.feed_id) "
        "SELECT t.i, f.url_key, t.seconds FROM t JOIN episode_feeds f ON f.id = t.feed_id",
        [*params, user_id],
    )
    return [(int(i), str(key), int(seconds)) for i, key, seconds in rows]


async def finishes(conn: Connection, user_id: int, spans: Sequence[Span]) -> list[Any]:
    """(span slot, episodes first finished) per span with any: from the partial index
    of the quarters with a finish."""
    with_spans, params = _spans(spans)
    rows = await conn.fetch_all(
        f"{with_spans}SELECT s.i, sum(t.finished) FROM "
        f"{_in_spans(conn.dialect, 't.finished', 't.finished > 0')} GROUP BY s.i",
        [*params, user_id],
    )
    return [(int(i), int(done)) for i, done in rows]


async def first_quarter(conn: Connection, user_id: int) -> int | None:
    """The quarter of the person's first play counted (None: none yet)."""
    row = await conn.fetch_one(
        "SELECT min(quarter) FROM listening_totals WHERE user_id = ?", (user_id,)
    )
    return None if row is None or row[0] is None else int(row[0])
