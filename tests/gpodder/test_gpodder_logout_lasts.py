"""A gpodder `logout.json` ends that session for good (contract section 14): on every
process sharing the database and after a restart, the cookie is refused. The
revocation is kept until the cookie would have expired anyway, then the server's
maintenance deletes it."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import asyncpg
import pytest

from podsync.config import Config
from tests.conftest import MakeConfig
from tests.support.cli_support import add_user
from tests.support.gpodder_support import basic
from tests.support.http_calls import call
from tests.support.server_support import serving

pytestmark = pytest.mark.both_engines

REVOCATIONS = "SELECT count(*) FROM gpodder_revoked_sessions"


def _login(base: str) -> dict[str, str]:
    answer = call("POST", f"{base}/api/2/auth/alice/login.json", headers=basic())
    assert answer.status == 200, answer.body
    return {"Cookie": answer.headers["Set-Cookie"].split(";")[0]}


def _devices(base: str, cookie: dict[str, str]) -> int:
    return call("GET", f"{base}/api/2/devices/alice.json", headers=cookie).status


def _revocations(config: Config) -> int:
    if not config.database.url:
        with closing(sqlite3.connect(config.database.path)) as conn:
            return int(conn.execute(REVOCATIONS).fetchone()[0])

    async def count() -> int:
        conn = await asyncpg.connect(config.database.url)
        try:
            return int(await conn.fetchval(REVOCATIONS))
        finally:
            await conn.close()

    return asyncio.run(count())


def test_a_logout_on_one_process_holds_on_the_other_and_after_a_restart(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = make_config()
    add_user(config)
    with serving(config, tmp_path / "a.log") as a, serving(config, tmp_path / "b.log") as b:
        cookie = _login(a)
        assert _devices(b, cookie) == 200
        other = _login(b)  # a second session of the same user stays open
        ended = call("POST", f"{b}/api/2/auth/alice/logout.json", headers=cookie)
        assert ended.status == 200
        assert _devices(a, cookie) == 401
        assert _devices(b, cookie) == 401
        assert _devices(a, other) == 200
    with serving(config, tmp_path / "a2.log") as a:
        assert _devices(a, cookie) == 401
        assert _devices(a, other) == 200
        # Logging in again with the password is a new session, unaffected.
        assert _devices(a, _login(a)) == 200


def test_revocations_are_deleted_once_the_cookie_would_have_expired(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = make_config(gpodder={"session_lifetime": 2})
    add_user(config)
    with serving(config, tmp_path / "a.log") as a:
        cookie = _login(a)
        assert call("POST", f"{a}/api/2/auth/alice/logout.json", headers=cookie).status == 200
        assert _devices(a, cookie) == 401
    assert _revocations(config) == 1
    time.sleep(3)  # the cookie has expired: its revocation is no longer needed
    with serving(config, tmp_path / "b.log"):  # maintenance runs at start, then hourly
        deadline = time.monotonic() + 10
        while _revocations(config) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert _revocations(config) == 0
