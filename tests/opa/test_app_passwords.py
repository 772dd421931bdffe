"""App passwords on both engines: schema step 12 on a database of the release before,
the service's rules (the secret, names, the cap, revoke), HTTP Basic on the gpodder
API (no argon2, throttled, last use recorded once a minute, revocation at once) and
the doors that never take one (the web UI sign-in, the Open Podcast API login)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config
from podsync.errors import Conflict, InvalidInput, LimitExceeded, NotFound, Unauthorized
from podsync.model import Caller, User
from podsync.services import app_passwords as service_module
from podsync.services.accounts import AccountService
from podsync.services.app_passwords import (
    MAX_PER_USER,
    AppPasswordService,
    looks_like_app_password,
    secret_hash,
)
from podsync.services.passwords import PasswordService
from podsync.storage.engine import Engine, create_engine
from podsync.web.keys import APP_PASSWORDS, AUTH, BASIC_AUTH
from tests.conftest import PASSWORD, with_accounts
from tests.support.gpodder_support import basic, cookie
from tests.support.migration_support import add_user, database_at

pytestmark = pytest.mark.both_engines
DEVICES = "/api/2/devices/alice.json"
CALLER = Caller("192.0.2.1", "gpodder")
SHAPE = re.compile(r"[0-9a-hjkmnp-tv-z]{5}(-[0-9a-hjkmnp-tv-z]{5}){5}")
T = TypeVar("T")


async def with_service(
    config: Config, action: Callable[[AppPasswordService, AccountService], Awaitable[T]]
) -> T:
    """Run `action` on the test database's app password and account services."""
    db = create_engine(config.database)
    await db.open()
    passwords = PasswordService.for_config(config.auth)
    try:
        return await action(AppPasswordService(db), AccountService(db, passwords))
    finally:
        passwords.close()
        await db.close()


async def make(config: Config, name: str, user: str = "alice") -> str:
    async def create(service: AppPasswordService, accounts: AccountService) -> str:
        return (await service.create(await accounts.get_user(user), name))[1]

    return await with_service(config, create)


async def names(config: Config, user: str = "alice") -> list[str]:
    async def read(service: AppPasswordService, accounts: AccountService) -> list[str]:
        return [p.name for p in await service.list(await accounts.get_user(user))]

    return await with_service(config, read)


async def rows(db: Engine) -> list[tuple[Any, ...]]:
    async with db.read() as conn:
        found = await conn.fetch_all(
            "SELECT user_id, name, hash, created_at, last_used_at FROM app_passwords ORDER BY id"
        )
    return [tuple(r) for r in found]


# --- schema step 12 -------------------------------------------------------------


async def test_step_12_adds_the_table_to_a_database_of_the_release_before(
    config: Config, db_engine: str
) -> None:
    async with database_at(config, db_engine, 11) as db:
        alice = await add_user(db, "alice")
        async with db.read() as conn:
            with pytest.raises(Exception, match="app_passwords"):
                await conn.fetch_one("SELECT count(*) FROM app_passwords")
    db = create_engine(config.database)
    await db.open()  # migrates to the current version
    try:
        async with db.write() as conn:
            await conn.execute(
                "INSERT INTO app_passwords (user_id, name, hash, created_at) VALUES (?, ?, ?, ?)",
                (alice, "Kasts", b"h" * 32, 5),
            )
        assert await rows(db) == [(alice, "Kasts", b"h" * 32, 5, None)]
        for duplicate in ((alice, "Kasts", b"x" * 32), (alice, "Other", b"h" * 32)):
            with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
                async with db.write() as conn:
                    await conn.execute(
                        "INSERT INTO app_passwords (user_id, name, hash, created_at) "
                        "VALUES (?, ?, ?, 1)",
                        duplicate,
                    )
        async with db.write() as conn:  # the user's rows go with the user
            await conn.execute("DELETE FROM users WHERE id = ?", (alice,))
        assert await rows(db) == []
    finally:
        await db.close()


