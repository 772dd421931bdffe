"""The hourly pruning of superseded episode actions (contract 14).

An action that a later one of the same user, podcast, episode and action supersedes
is kept `gpodder.episode_history_days` after its client time, then deleted; the
latest of each is kept forever (it is what an aggregated pull answers). Each user's
actions are walked in windows of WINDOW, each read off the event loop and deleted in
its own short write, so the pruning never holds the loop or the writer for long.
"""

from __future__ import annotations

from podsync import timestamps
from podsync.storage.engine import Engine
from podsync.store import episode_actions

WINDOW = 5000  # actions looked at per step
_US_PER_DAY = 86_400_000_000


async def prune_superseded(db: Engine, history_days: int, now: int | None = None) -> int:
    """Delete superseded actions older than `history_days`; how many were deleted."""
    now = timestamps.now_us() if now is None else now
    cutoff = now - history_days * _US_PER_DAY
    async with db.read() as conn:
        users = await episode_actions.user_ids(conn)
    removed = 0
    for user_id in users:
        after = 0
        while True:
            async with db.read(threaded=True) as conn:
                end = await episode_actions.window_end(conn, user_id, after, WINDOW)
                if end is None:
                    break
                seqs = await episode_actions.superseded_between(conn, user_id, after, end, cutoff)
            if seqs:
                async with db.write() as conn:
                    removed += await episode_actions.delete(conn, user_id, seqs)
            after = end
    return removed
