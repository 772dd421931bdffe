"""Storing episode actions (gpodder spec 6.6, schema step 19): the actions of one
write resolved against what the user has, then stored.

A user's podcasts and episodes are each stored once (`store.episode_feeds`); an
action is a row of numbers keyed by (user, seq), `seq` being the user's own episode
stream position. An action already stored (the same podcast spelling, episode,
action, time, play fields, device and guid: a batch sent again after a lost answer)
is not stored twice: it is looked up by its episode and time and compared field by
field. Call in a write, after `meta.lock_user`: the user's writers then run one at a
time on every engine. Reads of the actions are in `store.episode_actions`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from podsync.episode_keys import ACTION_CODES, stored_url, url_hash, url_prefix
from podsync.storage import loop_share
from podsync.store import Connection, episode_feeds
from podsync.store.episode_feeds import KEYS, Feed, new_ids, pairs
from podsync.store.value_lists import padded


@dataclass(slots=True)
class EpisodeAction:
    """One uploaded action as parsed. Not frozen, for speed (a frozen dataclass sets
    each field through object.__setattr__, and an upload makes up to thousands)."""

    seq: int  # 0 until stored
    podcast_url: str
    podcast_key: str
    episode_url: str
    action: str
    occurred_at: int
    device_id: str | None
    guid: str | None
    started: int | None
    position: int | None
    total: int | None


# What makes two actions the same, once the episode is known.
_Content = tuple[int, int, int, str | None, int | None, int | None, int | None, str | None, str]


@dataclass(slots=True)
class Batch:
    """An upload resolved against what the user has: the feeds and episodes known,
    the actions not stored yet (in upload order, each with its place in the upload),
    and how many there were in all."""

    user_id: int
    feeds: dict[str, Feed]  # url key -> the feed row
    episodes: dict[tuple[str, str], tuple[int, str | None]]  # (url key, URL) -> (id, guid)
    hashes: dict[tuple[str, str], int]  # (url key, URL) -> url_hash(URL)
    new: list[EpisodeAction]
    places: list[int]  # new[i] is the places[i]-th action of the upload
    size: int
    created: set[int] = field(default_factory=set)  # ids of the episodes `store` made

    @property
    def already(self) -> int:
        """Actions of the upload stored before (or twice in it)."""
        return self.size - len(self.new)


async def resolve(
    conn: Connection,
    user_id: int,
    actions: Sequence[EpisodeAction],
    known: Mapping[str, Feed] | None = None,
) -> Batch:
    """Look up the feeds, episodes and stored actions an upload names (reads only).
    `known`: feed rows of the user read before (a feed row never goes away but with
    its user; its `last_at` may have grown since, which only costs an UPDATE that
    changes nothing)."""
    keys = {a.podcast_key for a in actions}
    feeds = {k: f for k in keys if known is not None and (f := known.get(k)) is not None}
    if len(feeds) < len(keys):
        feeds.update(await episode_feeds.by_keys(conn, user_id, keys - feeds.keys()))
    urls = list({(a.podcast_key, a.episode_url): None for a in actions})
    hashes: dict[tuple[str, str], int] = {}
    for at, some in loop_share.pieces(urls):
        if at:
            await loop_share.share()
        hashes.update({key: url_hash(key[1]) for key in some})
    episodes = await episode_feeds.episodes_by_url(conn, feeds, hashes)
    stored = await _stored(conn, user_id, episodes, actions, feeds) if episodes else set()
    new: list[EpisodeAction] = []
    places: list[int] = []
    # The first action at each moment; the whole of each action at a moment met twice
    # (made only then: nearly every upload has none).
    moments: dict[tuple[str, str, int], EpisodeAction] = {}
    seen: set[tuple[Any, ...]] = set()
    for start, piece in loop_share.pieces(actions):
        if start:
            await loop_share.share()
        for place, a in enumerate(piece, start):
            key = (a.podcast_key, a.episode_url)
            moment = (*key, a.occurred_at)
            first = moments.setdefault(moment, a)
            if first is not a:  # the same episode and time twice: the same action?
                seen.add(_whole(first))
                whole = _whole(a)
                if whole in seen:
                    continue
                seen.add(whole)
            found = episodes.get(key)
            if found is not None and _content(found[0], a) in stored:
                continue
            new.append(a)
            places.append(place)
    return Batch(user_id, feeds, episodes, hashes, new, places, len(actions))


def _whole(a: EpisodeAction) -> tuple[Any, ...]:
    """Everything an uploaded action says: two alike are one action sent twice."""
    return (a.podcast_key, a.episode_url, a.occurred_at, a.action, a.device_id, a.started,
            a.position, a.total, a.guid, a.podcast_url)  # fmt: skip


def _content(episode_id: int, a: EpisodeAction) -> _Content:
    return (
        episode_id,
        a.occurred_at,
        ACTION_CODES[a.action],
        a.device_id,
        a.started,
        a.position,
        a.total,
        a.guid,
        a.podcast_url,
    )


async def _stored(
    conn: Connection,
    user_id: int,
    episodes: dict[tuple[str, str], tuple[int, str | None]],
    actions: Sequence[EpisodeAction],
    feeds: dict[str, Feed],
) -> set[_Content]:
    """The contents of the user's stored actions of these episodes at these times."""
    guids = {episode_id: guid for episode_id, guid in episodes.values()}
    spelling = {feed.id: feed.url for feed in feeds.values()}
    feed_of = {ids[0]: feeds[key].id for (key, _), ids in episodes.items()}
    keys = sorted(
        {
            (found[0], a.occurred_at)
            for a in actions
            if (found := episodes.get((a.podcast_key, a.episode_url))) is not None
        }
    )
    stored: set[_Content] = set()
    rows = await episode_feeds.by_pairs(
        conn,
        keys,
        "episode_actions",
        ("episode_id", "occurred_at"),
        "episode_id, occurred_at, action, device_id, started, position, total, guid, podcast_url",
        user_id,
    )
    for episode_id, at, code, device, started, position, total, guid, podcast in rows:
        eid = int(episode_id)
        stored.add(
            (
                eid,
                int(at),
                int(code),
                device,
                started,
                position,
                total,
                guids[eid] if guid is None else (str(guid) or None),
                spelling[feed_of[eid]] if podcast is None else str(podcast),
            )
        )
    return stored