# --- the service ----------------------------------------------------------------


async def test_create_shows_a_random_secret_once_and_stores_only_its_hash(
    config: Config, seeded_users: tuple[str, ...]
) -> None:
    first, second = await make(config, "Kasts"), await make(config, "gPodder")
    assert SHAPE.fullmatch(first) and SHAPE.fullmatch(second) and first != second
    assert service_module.SECRET_BITS >= 128
    db = create_engine(config.database)
    await db.open()
    try:
        stored = await rows(db)
    finally:
        await db.close()
    assert [r[2] for r in stored] == [secret_hash(first), secret_hash(second)]
    assert all(first.encode() not in bytes(r[2]) for r in stored)
    assert await names(config) == ["Kasts", "gPodder"]


async def test_names_are_checked_and_unique_per_user(
    config: Config, seeded_users: tuple[str, ...]
) -> None:
    await make(config, "Kasts")
    for bad in ("", "   ", "x" * 101, "tab\there", "new\nline", "nul\x00", "lone \udcff"):
        with pytest.raises(InvalidInput):
            await make(config, bad)
    with pytest.raises(Conflict, match="already has an app password named 'Kasts'"):
        await make(config, " Kasts ")
    await make(config, "Kasts", user="bob")  # another user's names are theirs
    assert await names(config) == ["Kasts"]
    assert await names(config, "bob") == ["Kasts"]

    async def numbered(service: AppPasswordService, accounts: AccountService) -> list[str]:
        alice = await accounts.get_user("alice")
        made = [await service.create(alice, "Kasts", number_if_taken=True) for _ in range(2)]
        return [p.name for p, _ in made]

    assert await with_service(config, numbered) == ["Kasts (2)", "Kasts (3)"]


async def test_a_user_has_at_most_the_cap(config: Config, seeded_users: tuple[str, ...]) -> None:
    async def fill(service: AppPasswordService, accounts: AccountService) -> None:
        alice = await accounts.get_user("alice")
        for n in range(MAX_PER_USER):
            await service.create(alice, f"app {n}")
        with pytest.raises(LimitExceeded, match=f"{MAX_PER_USER} app passwords"):
            await service.create(alice, "one more")
        assert len(await service.list(alice)) == MAX_PER_USER
        await service.revoke(alice, "app 0")
        await service.create(alice, "one more")

    await with_service(config, fill)


async def test_revoke_by_name_or_id_and_revoke_all(
    config: Config, seeded_users: tuple[str, ...]
) -> None:
    async def run(service: AppPasswordService, accounts: AccountService) -> None:
        alice, bob = await accounts.get_user("alice"), await accounts.get_user("bob")
        kasts, _ = await service.create(alice, "Kasts")
        gpodder, _ = await service.create(alice, "gPodder")
        bobs, _ = await service.create(bob, "Kasts")
        with pytest.raises(NotFound):
            await service.revoke(alice, str(bobs.id))  # not hers
        for missing in ("AntennaPod", "99999999999999999999999", "\ud800", "a\x00b", "-1"):
            with pytest.raises(NotFound):
                await service.revoke(alice, missing)
        assert (await service.revoke(alice, str(kasts.id))).name == "Kasts"
        assert [p.id for p in await service.list(alice)] == [gpodder.id]
        await service.revoke(alice, "gPodder")
        assert await service.list(alice) == []
        await service.create(alice, "a")
        await service.create(alice, "b")
        assert await service.revoke_all(alice) == 2
        assert await service.list(alice) == []
        assert [p.name for p in await service.list(bob)] == ["Kasts"]

    await with_service(config, run)


