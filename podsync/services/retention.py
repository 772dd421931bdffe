"""What the server forgets past its retention: one pass, run now and every hour by one
process of the server (web/app.py).

Action ids, the revocations of gpodder sessions whose cookies have all expired,
Login Flow v2 requests, the served positions of readers gone, superseded episode
actions past `gpodder.episode_history_days`, and the feeds and artwork no
subscription refers to any more. Each is a short write of its own, straight over the
store: the pass needs none of the protocols' services, so a server whose
gpodder-compatible APIs nobody asked for yet never loads them (web/gpodder_apis.py).
"""

from __future__ import annotations

import logging

from podsync import timestamps
from podsync.config import Config
from podsync.services.episodes.history import prune_superseded
from podsync.services.feed_info import collect_unreferenced
from podsync.services.nextcloud import FLOW_LIFETIME_S, THROTTLE_WINDOW_S
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine
from podsync.store import login_flows, served_positions, sessions

log = logging.getLogger("podsync")

_US = 1_000_000
# A session's served positions are kept this long after their last write: the gpodder
# apps that log in per sync (AntennaPod) or not at all (Kasts) leave one session a
# sync (services/served.py).
SESSION_KEEP_US = 24 * 3600 * _US


async def prune_revocations(db: Engine, now: int | None = None) -> int:
    """Delete the revocations of gpodder sessions whose cookies have all expired; how
    many."""
    async with db.write() as conn:
        return await sessions.prune(conn, timestamps.now_us() if now is None else now)


async def prune_login_flows(db: Engine, now: int | None = None) -> int:
    """Forget Login Flow v2 requests past their lifetime and the throttle's window."""
    now = timestamps.now_us() if now is None else now
    before = now - max(FLOW_LIFETIME_S, THROTTLE_WINDOW_S) * _US
    async with db.write() as conn:
        return await login_flows.prune(conn, before)


async def prune_served(db: Engine, keep_us: int, now: int | None = None) -> int:
    """Forget the served positions of sessions a day after their last write, and the
    others (devices) `keep_us` after theirs; how many."""
    now = timestamps.now_us() if now is None else now
    async with db.write() as conn:
        return await served_positions.prune(
            conn, now - SESSION_KEEP_US, now - max(keep_us, SESSION_KEEP_US)
        )


async def forget_past_retention(db: Engine, sync: SyncService, config: Config) -> None:
    """One pass over everything kept for a while (the module's text), logged."""
    removed = await sync.prune_action_log()
    if removed:
        log.info("forgot %d action ids past their retention", removed)
    ended = await prune_revocations(db)
    if ended:
        log.info("forgot %d ended gpodder sessions past their cookies' lifetime", ended)
    await prune_login_flows(db)
    await prune_served(db, config.gpodder.session_lifetime * _US)
    pruned = await prune_superseded(db, config.gpodder.episode_history_days)
    if pruned:
        log.info("pruned %d superseded episode actions past their history", pruned)
    feeds, images = await collect_unreferenced(db)
    if feeds or images:
        log.info("forgot %d feeds and %d images nobody subscribes to any more", feeds, images)