class Stored(NamedTuple):
    first_seq: int  # the seqs of the first and the last action stored (0, 0: none)
    last_seq: int


async def store(conn: Connection, batch: Batch, received_at: int) -> Stored:
    """Store the batch's new actions (creating their feeds and episodes first). The
    upload takes one number per action it names, stored before or not, each action
    the number of its place (as the release before did: its counter moved past the
    rows an INSERT ignored), so that a user's numbers go on as they would have."""
    if not batch.new:
        return Stored(0, 0)
    user_id = batch.user_id
    latest: dict[str, int] = {}
    for a in batch.new:
        if a.occurred_at > latest.get(a.podcast_key, -(2**62)):
            latest[a.podcast_key] = a.occurred_at
    await _add_feeds(conn, batch, latest)
    await _add_episodes(conn, batch)
    row = await conn.fetch_one(
        "UPDATE users SET episode_seq = episode_seq + ?, "
        "episode_action_count = episode_action_count + ? WHERE id = ? RETURNING episode_seq",
        (batch.size, len(batch.new), user_id),
    )
    start = int(row[0]) - batch.size + 1
    feeds, episodes = batch.feeds, batch.episodes
    rows = []
    for first, piece in loop_share.pieces(batch.new):
        if first:
            await loop_share.share()
        for place, a in zip(batch.places[first : first + len(piece)], piece, strict=True):
            seq = start + place
            feed = feeds[a.podcast_key]
            episode_id, episode_guid = episodes[(a.podcast_key, a.episode_url)]
            guid = None if a.guid == episode_guid else ("" if a.guid is None else a.guid)
            podcast = None if a.podcast_url == feed.url else a.podcast_url
            rows.append(
                (user_id, seq, episode_id, ACTION_CODES[a.action], a.occurred_at, a.device_id,
                 a.started, a.position, a.total, guid, podcast)
            )  # fmt: skip
    await conn.execute_many(
        "INSERT INTO episode_actions (user_id, seq, episode_id, action, occurred_at, "
        "device_id, started, position, total, guid, podcast_url) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    await conn.execute(
        "INSERT INTO episode_receipts (user_id, received_s, first_seq) VALUES (?, ?, ?) "
        "ON CONFLICT (user_id, received_s) DO NOTHING",
        (user_id, received_at // 1_000_000, rows[0][1]),
    )
    later = []
    for key, at in latest.items():
        feed = feeds[key]
        if at > feed.last_at:
            later.append((feed.id, at))
            feeds[key] = Feed(feed.id, feed.url, feed.prefix, at)  # _replace: twice the time
    await _move_last_at(conn, later)
    return Stored(rows[0][1], rows[-1][1])


async def _move_last_at(conn: Connection, later: list[tuple[int, int]]) -> None:
    """Each (feed id, time) a feed's new latest action. SQLite: one statement a chunk
    of them, where one UPDATE a feed took twice the time (an upload of a long history
    names a thousand podcasts); it looks each id up by its key whatever it knows of
    the table. Padded, a pair repeated sets the same value again. PostgreSQL keeps
    one UPDATE a feed (pipelined): on the statistics of a table analysed while small
    it joined such a list by reading the whole table (32 ms at 100,000 feeds, against
    1.8 ms through the key)."""
    if conn.dialect != "sqlite":
        if later:
            await conn.execute_many(
                "UPDATE episode_feeds SET last_at = ? WHERE id = ? AND last_at < ?",
                [(at, feed_id, at) for feed_id, at in later],
            )
        return
    for start in range(0, len(later), KEYS):
        chunk = padded(later[start : start + KEYS], KEYS)
        await conn.execute(
            f"WITH v (id, at) AS (VALUES {pairs(len(chunk))}) "
            "UPDATE episode_feeds SET last_at = v.at FROM v "
            "WHERE episode_feeds.id = v.id AND episode_feeds.last_at < v.at",
            [value for pair in chunk for value in pair],
        )


async def _add_feeds(conn: Connection, batch: Batch, latest: dict[str, int]) -> None:
    """The batch's podcasts the user has no row for yet: each spelled as its first
    action spells it, its prefix that of its first episode URL."""
    first: dict[str, EpisodeAction] = {}
    for a in batch.new:
        if a.podcast_key not in batch.feeds:
            first.setdefault(a.podcast_key, a)
    if not first:
        return
    ids = await new_ids(conn, "episode_feeds", len(first))
    rows = []
    for feed_id, (key, a) in zip(ids, first.items(), strict=True):
        feed = Feed(feed_id, a.podcast_url, url_prefix(a.episode_url), latest[key])
        batch.feeds[key] = feed
        rows.append((feed_id, batch.user_id, key, feed.url, feed.prefix, feed.last_at))
    await conn.execute_many(
        "INSERT INTO episode_feeds (id, user_id, url_key, url, prefix, last_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )


async def _add_episodes(conn: Connection, batch: Batch) -> None:
    """The batch's episodes not stored yet, each with its first action's guid."""
    first: dict[tuple[str, str], EpisodeAction] = {}
    episodes = batch.episodes
    for a in batch.new:
        key = (a.podcast_key, a.episode_url)
        if key not in episodes and key not in first:
            first[key] = a
    if not first:
        return
    ids = await new_ids(conn, "episodes", len(first))
    rows = []
    feeds, hashes = batch.feeds, batch.hashes
    for start, piece in loop_share.pieces(list(first.items())):
        if start:
            await loop_share.share()
        for episode_id, (key, a) in zip(ids[start : start + len(piece)], piece, strict=True):
            feed = feeds[key[0]]
            text, prefixed = stored_url(key[1], feed.prefix)
            rows.append((episode_id, feed.id, hashes[key], text, prefixed, a.guid))
            episodes[key] = (episode_id, a.guid)
    batch.created.update(ids)
    await conn.execute_many(
        "INSERT INTO episodes (id, feed_id, url_hash, url, prefixed, guid) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