async def test_create_refuses_a_user_whose_logins_ended_since_it_was_read(
    config: Config, seeded_users: tuple[str, ...]
) -> None:
    async def run(service: AppPasswordService, accounts: AccountService) -> None:
        alice = await accounts.get_user("alice")
        await accounts.logout("alice")
        with pytest.raises(Unauthorized):
            await service.create(alice, "Kasts")
        await accounts.set_enabled("alice", False)
        with pytest.raises(InvalidInput, match="disabled"):
            await service.create(await accounts.get_user("alice"), "Kasts")
        assert await service.list(alice) == []

    await with_service(config, run)


def test_the_shape_of_an_app_password() -> None:
    secret = service_module.new_secret()
    assert looks_like_app_password(secret)
    # A phone keyboard's capital, or the dashes left out: the same secret.
    variants = (secret.capitalize(), secret.upper(), secret.replace("-", ""))
    assert all(secret_hash(v) == secret_hash(secret) for v in variants)
    assert not looks_like_app_password(PASSWORD)
    assert not looks_like_app_password(secret[:-1])
    assert not looks_like_app_password(secret[:-1] + "i")  # not in the alphabet


# --- HTTP Basic -----------------------------------------------------------------


def count_argon2(gp: TestClient[Any, Any]) -> list[int]:
    """A list that grows by one per argon2 verification of the app under test."""
    passwords = gp.app[AUTH].passwords
    real = passwords.verify
    calls: list[int] = []

    async def counting(password_hash: str | None, password: str) -> bool:
        calls.append(1)
        return bool(await real(password_hash, password))

    passwords.verify = counting  # type: ignore[method-assign]
    return calls


async def test_an_app_password_is_a_basic_password_without_argon2(
    gp: TestClient[Any, Any], config: Config
) -> None:
    secret = await make(config, "Kasts")
    calls = count_argon2(gp)
    for password in (secret, secret.capitalize()):
        response = await gp.get(DEVICES, headers=basic(password=password))
        assert response.status == 200, await response.text()
    assert calls == []
    # The account password still works beside it (one verification, then cached).
    assert (await gp.get(DEVICES, headers=basic())).status == 200
    assert calls == [1]
    # Not another user's: bob's name with alice's app password is refused.
    bob_devices = "/api/2/devices/bob.json"
    assert (await gp.get(bob_devices, headers=basic("bob", secret))).status == 401


async def test_authenticate_basic_says_which_app_password(
    gp: TestClient[Any, Any], config: Config
) -> None:
    secret = await make(config, "Kasts")
    login = await gp.app[BASIC_AUTH].authenticate_basic("alice", secret, CALLER)
    assert login.user.name == "alice"
    assert login.app_password is not None and login.app_password.name == "Kasts"
    by_password = await gp.app[BASIC_AUTH].authenticate_basic("alice", PASSWORD, CALLER)
    assert by_password.user.name == "alice" and by_password.app_password is None
    wrong = secret[:-1] + ("1" if secret.endswith("0") else "0")  # never the secret itself
    with pytest.raises(Unauthorized):
        await gp.app[BASIC_AUTH].authenticate_basic("alice", wrong, CALLER)


async def test_the_last_use_is_recorded_at_most_once_a_minute(
    gp: TestClient[Any, Any], config: Config
) -> None:
    secret = await make(config, "Kasts")
    service = gp.app[APP_PASSWORDS]

    async def last_used() -> int | None:
        alice = await accounts_user(gp, "alice")
        return (await service.list(alice))[0].last_used_at

    assert await last_used() is None
    before = timestamps.now_us()
    assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 200
    first = await last_used()
    assert first is not None and first >= before
    # The app's pruner makes its first pass (a few writes) as the app starts: count
    # from when it is done, so that only these requests' writes could show.
    commits = await settled_commits(gp)
    for _ in range(3):
        assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 200
    assert await last_used() == first
    assert gp.app[BASIC_AUTH].db.commits == commits  # no write per request
    # A minute later the next use is recorded.
    async with gp.app[BASIC_AUTH].db.write() as conn:
        await conn.execute("UPDATE app_passwords SET last_used_at = ?", (first - 61_000_000,))
    assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 200
    later = await last_used()
    assert later is not None and later > first - 61_000_000


