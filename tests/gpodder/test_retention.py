"""The hourly pruning's own steps (services/retention.py), over the store on both
engines: Login Flow v2 requests go once past their lifetime and then the start
throttle's window, a gpodder session's revocation once its cookie has expired, a session's
served positions a day after their last write and a device's after the session
lifetime. The pass needs none of the protocols' services (tests/ops/test_idle_imports.py
checks that an idle server, which runs it at once, loads none of them)."""

from __future__ import annotations

from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.services import retention
from podsync.services.nextcloud import FLOW_LIFETIME_S, THROTTLE_WINDOW_S
from podsync.services.nextcloud.login_flows import LoginFlows
from podsync.storage.engine import create_engine
from podsync.store import served_positions, sessions

pytestmark = pytest.mark.both_engines

HOUR_US = 3600 * 1_000_000


async def test_each_step_forgets_only_what_is_past_its_retention(
    config: Config, create_user: Any
) -> None:
    alice = (await create_user("alice")).id
    db = create_engine(config.database)
    await db.open()
    try:
        now = timestamps.now_us()
        started = await LoginFlows(db).start("AntennaPod/3.4", "192.0.2.7")
        # Kept past its lifetime for the throttle's window (what counts its address's
        # starts), then forgotten.
        kept_s = FLOW_LIFETIME_S + max(FLOW_LIFETIME_S, THROTTLE_WINDOW_S)
        assert await retention.prune_login_flows(db, now=now + (kept_s - 60) * 1_000_000) == 0
        assert await LoginFlows(db).pending(started.flow_id) is not None
        assert await retention.prune_login_flows(db, now=now + (kept_s + 60) * 1_000_000) == 1

        async with db.write() as conn:
            await sessions.revoke(conn, "a-session", now + HOUR_US)
        assert await retention.prune_revocations(db, now=now) == 0
        assert await retention.prune_revocations(db, now=now + HOUR_US) == 1

        written = {"s:a-session": (5, now), "d:phone": (7, now)}
        async with db.write() as conn:
            await served_positions.put(conn, alice, written)
        keep = 7 * 24 * HOUR_US
        assert await retention.prune_served(db, keep, now=now + 23 * HOUR_US) == 0
        assert await retention.prune_served(db, keep, now=now + 25 * HOUR_US) == 1
        async with db.read() as conn:
            assert set(await served_positions.get(conn, alice, list(written))) == {"d:phone"}
        assert await retention.prune_served(db, keep, now=now + keep + HOUR_US) == 1
    finally:
        await db.close()
