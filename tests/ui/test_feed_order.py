"""A feed's stored episode rows keep their place in the feed: a new episode at the
top or the bottom, a dropped one, an edited title or date write only those rows; a
reordered feed, or one wedged in where no rank is free, is numbered again; rows of
the release before (no rank) are numbered on the first fetch."""

from __future__ import annotations

from podsync.services.feeds.order import Changes, StoredRow, plan
from podsync.store.feed_info import FeedItem

NO_DETAILS = (None, None, None, None, None)  # duration, link, media type, notes, chapters


def items(*numbers: int, title: str = "Ep") -> list[FeedItem]:
    return [FeedItem(f"https://cdn.example/{n}.mp3", f"g{n}", f"{title} {n}", n) for n in numbers]


def applied(stored: list[StoredRow], changes: Changes) -> list[StoredRow]:
    replaced = {*changes.removed, *((r.episode_url, r.guid) for r in changes.added)}
    kept = [r for r in stored if (r.episode_url, r.guid) not in replaced]
    return kept + changes.added


def in_order(stored: list[StoredRow]) -> list[str]:
    return [r.guid for r in sorted(stored, key=lambda r: -(r.feed_rank or 0))]


def test_a_first_fetch_numbers_the_feed_top_down() -> None:
    changes = plan(items(5, 4, 3, 2, 1), [])
    assert changes.removed == []
    assert [(r.guid, r.feed_rank) for r in changes.added] == [
        ("g5", 4), ("g4", 3), ("g3", 2), ("g2", 1), ("g1", 0)
    ]  # fmt: skip


def test_a_new_episode_writes_one_row_and_a_dropped_one_deletes_one() -> None:
    stored = plan(items(5, 4, 3, 2, 1), []).added
    changes = plan(items(6, 5, 4, 3, 2), stored)
    assert changes.removed == [("https://cdn.example/1.mp3", "g1")]
    assert [(r.guid, r.feed_rank) for r in changes.added] == [("g6", 5)]
    stored = applied(stored, changes)
    # Oldest first (a serial): the new one at the bottom, one row again.
    changes = plan(items(6, 5, 4, 3, 2, 0), stored)
    assert changes.removed == [] and [(r.guid, r.feed_rank) for r in changes.added] == [("g0", 0)]
    stored = applied(stored, changes)
    assert plan(items(6, 5, 4, 3, 2, 0), stored) == Changes([], [])  # nothing changed


def test_an_edit_rewrites_that_row_only_and_keeps_its_place() -> None:
    stored = plan(items(3, 2, 1), [])
    edited = items(3, 2, 1)
    edited[1] = edited[1]._replace(title="Ep 2, corrected", published_at=99)
    changes = plan(edited, stored.added)
    assert changes.removed == []
    assert changes.added == [
        StoredRow("https://cdn.example/2.mp3", "g2", "Ep 2, corrected", 99, *NO_DETAILS, 1)
    ]


def test_between_two_kept_ones_a_free_rank_is_used_else_all_are_numbered_again() -> None:
    stored = plan(items(5, 4, 3, 2, 1), []).added
    stored = applied(stored, plan(items(5, 4, 2, 1), stored))  # 3 went: rank 2 is free
    changes = plan(items(5, 4, 9, 2, 1), stored)
    assert [(r.guid, r.feed_rank) for r in changes.added] == [("g9", 2)]
    stored = applied(stored, changes)
    changes = plan(items(5, 8, 4, 9, 2, 1), stored)  # no rank free between 5 and 4
    stored = applied(stored, changes)
    assert in_order(stored) == ["g5", "g8", "g4", "g9", "g2", "g1"]
    changes = plan(items(1, 2, 9, 4, 8, 5), stored)  # reversed
    assert in_order(applied(stored, changes)) == ["g1", "g2", "g9", "g4", "g8", "g5"]


def test_rows_of_the_release_before_and_doubles_are_written_once_in_order() -> None:
    old = [
        StoredRow(f"https://cdn.example/{n}.mp3", f"g{n}", f"Ep {n}", None, *NO_DETAILS, None)
        for n in (1, 2)
    ]
    doubled = [*old, old[0]._replace(title="Ep 1, an older title")]
    changes = plan(items(2, 1), doubled)
    assert changes.removed == []
    stored = applied(doubled, changes)
    assert len(stored) == 2 and in_order(stored) == ["g2", "g1"]
    # The same identity twice in one feed: the topmost is kept.
    twice = plan([*items(2, 1), *items(2, title="Again")], [])
    assert [(r.guid, r.title) for r in twice.added] == [("g2", "Ep 2"), ("g1", "Ep 1")]
