"""A feed's episode rows as stored: each item keeps a rank that falls down the feed
(the top item the largest), so a podcast's page can list the feed in its own order
where dates are missing or equal.

A rank is kept across fetches wherever the feed's order allows, so that a new
episode at the top (or at the bottom, in a feed that lists oldest first) writes one
row and not the whole feed: new items above the top kept one count up from it, new
items below the last count down, new items between two kept ones take the ranks
between. Only when the kept ranks no longer fall down the feed (the feed was
reordered) or an item is wedged in where no rank is free is every row numbered
again. Pure: no database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import NamedTuple

from podsync.store.feed_info import FeedItem

# (episode_url, guid): one row of a feed; a feed holds each at most once.
Identity = tuple[str, str]


class StoredRow(NamedTuple):
    """A FeedItem's fields, then its rank."""

    episode_url: str
    guid: str
    title: str
    published_at: int | None
    duration: int | None
    link: str | None
    media_type: str | None
    notes: str | None
    chapters: str | None
    feed_rank: int | None


class Changes(NamedTuple):
    removed: list[Identity]  # no longer in the feed: every stored row of these goes
    added: list[StoredRow]  # new or changed: each replaces its identity's stored rows


def _ranks(order: Sequence[Identity], kept: dict[Identity, int]) -> list[int]:
    anchors = [(i, kept[key]) for i, key in enumerate(order) if key in kept]
    renumber = [len(order) - 1 - i for i in range(len(order))]
    if not anchors:
        return renumber
    ranks: list[int] = []
    first_at, first_rank = anchors[0]
    ranks = [first_rank + first_at - i for i in range(first_at)]
    for (at, rank), (next_at, next_rank) in pairwise(anchors):
        if rank - next_rank < next_at - at:  # reordered, or no free rank between
            return renumber
        ranks += [rank - (i - at) for i in range(at, next_at)]
    last_at, last_rank = anchors[-1]
    ranks += [last_rank - (i - last_at) for i in range(last_at, len(order))]
    return ranks


def plan(items: Iterable[FeedItem], stored: Iterable[Sequence[object]]) -> Changes:
    """What to delete and insert so that the stored rows become `items` (in the
    feed's order, top first), each with its rank."""
    wanted: dict[Identity, FeedItem] = {}
    for item in items:
        wanted.setdefault((item.episode_url, item.guid), item)  # the topmost one
    have: dict[Identity, list[StoredRow]] = {}
    for row in map(StoredRow._make, stored):
        have.setdefault((row.episode_url, row.guid), []).append(row)
    kept = {
        key: rows[0].feed_rank
        for key, rows in have.items()
        if key in wanted and len(rows) == 1 and rows[0].feed_rank is not None
    }
    order = list(wanted)
    rows = {
        key: StoredRow(*wanted[key], feed_rank=rank)
        for key, rank in zip(order, _ranks(order, kept), strict=True)
    }
    removed = sorted(key for key in have if key not in rows)
    added = [row for key, row in rows.items() if have.get(key) != [row]]
    return Changes(removed, added)
