"""Text a database cannot store (contract section 14): a NUL byte, or a filter that
names no URL, in a query parameter, a path segment or a credential is a 400 or
matches nothing, never a 500, on either engine. PostgreSQL refuses a NUL in any
text value, so each of these once reached it as a 500."""

from __future__ import annotations

from pathlib import Path

import pytest

from podsync.config import Config
from podsync.errors import InvalidInput
from podsync.storage.engine import create_engine
from tests.conftest import PASSWORD, MakeConfig
from tests.support.cli_support import add_user
from tests.support.gpodder_support import basic
from tests.support.http_calls import call
from tests.support.server_support import serving

GPODDER_READS = (
    "/api/2/episodes/alice.json?podcast=foo",
    "/api/2/episodes/alice.json?podcast=%00",
    "/api/2/episodes/alice.json?podcast=https://a.example/%00",
    "/api/2/episodes/alice.json?device=%00",
    "/api/2/episodes/alice.json?device=phone%00",
    "/api/2/episodes/alice.json?device=%ED%A0%80",  # a lone surrogate, if decoded
    "/api/2/episodes/alice.json?podcast=https://a.example/%ED%A0%80",
    "/api/2/episodes/alice.json?since=%00",
    "/api/2/episodes/alice.json?aggregated=%00&device=%00&podcast=%00",
    "/api/2/subscriptions/alice/phone.json?since=%00",
    "/api/2/subscriptions/alice/%00.json?since=0",
    "/api/2/devices/%00.json",
    "/api/2/sync-devices/alice.json?%00=%00",
    "/subscriptions/alice/%00.txt",
    "/subscriptions/%00.opml",
)
OPA_READS = (
    "/api/v1/subscriptions?cursor=%00",
    "/api/v1/subscriptions?limit=%00",
    "/api/v1/subscriptions/%00",
    "/api/v1/subscriptions/a%00b",
    "/api/v1/subscriptions/%ED%A0%80",
    "/api/v1/sync?since=%00",
    "/api/v1/sync?include=%00",
    "/api/v1/subscriptions.opml?%00=%00",
)


@pytest.mark.both_engines
def test_nul_bytes_and_non_urls_in_parameters_are_a_400_or_match_nothing(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = make_config()
    add_user(config)
    with serving(config, tmp_path / "serve.log") as base:
        episode = {"podcast": "https://a.example/rss", "episode": "https://a.example/1.mp3",
                   "action": "download", "device": "phone",
                   "timestamp": "2026-01-01T00:00:00"}  # fmt: skip
        stored = call("POST", f"{base}/api/2/episodes/alice.json", [episode], basic())
        assert stored.status == 200
        login = call("POST", f"{base}/auth/login", {"username": "alice", "password": PASSWORD})
        bearer = {"Authorization": f"Bearer {login.json()['access_token']}"}

        wrong: list[tuple[str, int, bytes]] = []
        for path in GPODDER_READS:
            answer = call("GET", base + path, headers=basic())
            if answer.status not in (200, 400, 401, 404):
                wrong.append((path, answer.status, answer.body))
            elif answer.status == 200 and path.startswith("/api/2/episodes/"):
                assert answer.json()["actions"] == [], (path, answer.body)
        for path in OPA_READS:
            answer = call("GET", base + path, headers=bearer)
            if answer.status not in (200, 400, 404):
                wrong.append((path, answer.status, answer.body))

        # Writes naming a NUL: a device, a feed, an episode, a sync id.
        writes = [
            ("POST", "/api/2/devices/alice/%00.json", {"caption": "x"}),
            ("POST", "/api/2/devices/alice/phone.json", {"caption": "a\u0000b"}),
            (
                "POST",
                "/api/2/subscriptions/alice/phone.json",
                {"add": ["https://a.example/\u0000"]},
            ),
            ("POST", "/api/2/episodes/alice.json", [{**episode, "device": "ph\u0000one"}]),
            ("POST", "/api/2/episodes/alice.json", [{**episode, "guid": "g\u0000"}]),
            ("PUT", "/subscriptions/alice/phone.txt", b"https://a.example/\x00\n"),
        ]
        for method, path, body in writes:
            answer = call(method, base + path, body, basic())
            if answer.status not in (200, 400):
                wrong.append((path, answer.status, answer.body))
        sync = {"requests": [{"action_id": "a\u0000", "type": "subscription",
                              "action": "subscribe", "occurred_at": "2026-01-01T00:00:00Z",
                              "data": {"feed_url": "https://b.example/\u0000"}}]}  # fmt: skip
        answer = call("POST", f"{base}/api/v1/sync", sync, bearer)
        if answer.status not in (200, 400):
            wrong.append(("/api/v1/sync", answer.status, answer.body))

        # Credentials holding a NUL are wrong credentials, not a fault.
        for name in ("al\u0000ice", "\u0000"):
            answer = call("POST", f"{base}/auth/login", {"username": name, "password": PASSWORD})
            if answer.status not in (400, 401):
                wrong.append((f"/auth/login as {name!r}", answer.status, answer.body))
            answer = call("GET", f"{base}/api/2/devices/alice.json", headers=basic(name))
            if answer.status != 401:
                wrong.append((f"Basic as {name!r}", answer.status, answer.body))
        answer = call("POST", f"{base}/api/v1/sync", sync, {"Authorization": "Bearer a\u0000"})
        assert answer.status in (400, 401), answer.body
        assert not wrong, "\n".join(f"{p}: {s} {b!r}" for p, s, b in wrong)

        # The stored action is still found through the filters that name it.
        found = call("GET", f"{base}/api/2/episodes/alice.json?device=phone", headers=basic())
        assert len(found.json()["actions"]) == 1
        assert "unhandled error" not in (tmp_path / "serve.log").read_text()


@pytest.mark.parametrize("db_engine", ["postgresql"], indirect=True)
async def test_text_postgresql_refuses_is_invalid_input_not_a_fault(config: Config) -> None:
    """What a parameter that slipped past the checks answers: a 400, not a 500."""
    db = create_engine(config.database)
    await db.open()
    try:
        with pytest.raises(InvalidInput, match="cannot store"):
            async with db.read() as conn:
                await conn.fetch_one("SELECT count(*) FROM users WHERE name = ?", ("a\x00",))
        with pytest.raises(InvalidInput, match="cannot store"):
            async with db.write() as conn:
                await conn.execute("UPDATE users SET name = ? WHERE id = 0", ("a\x00",))
        async with db.read() as conn:  # the connection is still good
            assert await conn.fetch_one("SELECT 1")
    finally:
        await db.close()
