"""The Account page's `App passwords` section over HTTP, on both engines: made with
the form (the secret on the answer page only, never twice), listed, revoked after a
confirmation; CSRF and Origin as every UI form; never taken by the password change
form; ended by a password change and by "Sign out everywhere"."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.web.app import create_app
from tests.conftest import PASSWORD, with_accounts
from tests.support.gpodder_support import basic

pytestmark = pytest.mark.both_engines
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SECRET = re.compile(r'<code class="secret">([0-9a-z-]+)</code>')
DEVICES = "/api/2/devices/alice.json"


@pytest.fixture
async def ui(aiohttp_client: Any, config: Config, db_engine: str) -> TestClient[Any, Any]:
    async def seed(accounts: Any) -> None:
        await accounts.add_user("alice", PASSWORD)
        await accounts.add_user("bob", PASSWORD)

    await with_accounts(config, seed)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    return client


def origin(client: TestClient[Any, Any]) -> dict[str, str]:
    return {"Origin": str(client.make_url("")).rstrip("/")}


async def sign_in(client: TestClient[Any, Any], name: str = "alice") -> str:
    """Sign in; the CSRF token of the new session."""
    response = await client.post(
        "/ui/login",
        data={"username": name, "password": PASSWORD},
        headers=origin(client),
        allow_redirects=False,
    )
    assert response.status == 303, await response.text()
    found = CSRF.search(await (await client.get("/ui/account")).text())
    assert found is not None
    return found.group(1)


async def create(client: TestClient[Any, Any], csrf: str, name: str) -> tuple[int, str]:
    response = await client.post(
        "/ui/account/app-passwords",
        data={"csrf": csrf, "name": name},
        headers=origin(client),
        allow_redirects=False,
    )
    return response.status, await response.text()


async def gpodder_status(client: TestClient[Any, Any], password: str) -> int:
    response = await client.get(DEVICES, headers=basic(password=password))
    return response.status


async def test_the_section_makes_one_and_shows_it_once(ui: TestClient[Any, Any]) -> None:
    csrf = await sign_in(ui)
    page = await (await ui.get("/ui/account")).text()
    assert '<h2 id="h-app-passwords">App passwords</h2>' in page
    assert '<label for="f-name">Name</label>' in page
    assert ">Create app password</button>" in page
    assert "No app passwords yet." in page

    status, answer = await create(ui, csrf, "Kasts on the laptop")
    assert status == 200
    found = SECRET.search(answer)
    assert found is not None
    secret = found.group(1)
    assert "it is shown only this once" in answer
    assert await gpodder_status(ui, secret) == 200

    # Only on that answer: the account page lists it, without the secret.
    listed = await (await ui.get("/ui/account")).text()
    assert secret not in listed and SECRET.search(listed) is None
    assert '<th scope="row">Kasts on the laptop</th>' in listed
    assert "never" not in listed  # used once above
    # A reload of the answer sends the form again: the name is taken, no new secret.
    again_status, again = await create(ui, csrf, "Kasts on the laptop")
    assert again_status == 400
    assert "You already have an app password with this name." in again
    assert 'value="Kasts on the laptop"' in again  # the form keeps what was typed
    assert SECRET.search(again) is None


async def test_the_answer_carries_the_secret_in_its_body_only(ui: TestClient[Any, Any]) -> None:
    csrf = await sign_in(ui)
    response = await ui.post(
        "/ui/account/app-passwords",
        data={"csrf": csrf, "name": "gPodder"},
        headers=origin(ui),
        allow_redirects=False,
    )
    body = await response.text()
    secret = SECRET.search(body)
    assert response.status == 200 and secret is not None
    assert response.headers["Cache-Control"] == "no-store"
    assert "Location" not in response.headers
    assert all(secret.group(1) not in v for v in response.headers.values())


async def test_bad_names_are_named_and_nothing_is_made(ui: TestClient[Any, Any]) -> None:
    csrf = await sign_in(ui)
    for name, problem in (
        ("", "Give the app password a name"),
        ("x" * 101, "at most 100 characters"),
    ):
        status, page = await create(ui, csrf, name)
        assert status == 400 and problem in page
        assert 'aria-invalid="true" aria-describedby="e-name"' in page
    assert "No app passwords yet." in await (await ui.get("/ui/account")).text()


async def test_csrf_and_origin_are_checked_as_on_every_form(ui: TestClient[Any, Any]) -> None:
    csrf = await sign_in(ui)
    refusals = (
        ({"name": "x"}, origin(ui)),  # no token
        ({"name": "x", "csrf": "forged"}, origin(ui)),
        ({"name": "x", "csrf": csrf}, {"Origin": "https://evil.example"}),
        ({"name": "x", "csrf": csrf}, {**origin(ui), "Sec-Fetch-Site": "cross-site"}),
    )
    for data, headers in refusals:
        response = await ui.post("/ui/account/app-passwords", data=data, headers=headers)
        assert response.status == 403
        assert SECRET.search(await response.text()) is None
    assert "No app passwords yet." in await (await ui.get("/ui/account")).text()


async def test_revoke_asks_first_then_ends_it(ui: TestClient[Any, Any]) -> None:
    csrf = await sign_in(ui)
    _, answer = await create(ui, csrf, "Kasts")
    secret = SECRET.search(answer)
    assert secret is not None
    page = await (await ui.get("/ui/account")).text()
    found = re.search(r'name="id" value="(\d+)"', page)
    assert found is not None and 'aria-label="Revoke Kasts"' in page
    ident = found.group(1)
    question = await ui.get(f"/ui/account/app-passwords/revoke?id={ident}")
    text = await question.text()
    assert question.status == 200 and "Revoke Kasts?" in text and ">Cancel</a>" in text
    assert await gpodder_status(ui, secret.group(1)) == 200  # the question changed nothing

    forged = await ui.post(
        "/ui/account/app-passwords/revoke", data={"id": ident}, headers=origin(ui)
    )
    assert forged.status == 403
    assert await gpodder_status(ui, secret.group(1)) == 200
    done = await ui.post(
        "/ui/account/app-passwords/revoke",
        data={"id": ident, "csrf": csrf},
        headers=origin(ui),
        allow_redirects=False,
    )
    assert (done.status, done.headers["Location"]) == (303, "/ui/account?done=revoked")
    after = await (await ui.get("/ui/account?done=revoked")).text()
    assert "App password revoked." in after and "No app passwords yet." in after
    assert await gpodder_status(ui, secret.group(1)) == 401
    gone = await ui.get(f"/ui/account/app-passwords/revoke?id={ident}")
    assert gone.status == 404


async def test_nobody_revokes_another_users_app_password(
    ui: TestClient[Any, Any], aiohttp_client: Any, config: Config
) -> None:
    csrf = await sign_in(ui)
    _, answer = await create(ui, csrf, "Kasts")
    secret = SECRET.search(answer)
    assert secret is not None
    ident = re.search(r'name="id" value="(\d+)"', await (await ui.get("/ui/account")).text())
    assert ident is not None
    bob: TestClient[Any, Any] = await aiohttp_client(ui.server)
    bob_csrf = await sign_in(bob, "bob")
    for value in (ident.group(1), "x", "99999999999999999999999"):
        assert (await bob.get(f"/ui/account/app-passwords/revoke?id={value}")).status == 404
        response = await bob.post(
            "/ui/account/app-passwords/revoke",
            data={"id": value, "csrf": bob_csrf},
            headers=origin(bob),
        )
        assert response.status == 404
    assert await gpodder_status(ui, secret.group(1)) == 200


async def test_the_password_change_form_never_takes_one_and_a_change_ends_them(
    ui: TestClient[Any, Any],
) -> None:
    csrf = await sign_in(ui)
    _, answer = await create(ui, csrf, "Kasts")
    found = SECRET.search(answer)
    assert found is not None
    secret = found.group(1)
    new = "a brand new password"
    refused = await ui.post(
        "/ui/account/password",
        data={"csrf": csrf, "current": secret, "new": new, "again": new},
        headers=origin(ui),
    )
    assert refused.status == 400
    assert "This is not your current password." in await refused.text()
    assert await gpodder_status(ui, secret) == 200
    changed = await ui.post(
        "/ui/account/password",
        data={"csrf": csrf, "current": PASSWORD, "new": new, "again": new},
        headers=origin(ui),
        allow_redirects=False,
    )
    assert changed.status == 303
    assert await gpodder_status(ui, secret) == 401


async def test_sign_out_everywhere_ends_them(ui: TestClient[Any, Any]) -> None:
    csrf = await sign_in(ui)
    _, answer = await create(ui, csrf, "Kasts")
    found = SECRET.search(answer)
    assert found is not None
    assert await gpodder_status(ui, found.group(1)) == 200
    response = await ui.post(
        "/ui/account/logout-everywhere",
        data={"csrf": csrf},
        headers=origin(ui),
        allow_redirects=False,
    )
    assert response.status == 303
    assert await gpodder_status(ui, found.group(1)) == 401
    await sign_in(ui)
    assert "No app passwords yet." in await (await ui.get("/ui/account")).text()
