"""The Import and export page's "Import from another server" form, over HTTP on the
real app: the import runs, the answer is a redirect to a GET that shows the report
(reloading it imports nothing), a wrong password changes nothing, and the page
connects only to public addresses unless [feeds] allow_private says otherwise."""

from __future__ import annotations

import http.cookiejar
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.web.app import create_app
from tests.cli_support import dump, stored
from tests.conftest import PASSWORD, MakeConfig, with_accounts
from tests.remote_peers import FEEDS, REMOTE_PASSWORD, FlakyGpodder, stored_actions
from tests.test_loop_stalls import assert_not_stalled, bob_ticking
from tests.test_webui_http import CSRF, sign_in


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


async def test_the_form_imports_and_redirects_to_its_report(
    aiohttp_client: Any, private_config: Config
) -> None:
    ui = await _client(aiohttp_client, private_config)
    csrf = await sign_in(ui)
    with FlakyGpodder(count=40, page=10, fail_at=None) as remote:
        response = await _post(ui, csrf, remote.base)
        assert response.status == 303, await response.text()
        location = response.headers["Location"]
        assert location.startswith("/ui/transfer?imported=")
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
        text = await (await ui.get(again.headers["Location"])).text()
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
        text = await (await ui.get(response.headers["Location"])).text()
        assert "Import stopped half way" in text
        assert "the answer was cut off" in text
        assert len(stored_actions(private_config.database.path, "alice")) == 20
        remote.fail_at = None
        response = await _post(ui, csrf, remote.base)
        text = await (await ui.get(response.headers["Location"])).text()
    assert "Episode actions: 20 added, 20 already there, 0 skipped." in text
    assert len(stored_actions(private_config.database.path, "alice")) == 40


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
    assert dump(private_config) == before


async def test_the_page_reaches_only_public_addresses_by_default(
    aiohttp_client: Any, config: Config
) -> None:
    ui = await _client(aiohttp_client, config)
    csrf = await sign_in(ui)
    before = dump(config)
    with FlakyGpodder() as remote:
        response = await _post(ui, csrf, remote.base)
        text = await response.text()
        assert remote.calls == []
    assert response.status == 502
    assert "Nothing could be read" in text
    assert "127.0.0.1 is not a public address" in text
    assert dump(config) == before


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


class _Browser:
    """A form-posting HTTP client with a cookie jar, as a browser signs in."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=120) as resp:
            text: str = resp.read().decode()
            return text

    def post(self, path: str, form: dict[str, str]) -> str:
        data = urllib.parse.urlencode(form).encode()
        req = urllib.request.Request(  # noqa: S310 - loopback
            self.base + path, data=data, headers={"Origin": self.base}
        )
        with self.opener.open(req, timeout=600) as resp:
            text: str = resp.read().decode()
            return text


@pytest.mark.slow
def test_a_big_import_from_the_page_does_not_stall_other_users(
    make_config: MakeConfig, seeded_users: tuple[str, ...], serve_process: Any
) -> None:
    base = serve_process(make_config(feeds={"allow_private": True})).url
    page = _Browser(base)
    page.post("/ui/login", {"username": "alice", "password": PASSWORD})
    found = CSRF.search(page.get("/ui/transfer"))
    assert found is not None
    count = 50_000  # one answer, as oPodSync and Nextcloud send them
    with FlakyGpodder(page=count, fail_at=None, items=_many_actions(count)) as remote:
        form = {"csrf": found.group(1), "url": remote.base, "username": "remote"}
        form.update(password=REMOTE_PASSWORD, api="gpodder")
        with bob_ticking(base) as ticker, ThreadPoolExecutor(1) as pool:
            started = time.perf_counter()
            text = pool.submit(page.post, "/ui/import-from", form).result()
            took = time.perf_counter() - started
    assert f"Episode actions: {count} added, 0 already there, 0 skipped." in text
    assert_not_stalled(ticker, f"an import of {count} actions from the web UI ({took:.1f} s)")
