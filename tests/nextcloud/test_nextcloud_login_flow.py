"""Login Flow v2 (the nextcloud spec) on both engines, through the real app: start,
the browser's way to the web UI's `Grant access` page (sign-in first), the poll (404
until granted, one 200 with a working app password, then 404), cancel, expiry after
20 minutes, one use, the throttle per address, a poll that never hashes a password
and never counts as a failed login, the grant form's CSRF and Origin checks, two
phones of one app getting two app passwords and two devices, and `<base>` from
server.public_url or a trusted proxy's headers."""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.services.nextcloud import login_flows as flows_module
from podsync.storage.engine import create_engine
from podsync.web.app import create_app
from podsync.web.keys import AUTH
from tests.conftest import PASSWORD, MakeConfig, with_accounts

pytestmark = pytest.mark.both_engines
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
AGENT = "AntennaPod/3.7.0"
FORM = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
NC = "/index.php/apps/gpoddersync"


async def make_client(aiohttp_client: Any, config: Config) -> TestClient[Any, Any]:
    async def seed(accounts: Any) -> None:
        await accounts.add_user("alice", PASSWORD)

    await with_accounts(config, seed)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    return client


@pytest.fixture
async def nc(aiohttp_client: Any, config: Config) -> TestClient[Any, Any]:
    return await make_client(aiohttp_client, config)


def own_origin(client: TestClient[Any, Any]) -> str:
    return str(client.make_url("")).rstrip("/")


async def start(client: TestClient[Any, Any], agent: str = AGENT) -> dict[str, Any]:
    # AntennaPod's NextcloudLoginFlow: POST with an empty form body.
    response = await client.post(
        "/index.php/login/v2", data=b"", headers={**FORM, "User-Agent": agent}
    )
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    return body


async def poll(client: TestClient[Any, Any], token: str) -> Any:
    return await client.post(
        "/index.php/login/v2/poll", data=f"token={token}".encode(), headers=FORM
    )


async def sign_in(client: TestClient[Any, Any], next_path: str) -> None:
    response = await client.post(
        "/ui/login",
        data={"username": "alice", "password": PASSWORD, "next": next_path},
        headers={"Origin": own_origin(client)},
        allow_redirects=False,
    )
    assert response.status == 303, await response.text()
    assert response.headers["Location"] == next_path


async def open_in_browser(client: TestClient[Any, Any], login_url: str) -> tuple[str, str]:
    """Follow the flow's URL as a browser would: to the grant page, through the
    sign-in when there is no session. (grant page path, its CSRF token)"""
    response = await client.get(urlsplit(login_url).path, allow_redirects=False)
    assert response.status == 303
    grant_path = urlsplit(response.headers["Location"]).path
    assert grant_path.startswith("/ui/grant/")
    page = await client.get(grant_path, allow_redirects=False)
    if page.status == 303:  # no session yet: the sign-in, then back here
        assert page.headers["Location"].startswith("/ui/login?next=")
        await sign_in(client, grant_path)
        page = await client.get(grant_path)
    text = await page.text()
    assert page.status == 200, text
    assert "AntennaPod" in text and "Grant access" in text and "Cancel" in text
    found = CSRF.search(text)
    assert found is not None
    return grant_path, found.group(1)


async def decide(client: TestClient[Any, Any], grant_path: str, csrf: str, decision: str) -> Any:
    return await client.post(
        grant_path,
        data={"csrf": csrf, "decision": decision},
        headers={"Origin": own_origin(client)},
    )