async def settled_commits(gp: TestClient[Any, Any]) -> int:
    """The database's commit count once nothing else in the app is writing."""
    db = gp.app[BASIC_AUTH].db
    deadline = time.monotonic() + 10
    seen = db.commits
    while time.monotonic() < deadline:
        await asyncio.sleep(0.3)
        if db.commits == seen:
            return seen
        seen = db.commits
    raise AssertionError("the app kept writing for 10 s")


async def accounts_user(gp: TestClient[Any, Any], name: str) -> User:
    async with gp.app[BASIC_AUTH].db.read() as conn:
        from podsync.store import users

        return await users.require_by_name(conn, name)


async def test_revoking_ends_basic_and_the_cookie_of_its_login_at_once(
    gp: TestClient[Any, Any], config: Config
) -> None:
    secret = await make(config, "Kasts")
    await make(config, "gPodder")
    login = await gp.post("/api/2/auth/alice/login.json", headers=basic(password=secret))
    assert login.status == 200
    value = login.cookies["sessionid"].value
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 200
    alice = await accounts_user(gp, "alice")
    await gp.app[APP_PASSWORDS].revoke(alice, "Kasts")
    assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 401
    assert (await gp.get(DEVICES, headers=cookie(value))).status == 401
    # The account password and its own cookies are untouched.
    assert (await gp.get(DEVICES, headers=basic())).status == 200


async def test_wrong_app_passwords_are_throttled_as_every_login(
    gp: TestClient[Any, Any], config: Config
) -> None:
    secret = await make(config, "Kasts")
    max_failures = config.auth.login_max_failures
    # Different wrong ones: the same one again is one failure (a stale phone).
    wrong = [n + secret[1:] for n in "0123456789" if n != secret[0]][:max_failures]
    for password in wrong:
        assert (await gp.get(DEVICES, headers=basic(password=password))).status == 401
    throttled = await gp.get(DEVICES, headers=basic(password=secret))
    assert throttled.status == 429  # even the right one, as for a password
    opa = await gp.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert opa.status == 429  # one throttle for every door


async def test_never_accepted_by_the_web_sign_in_or_the_open_podcast_api_login(
    gp: TestClient[Any, Any], config: Config
) -> None:
    secret = await make(config, "Kasts")
    opa = await gp.post("/auth/login", json={"username": "alice", "password": secret})
    assert opa.status == 401
    origin = str(gp.make_url("")).rstrip("/")
    ui = await gp.post(
        "/ui/login",
        data={"username": "alice", "password": secret},
        headers={"Origin": origin},
        allow_redirects=False,
    )
    assert ui.status == 401
    assert "Username or password is incorrect." in await ui.text()
    assert "Set-Cookie" not in ui.headers
    # The same app password still works where it belongs.
    assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 200


@pytest.mark.parametrize("operation", ["passwd", "disable", "delete", "logout"])
async def test_every_revocation_of_the_account_ends_app_passwords(
    gp: TestClient[Any, Any], config: Config, operation: str
) -> None:
    secret = await make(config, "Kasts")
    assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 200
    ops: dict[str, Callable[[AccountService], Awaitable[Any]]] = {
        "passwd": lambda a: a.set_password("alice", "a brand new password"),
        "disable": lambda a: a.set_enabled("alice", False),
        "delete": lambda a: a.delete_user("alice"),
        "logout": lambda a: a.logout("alice"),
    }
    await with_accounts(config, ops[operation])
    assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 401
    if operation in ("disable", "logout", "passwd"):
        await with_accounts(config, lambda a: a.set_enabled("alice", True))
        assert (await gp.get(DEVICES, headers=basic(password=secret))).status == 401
        assert await names(config) == []
