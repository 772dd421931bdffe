"""The Import and export page's "Import from another server" form, over HTTP on the
real app: the import runs as a job, the answer is a redirect to a GET that shows its
progress and then its report (reloading it imports nothing), a wrong password
changes nothing, and the page connects only to public addresses unless the user is
an admin or [feeds] allow_private says otherwise."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, with_accounts
from tests.ops.test_loop_stalls import assert_not_stalled, bob_ticking
from tests.support.cli_support import dump, stored
from tests.support.import_support import Browser
from tests.support.remote_peers import FEEDS, REMOTE_PASSWORD, FlakyGpodder, stored_actions
from tests.ui.test_webui_http import sign_in


async def _client(aiohttp_client: Any, config: Config) -> TestClient[Any, Any]:
    async def seed(accounts: Any) -> None:
        await accounts.add_user("alice", PASSWORD)
        await accounts.add_user("bob", PASSWORD)

    await with_accounts(config, seed)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    return client


@pytest.fixture
def private_config(make_config: MakeConfig) -> Config:
    return make_config(feeds={"allow_private": True})


async def _post(
    ui: TestClient[Any, Any], csrf: str, base: str, password: str = REMOTE_PASSWORD
) -> Any:
    own = str(ui.make_url("")).rstrip("/")
    form = {"csrf": csrf, "url": base, "username": "remote", "password": password, "api": ""}
    return await ui.post(
        "/ui/import-from", data=form, headers={"Origin": own}, allow_redirects=False
    )


RUNNING = re.compile(r"Import (running|stopping)")


async def finished(ui: TestClient[Any, Any], location: str, within_s: float = 60) -> str:
    """The page at `location` once the import it shows has ended."""
    deadline = time.monotonic() + within_s
    while True:
        page = await ui.get(location)
        assert page.status == 200
        text = await page.text()
        if not RUNNING.search(text):
            return text
        assert time.monotonic() < deadline, "the import did not end"
        await asyncio.sleep(0.1)


async def test_the_form_imports_and_redirects_to_its_report(
    aiohttp_client: Any, private_config: Config
) -> None:
    ui = await _client(aiohttp_client, private_config)
    csrf = await sign_in(ui)
    with FlakyGpodder(count=40, page=10, fail_at=None) as remote:
        response = await _post(ui, csrf, remote.base)
        assert response.status == 303, await response.text()
        location = response.headers["Location"]
        assert location.startswith("/ui/transfer?import=")
        await finished(ui, location)
        calls = len(remote.calls)
        for _ in range(2):  # a reload shows the report again and imports nothing
            page = await ui.get(location)
            assert page.status == 200
            text = await page.text()
            assert "Import report" in text
            assert "Subscriptions: 2 added, 0 subscribed again, 0 already there" in text
            assert "Episode actions: 40 added, 0 already there, 0 skipped." in text
        assert len(remote.calls) == calls
        again = await _post(ui, csrf, remote.base)
        text = await finished(ui, again.headers["Location"])
        assert "Episode actions: 0 added, 40 already there, 0 skipped." in text
        assert "Nothing new: everything was already here." in text
    assert stored(private_config) == {(url, None, True) for url in FEEDS[:2]}
    assert len(stored_actions(private_config.database.path, "alice")) == 40
    # Another user cannot read the report by its address.
    await ui.post(
        "/ui/logout", data={"csrf": csrf}, headers={"Origin": str(ui.make_url("")).rstrip("/")}
    )
    await sign_in(ui, "bob")
    text = await (await ui.get(location)).text()
    assert "no longer kept" in text
    assert "40 added" not in text


async def test_a_stop_half_way_is_shown_and_a_second_import_completes(
    aiohttp_client: Any, private_config: Config
) -> None:
    ui = await _client(aiohttp_client, private_config)
    csrf = await sign_in(ui)
    with FlakyGpodder(count=40, page=10, fail_at=20) as remote:
        response = await _post(ui, csrf, remote.base)
        text = await finished(ui, response.headers["Location"])
        assert "Import stopped half way" in text
        assert "the answer was cut off" in text
        assert len(stored_actions(private_config.database.path, "alice")) == 20
        remote.fail_at = None
        response = await _post(ui, csrf, remote.base)
        text = await finished(ui, response.headers["Location"])
    assert "Episode actions read from where the import of " in text
    assert "Episode actions: 20 added, 0 already there, 0 skipped." in text
    assert len(stored_actions(private_config.database.path, "alice")) == 40


def _accounts(config: Config) -> list[str]:
    """Every row of the database but the import form's record of refused passwords
    (kept for its throttle, as failed logins are)."""
    return [line for line in dump(config) if '"remote_imports"' not in line]


async def test_a_wrong_password_gives_the_form_back_and_changes_nothing(
    aiohttp_client: Any, private_config: Config
) -> None:
    ui = await _client(aiohttp_client, private_config)
    csrf = await sign_in(ui)
    before = dump(private_config)
    with FlakyGpodder() as remote:
        response = await _post(ui, csrf, remote.base, password="wrong-password-1")
        text = await response.text()
    assert response.status == 400
    assert "That server refused this user name and password" in text
    assert "Nothing was changed." in text
    assert f'value="{remote.base}"' in text  # the form keeps what was typed...
    assert "wrong-password-1" not in text  # ...but never the password
    assert _accounts(private_config) == before


async def test_the_page_refuses_a_private_address_and_says_who_can_import_from_it(
    aiohttp_client: Any, config: Config
) -> None:
    """A LAN server is the usual case: alice is told to ask an admin (or to use the
    command on the server), never to check the address."""
    ui = await _client(aiohttp_client, config)
    csrf = await sign_in(ui)
    before = dump(config)
    with FlakyGpodder() as remote:
        response = await _post(ui, csrf, remote.base)
        text = await response.text()
        assert remote.calls == []
    assert response.status == 403
    # Not allowed, and no more: never which address it is or resolves to.
    assert "This address is not allowed." in text and "public address" not in text
    assert "Ask an admin of this podsync to run the import for you" in text
    assert "podsync user import-from" in text
    assert "Check the address" not in text
    assert "As an admin, you may import" not in text
    # Nothing changed but the count of alice's fetches of the minute (the refusal
    # stands for a fetch).
    after = [line for line in dump(config) if not line.startswith('INSERT INTO "user_fetches"')]
    assert after == before


async def test_an_admin_imports_from_a_private_address_and_the_form_says_so(
    aiohttp_client: Any, config: Config
) -> None:
    async def seed(accounts: Any) -> None:
        await accounts.add_user("root", PASSWORD, admin=True)

    await with_accounts(config, seed)
    ui = await _client(aiohttp_client, config)
    csrf = await sign_in(ui, "root")
    form = await (await ui.get("/ui/transfer")).text()
    assert "As an admin, you may import from a server on this machine or on your own" in form
    with FlakyGpodder(count=10, page=10, fail_at=None) as remote:
        response = await _post(ui, csrf, remote.base)
        assert response.status == 303, await response.text()
        text = await finished(ui, response.headers["Location"])
    assert "Episode actions: 10 added, 0 already there, 0 skipped." in text
    assert len(stored_actions(config.database.path, "root")) == 10


def _many_actions(count: int) -> list[dict[str, Any]]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        {
            "podcast": f"https://p{n % 50}.example/feed.xml",
            "episode": f"https://p{n % 50}.example/{n}.mp3",
            "action": "play",
            "timestamp": (start + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S"),
            "started": 0,
            "position": n % 3600,
            "total": 3600,
        }
        for n in range(count)
    ]


@pytest.mark.slow
def test_a_big_import_from_the_page_does_not_stall_other_users(
    make_config: MakeConfig, seeded_users: tuple[str, ...], serve_process: Any
) -> None:
    base = serve_process(make_config(feeds={"allow_private": True})).url
    alice = Browser(base)
    count = 50_000  # one answer, as oPodSync and Nextcloud send them
    remote = FlakyGpodder(page=count, fail_at=None, items=_many_actions(count))
    with remote, bob_ticking(base) as ticker:
        started = time.perf_counter()
        status, location = alice.start_import(remote.base)
        assert status == 303, location
        text = alice.finished(location, within_s=600)
        took = time.perf_counter() - started
    assert f"Episode actions: {count:,} added, 0 already there, 0 skipped." in text
    assert_not_stalled(ticker, f"an import of {count} actions from the web UI ({took:.1f} s)")