def basic(name: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


async def test_the_whole_flow_gives_one_working_app_password(nc: TestClient[Any, Any]) -> None:
    started = await start(nc)
    base = own_origin(nc)
    assert started["poll"]["endpoint"] == f"{base}/index.php/login/v2/poll"
    assert started["login"].startswith(f"{base}/index.php/login/v2/flow/")
    token = started["poll"]["token"]
    assert (await poll(nc, token)).status == 404  # not granted yet
    grant_path, csrf = await open_in_browser(nc, started["login"])
    assert (await poll(nc, token)).status == 404  # shown, not decided
    granted = await decide(nc, grant_path, csrf, "grant")
    assert granted.status == 200 and "Access granted" in await granted.text()
    answer = await poll(nc, token)
    assert answer.status == 200, await answer.text()
    assert answer.headers["Cache-Control"] == "no-store"
    got = await answer.json()
    assert set(got) == {"server", "loginName", "appPassword"}
    assert got["server"] == base and got["loginName"] == "alice"
    # Spent: every later poll is 404, and the page cannot grant again.
    assert (await poll(nc, token)).status == 404
    assert (await decide(nc, grant_path, csrf, "grant")).status == 404
    # The app password works on the Nextcloud API, under a device named after it.
    response = await nc.post(
        f"{NC}/episode_action/create",
        json=[
            {
                "podcast": "http://a.example/f",
                "episode": "http://a.example/1.mp3",
                "action": "download",
                "timestamp": "2026-11-25T10:00:00",
            }
        ],
        headers=basic("alice", got["appPassword"]),
    )
    assert response.status == 200, await response.text()
    devices = await nc.get("/api/2/devices/alice.json", headers=basic("alice", got["appPassword"]))
    assert [(d["caption"]) for d in await devices.json()] == ["AntennaPod"]


async def test_two_phones_of_one_app_get_two_app_passwords_and_two_devices(
    nc: TestClient[Any, Any],
) -> None:
    secrets = []
    for _ in range(2):
        started = await start(nc)
        grant_path, csrf = await open_in_browser(nc, started["login"])
        assert (await decide(nc, grant_path, csrf, "grant")).status == 200
        secrets.append((await (await poll(nc, started["poll"]["token"])).json())["appPassword"])
    assert secrets[0] != secrets[1]
    for secret in secrets:
        response = await nc.post(
            f"{NC}/subscription_change/create",
            json={"add": ["http://a.example/f"]},
            headers=basic("alice", secret),
        )
        assert response.status == 200
    devices = await nc.get("/api/2/devices/alice.json", headers=basic("alice", secrets[0]))
    assert sorted(d["caption"] for d in await devices.json()) == ["AntennaPod", "AntennaPod (2)"]


async def test_cancel_gives_nothing(nc: TestClient[Any, Any]) -> None:
    started = await start(nc)
    grant_path, csrf = await open_in_browser(nc, started["login"])
    cancelled = await decide(nc, grant_path, csrf, "cancel")
    assert cancelled.status == 200 and "Cancelled" in await cancelled.text()
    assert (await poll(nc, started["poll"]["token"])).status == 404
    assert (await decide(nc, grant_path, csrf, "grant")).status == 404


async def test_the_grant_form_needs_its_csrf_token_and_this_servers_origin(
    nc: TestClient[Any, Any],
) -> None:
    started = await start(nc)
    grant_path, csrf = await open_in_browser(nc, started["login"])
    refused = [
        await nc.post(
            grant_path,
            data={"csrf": "forged", "decision": "grant"},
            headers={"Origin": own_origin(nc)},
        ),
        await nc.post(
            grant_path,
            data={"csrf": csrf, "decision": "grant"},
            headers={"Origin": "https://evil.example"},
        ),
        await nc.post(
            grant_path,
            data={"csrf": csrf, "decision": "grant"},
            headers={"Sec-Fetch-Site": "cross-site"},
        ),
    ]
    assert [r.status for r in refused] == [403, 403, 403]
    assert (await poll(nc, started["poll"]["token"])).status == 404


async def test_a_flow_expires_after_20_minutes(nc: TestClient[Any, Any], config: Config) -> None:
    started = await start(nc)
    grant_path, csrf = await open_in_browser(nc, started["login"])
    db = create_engine(config.database)
    await db.open()
    try:  # 20 minutes and a second later, as the database sees it
        async with db.write() as conn:
            await conn.execute(
                "UPDATE login_flows SET expires_at = created_at - 1000000, "
                "created_at = created_at - 1201000000"
            )
    finally:
        await db.close()
    assert (await nc.get(grant_path)).status == 404
    assert (await decide(nc, grant_path, csrf, "grant")).status == 404
    assert (await poll(nc, started["poll"]["token"])).status == 404
    assert flows_module.FLOW_LIFETIME_S == 20 * 60


async def test_starting_is_throttled_per_address(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    client = await make_client(aiohttp_client, make_config())
    for _ in range(flows_module.MAX_FLOWS_PER_ADDRESS):
        await start(client)
    response = await client.post("/index.php/login/v2")
    assert response.status == 429
    assert int(response.headers["Retry-After"]) > 0
    assert "too many" in (await response.json())["description"]


async def test_a_poll_never_hashes_a_password_and_is_never_a_failed_login(
    nc: TestClient[Any, Any],
) -> None:
    passwords = nc.app[AUTH].passwords
    hashed: list[str] = []
    real_verify, real_hash = passwords.verify, passwords.hash

    async def counting_verify(*args: Any) -> Any:
        hashed.append("verify")
        return await real_verify(*args)

    async def counting_hash(*args: Any) -> Any:
        hashed.append("hash")
        return await real_hash(*args)

    passwords.verify, passwords.hash = counting_verify, counting_hash  # type: ignore[method-assign]
    for n in range(30):  # far past the login throttle's failures
        assert (await poll(nc, f"guess-{n}")).status == 404
    started = await start(nc)
    for _ in range(3):
        assert (await poll(nc, started["poll"]["token"])).status == 404
    assert hashed == []
    # alice is not locked out: the account password still works (and it is hashed:
    # the count above would have seen a poll that hashed).
    response = await nc.get(f"{NC}/subscriptions?since=0", headers=basic("alice", PASSWORD))
    assert response.status == 200
    assert hashed == ["verify"]


@pytest.mark.parametrize("body", [b"", b"token=", b"nothing=1", b"\xff\xfe", b"token=%ff"])
async def test_a_poll_without_a_usable_token_is_a_4xx(
    nc: TestClient[Any, Any], body: bytes
) -> None:
    response = await nc.post("/index.php/login/v2/poll", data=body, headers=FORM)
    assert response.status in (400, 404), await response.text()
    assert (await response.json())["description"]


async def test_base_from_public_url_or_a_trusted_proxy(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    config = make_config(server={"trusted_proxies": ["127.0.0.1"]})
    client = await make_client(aiohttp_client, config)
    response = await client.post(
        "/index.php/login/v2",
        headers={
            "X-Forwarded-Proto": "https",
            "X-Forwarded-Host": "pods.example.org",
            "X-Forwarded-Prefix": "/podsync/",
        },
    )
    started = await response.json()
    assert started["poll"]["endpoint"] == "https://pods.example.org/podsync/index.php/login/v2/poll"
    assert started["login"].startswith("https://pods.example.org/podsync/index.php/login/v2/flow/")
    # A prefix that is not a plain path is ignored, never echoed.
    response = await client.post(
        "/index.php/login/v2",
        headers={"X-Forwarded-Host": "pods.example.org", "X-Forwarded-Prefix": "/a b/<x>"},
    )
    assert (await response.json())["poll"]["endpoint"] == (
        "http://pods.example.org/index.php/login/v2/poll"
    )
