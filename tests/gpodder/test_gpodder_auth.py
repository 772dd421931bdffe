"""gpodder layer authentication (gpodder spec section 3): Basic or session cookie,
the challenge urllib needs, cookie attributes, revocation, throttling, the cache."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.services.accounts import AccountService
from podsync.web.keys import AUTH
from tests.conftest import PASSWORD, with_accounts
from tests.support.gpodder_support import GpWith, basic, cookie, login_cookie

DEVICES = "/api/2/devices/alice.json"


async def test_no_credentials_get_a_basic_challenge_with_a_realm(
    gp: TestClient[Any, Any],
) -> None:
    response = await gp.get(DEVICES)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith('Basic realm="podsync"')
    assert response.headers["Cache-Control"] == "no-store"
    assert (await response.json())["error"] == "Unauthorized"


async def test_opa_routes_keep_the_bearer_challenge(gp: TestClient[Any, Any]) -> None:
    response = await gp.get("/api/v1/subscriptions", headers=basic())
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Cache-Control" not in response.headers


async def test_login_sets_a_host_only_root_cookie_with_max_age(
    gp: TestClient[Any, Any], config: Config
) -> None:
    # AntennaPod: Basic on login only, a content type that is not one, an empty body.
    headers = {**basic(), "Content-Type": "plain/text; charset=utf-8"}
    response = await gp.post("/api/2/auth/alice/login.json", headers=headers, data=b"")
    assert response.status == 200
    assert await response.read() == b""
    set_cookie = response.headers["Set-Cookie"]
    attributes = [part.strip().lower() for part in set_cookie.split(";")]
    assert attributes[0].startswith("sessionid=")
    assert "path=/" in attributes
    assert f"max-age={config.gpodder.session_lifetime}" in attributes
    assert "httponly" in attributes
    assert not any(a.startswith("domain") for a in attributes)
    assert "secure" not in attributes  # plain http: a Secure cookie is never sent back


async def test_secure_cookie_behind_a_trusted_https_proxy(gp_with: GpWith) -> None:
    gp = await gp_with(server={"trusted_proxies": ["127.0.0.1/32"]})
    headers = {**basic(), "X-Forwarded-Proto": "https"}
    response = await gp.post("/api/2/auth/alice/login.json", headers=headers)
    assert response.status == 200
    assert "secure" in response.headers["Set-Cookie"].lower()


async def test_the_cookie_alone_authenticates_later_calls(gp: TestClient[Any, Any]) -> None:
    value = await login_cookie(gp)
    response = await gp.get(DEVICES, headers=cookie(value))
    assert response.status == 200
    assert await response.json() == []
    # A valid cookie for the same user is not replaced on every call.
    assert "Set-Cookie" not in response.headers


async def test_login_with_a_valid_cookie_and_no_credentials_is_ok(
    gp: TestClient[Any, Any],
) -> None:
    value = await login_cookie(gp)
    response = await gp.post("/api/2/auth/alice/login.json", headers=cookie(value))
    assert response.status == 200


async def test_a_wrong_basic_never_falls_back_to_a_valid_cookie(
    gp: TestClient[Any, Any],
) -> None:
    value = await login_cookie(gp)
    headers = {**basic(password="wrong password"), **cookie(value)}
    response = await gp.get(DEVICES, headers=headers)
    assert response.status == 401
    login = await gp.post("/api/2/auth/alice/login.json", headers=headers)
    assert login.status == 401


async def test_a_tampered_cookie_is_refused(gp: TestClient[Any, Any]) -> None:
    value = await login_cookie(gp)
    response = await gp.get(DEVICES, headers=cookie(value[:-2] + "xx"))
    assert response.status == 401


async def test_basic_calls_get_a_cookie_when_they_carry_none(gp: TestClient[Any, Any]) -> None:
    response = await gp.get(DEVICES, headers=basic())
    assert response.status == 200
    assert response.cookies["sessionid"].value
    # A cookie of another user is replaced by one of the Basic user.
    bob = await login_cookie(gp, "bob")
    response = await gp.get(DEVICES, headers={**basic(), **cookie(bob)})
    assert response.status == 200
    assert "sessionid" in response.cookies


async def test_user_mismatch_is_400_on_login_and_401_elsewhere(
    gp: TestClient[Any, Any],
) -> None:
    response = await gp.post("/api/2/auth/bob/login.json", headers=basic("alice"))
    assert response.status == 400
    response = await gp.get("/api/2/devices/bob.json", headers=basic("alice"))
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Basic")
    # A cookie of alice does not open bob's data either, nor does another case.
    value = await login_cookie(gp)
    assert (await gp.get("/api/2/devices/bob.json", headers=cookie(value))).status == 401
    assert (await gp.get("/api/2/devices/Alice.json", headers=cookie(value))).status == 401


async def test_a_password_change_ends_cookies_and_cached_basic_at_once(
    gp: TestClient[Any, Any], config: Config
) -> None:
    value = await login_cookie(gp)
    assert (await gp.get(DEVICES, headers=basic())).status == 200  # now cached

    async def change(accounts: AccountService) -> None:
        await accounts.set_password("alice", "a new password!")

    await with_accounts(config, change)
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 401
    assert (await gp.get(DEVICES, headers=basic())).status == 401
    assert (await gp.get(DEVICES, headers=basic(password="a new password!"))).status == 200


async def test_disable_and_logout_end_sessions(gp: TestClient[Any, Any], config: Config) -> None:
    value = await login_cookie(gp)
    await with_accounts(config, lambda accounts: accounts.logout("alice"))
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 401
    assert (await gp.get(DEVICES, headers=basic())).status == 200
    await with_accounts(config, lambda accounts: accounts.set_enabled("alice", False))
    assert (await gp.get(DEVICES, headers=basic())).status == 401


async def test_logout_json_forgets_the_session(gp: TestClient[Any, Any]) -> None:
    value = await login_cookie(gp)
    response = await gp.post("/api/2/auth/alice/logout.json", headers=cookie(value))
    assert response.status == 200
    assert await response.read() == b""
    expired = response.headers["Set-Cookie"].lower()
    assert "max-age=0" in expired and "path=/" in expired
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 401
    # Logout without any credentials (Kasts after a password change) is still 200.
    assert (await gp.post("/api/2/auth/alice/logout.json")).status == 200


async def test_wrong_basic_is_throttled_with_the_opa_login(gp_with: GpWith) -> None:
    gp = await gp_with(auth={"login_max_failures": 2, "login_lockout_seconds": 60})
    # Calls without credentials are not failures (mygpoclient always starts so).
    for _ in range(3):
        assert (await gp.get(DEVICES)).status == 401
    assert (await gp.get(DEVICES, headers=basic())).status == 200
    for n in range(2):  # two different wrong passwords (a repeat would count once)
        assert (await gp.get(DEVICES, headers=basic(password=f"wrong {n}"))).status == 401
    assert (await gp.get(DEVICES, headers=basic(password="wrong 2"))).status == 429
    opa = await gp.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert opa.status == 429  # one throttle for both doors


async def test_basic_verification_is_cached(gp_with: GpWith) -> None:
    """Kasts sends Basic on every call: one argon2 verification per cache period."""
    counts = {}
    for seconds in (300, 0):
        gp = await gp_with(gpodder={"basic_cache_seconds": seconds})
        passwords = gp.app[AUTH].passwords
        real_verify = passwords.verify
        calls = []

        async def counting(
            password_hash: str | None,
            password: str,
            calls: list[int] = calls,
            real: Any = real_verify,
        ) -> bool:
            calls.append(1)
            return bool(await real(password_hash, password))

        passwords.verify = counting  # type: ignore[method-assign]
        for _ in range(4):
            assert (await gp.get(DEVICES, headers=basic())).status == 200
        counts[seconds] = len(calls)
        await gp.close()
    assert counts == {300: 1, 0: 4}


async def test_latin1_basic_credentials_are_accepted(
    gp: TestClient[Any, Any], config: Config
) -> None:
    await with_accounts(config, lambda accounts: accounts.set_password("alice", "pässwörd-1"))
    headers = basic(password="pässwörd-1", charset="latin-1")
    assert (await gp.get(DEVICES, headers=headers)).status == 200
    assert (await gp.get(DEVICES, headers=basic(password="pässwörd-1"))).status == 200


async def test_the_session_slides_and_expires(gp_with: GpWith) -> None:
    """A cookie is re-issued once a tenth of its life has passed (AntennaPod logs in
    on every sync, gPodder keeps one process for days), and dies at its age limit."""
    import asyncio

    # A tenth of 30 s: the first call must come within 3 s of the login (a loaded
    # machine running the whole suite took over 1 s with a lifetime of 10).
    gp = await gp_with(gpodder={"session_lifetime": 30})
    value = await login_cookie(gp)
    fresh = await gp.get(DEVICES, headers=cookie(value))
    assert fresh.status == 200 and "Set-Cookie" not in fresh.headers
    await asyncio.sleep(3.1)
    slid = await gp.get(DEVICES, headers=cookie(value))
    assert slid.status == 200
    assert "max-age=30" in slid.headers["Set-Cookie"].lower()
    assert slid.cookies["sessionid"].value != value

    short = await gp_with(gpodder={"session_lifetime": 1})
    value = await login_cookie(short)
    await asyncio.sleep(2.1)
    assert (await short.get(DEVICES, headers=cookie(value))).status == 401


async def test_a_cookie_in_use_still_expires_and_a_tampered_twin_is_refused(
    gp_with: GpWith,
) -> None:
    """Verified cookies are remembered (an app sends one cookie on every call); the
    memory never outlives the cookie's age limit nor vouches for another string."""
    import asyncio

    gp = await gp_with(gpodder={"session_lifetime": 2})
    value = await login_cookie(gp)
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 200
    assert (await gp.get(DEVICES, headers=cookie(value[:-2] + "xx"))).status == 401
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 200
    await asyncio.sleep(3.1)
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 401
