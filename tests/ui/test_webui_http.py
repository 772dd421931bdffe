"""The web UI over plain HTTP (aiohttp's test client on the real app), on SQLite and
on PostgreSQL: redirects, the session cookie and its row, headers, the CSRF and
Origin checks, revocation from the CLI's services, and hostile form input."""

from __future__ import annotations

import io
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import FormData
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, with_accounts

pytestmark = pytest.mark.both_engines
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def sign_in(client: TestClient[Any, Any], name: str = "alice") -> str:
    """Sign in; the CSRF token of the new session."""
    response = await client.post(
        "/ui/login",
        data={"username": name, "password": PASSWORD},
        headers={"Origin": str(client.make_url("")).rstrip("/")},
        allow_redirects=False,
    )
    assert response.status == 303, await response.text()
    page = await client.get("/ui/account")
    assert page.status == 200
    found = CSRF.search(await page.text())
    assert found is not None
    return found.group(1)


async def feeds(config: Config, name: str = "alice") -> list[str]:
    async def read(accounts: Any) -> list[str]:
        from podsync.store import subscriptions

        user = await accounts.get_user(name)
        async with accounts.db.read() as conn:
            return [s.feed_url for s in await subscriptions.list_all(conn, user.id, True)]

    result: list[str] = await with_accounts(config, read)
    return result


@pytest.fixture
async def ui(aiohttp_client: Any, config: Config, db_engine: str) -> TestClient[Any, Any]:
    async def seed(accounts: Any) -> None:
        await accounts.add_user("alice", PASSWORD)
        await accounts.add_user("bob", PASSWORD, admin=False)

    await with_accounts(config, seed)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    return client


async def test_ui_without_a_session_redirects_to_sign_in(ui: TestClient[Any, Any]) -> None:
    for path in ("/ui", "/ui/"):
        response = await ui.get(path, allow_redirects=False)
        assert (response.status, response.headers["Location"]) == (303, "/ui/login")
    response = await ui.get("/ui/history?podcast=x", allow_redirects=False)
    location = urlsplit(response.headers["Location"])
    assert location.path == "/ui/login"
    assert parse_qs(location.query) == {"next": ["/ui/history?podcast=x"]}
    home = await (await ui.get("/")).text()
    assert '<a href="/ui/">Sign in</a>' in home


async def test_the_session_cookie_row_and_headers(ui: TestClient[Any, Any], config: Config) -> None:
    response = await ui.post(
        "/ui/login", data={"username": "alice", "password": PASSWORD}, allow_redirects=False
    )
    assert response.status == 303
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith("podsync_ui=")
    for attribute in ("HttpOnly", "Path=/ui", "SameSite=Strict"):
        assert attribute in cookie
    assert "Secure" not in cookie  # plain HTTP, no trusted proxy
    page = await ui.get("/ui/")
    assert page.status == 200
    assert page.headers["Cache-Control"] == "no-store"
    csp = page.headers["Content-Security-Policy"]
    assert "img-src 'self' data:;" in csp and "frame-ancestors 'none'" in csp
    # Script: the UI's own files only (htmx and the player), never inline or eval.
    assert "script-src 'self';" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    html = await page.text()
    # The UI's two script files, nothing inline.
    assert re.findall(r"<script[^>]*>(.*?)</script>", html, re.S) == ["", ""]
    assert all(src.startswith("/ui/static/") for src in re.findall(r'<script src="([^"]+)"', html))
    # The session is a row: a second app on the same database (another process, a
    # restart) knows it.
    token = ui.session.cookie_jar.filter_cookies(ui.make_url("/ui/"))["podsync_ui"].value
    async with SecondApp(config) as other:
        again = await other.get("/ui/", headers={"Cookie": f"podsync_ui={token}"})
        assert again.status == 200 and "Overview" in await again.text()


class SecondApp:
    """A second app on the same database, as another process or a restart would be."""

    def __init__(self, config: Config) -> None:
        from aiohttp.test_utils import TestServer

        self.client: TestClient[Any, Any] = TestClient(TestServer(create_app(config)))

    async def __aenter__(self) -> TestClient[Any, Any]:
        await self.client.start_server()
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()


async def test_secure_cookie_behind_a_trusted_https_proxy(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    config = make_config(server={"trusted_proxies": ["127.0.0.1"]})
    await with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD))
    client = await aiohttp_client(create_app(config))
    response = await client.post(
        "/ui/login",
        data={"username": "alice", "password": PASSWORD},
        headers={
            "X-Forwarded-Proto": "https",
            "X-Forwarded-Host": "pods.example.com",
            "Origin": "https://pods.example.com",
        },
        allow_redirects=False,
    )
    assert response.status == 303, await response.text()
    assert "Secure" in response.headers["Set-Cookie"]


async def test_csrf_and_origin_refusals_change_nothing(
    ui: TestClient[Any, Any], config: Config
) -> None:
    csrf = await sign_in(ui)
    own = str(ui.make_url("")).rstrip("/")
    url = "https://feeds.example.com/x"
    for headers, data in (
        ({"Origin": "https://evil.example"}, {"csrf": csrf, "feed_url": url}),
        ({"Sec-Fetch-Site": "cross-site"}, {"csrf": csrf, "feed_url": url}),
        ({"Origin": own}, {"feed_url": url}),
        ({"Origin": own}, {"csrf": csrf + "x", "feed_url": url}),
    ):
        response = await ui.post("/ui/subscriptions", data=data, headers=headers)
        assert response.status == 403, headers
        assert "Nothing was changed" in await response.text()
    for path in ("/ui/logout", "/ui/account/logout-everywhere", "/ui/devices/remove"):
        response = await ui.post(path, data={"device": "x"}, headers={"Origin": own})
        assert response.status == 403
    assert await feeds(config) == []
    assert (await ui.get("/ui/", allow_redirects=False)).status == 200  # still signed in
    response = await ui.post(
        "/ui/subscriptions",
        data={"csrf": csrf, "feed_url": url},
        headers={"Origin": own},
        allow_redirects=False,
    )
    assert response.status == 303
    assert await feeds(config) == [url]


async def test_every_revocation_ends_the_session(ui: TestClient[Any, Any], config: Config) -> None:
    for revoke in (
        lambda a: a.logout("alice"),
        lambda a: a.set_password("alice", PASSWORD),
        lambda a: a.set_enabled("alice", False),
    ):
        await with_accounts(config, lambda a: a.set_enabled("alice", True))
        await sign_in(ui)
        assert (await ui.get("/ui/", allow_redirects=False)).status == 200
        await with_accounts(config, revoke)
        response = await ui.get("/ui/", allow_redirects=False)
        assert response.status == 303
        assert "podsync_ui=" in response.headers.get("Set-Cookie", "")  # forgotten


async def test_a_50_mib_upload_is_refused_with_the_form_and_imports_nothing(
    ui: TestClient[Any, Any], config: Config
) -> None:
    csrf = await sign_in(ui)
    own = str(ui.make_url("")).rstrip("/")
    form = FormData()
    form.add_field("csrf", csrf)
    big = b'<opml version="2.0"><body>' + b" " * (50 * 1024 * 1024) + b"</body></opml>"
    form.add_field("opml", io.BytesIO(big), filename="huge.opml", content_type="text/x-opml")
    response = await ui.post("/ui/import", data=form, headers={"Origin": own})
    assert response.status == 413
    text = await response.text()
    assert "The file is larger than 10 MiB; nothing imported." in text
    assert await feeds(config) == []


async def test_hostile_form_input_never_gives_a_500(
    ui: TestClient[Any, Any], config: Config
) -> None:
    csrf = await sign_in(ui)
    own = str(ui.make_url("")).rstrip("/")
    nasty = ["", "\x00", "\ud800", "x" * 100_000, "../../etc", "<script>", "\uff11\uff12"]
    posts = [
        "/ui/subscriptions",
        "/ui/subscriptions/unsubscribe",
        "/ui/subscriptions/resubscribe",
        "/ui/devices/rename",
        "/ui/devices/remove",
        "/ui/account/password",
        "/ui/import",
        "/ui/import-from",
        "/ui/admin/users",
        "/ui/login",
    ]
    for path in posts:
        for value in nasty:
            data = {
                "csrf": csrf,
                "feed_url": value,
                "sync_id": value,
                "device": value,
                "caption": value,
                "current": value,
                "new": value,
                "again": value,
                "name": value,
                "password": value,
                "username": value,
            }
            if path == "/ui/import-from":  # its own fields (all of them: past 1 MiB)
                data = {"csrf": csrf, "url": value, "username": value}
                data.update(password=value, api=value)
            encoded = {
                k: v.encode("utf-8", "surrogatepass").decode("latin-1") for k, v in data.items()
            }
            response = await ui.post(path, data=encoded, headers={"Origin": own})
            assert response.status < 500, (path, value, response.status)
    for path in (
        "/ui/subscriptions?page=-1&q=%00",
        "/ui/history?before=abc&after=99999999999999999999",
        "/ui/history?podcast=%ff&device=%00",
        "/ui/admin/user?name=..",
        "/ui/nope",
    ):
        response = await ui.get(path)
        assert response.status < 500, path
    response = await ui.post(
        "/ui/import", data=b"not multipart", headers={"Origin": own, "Content-Type": "text/plain"}
    )
    assert response.status < 500
    # Labelled multipart, but not: no boundary it names, a part cut short, a line
    # longer than aiohttp reads. A 400 naming the problem, and nothing is changed.
    part = f'--x\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{csrf}\r\n'
    bodies = [f"csrf={csrf}&feed_url=https://feeds.example.com/x", part, part + "--x", "x" * 70_000]
    for body in bodies:
        for path in [p for p in posts if p != "/ui/admin/users"]:  # alice is no admin: a 403
            response = await ui.post(
                path,
                data=body.encode(),
                headers={"Origin": own, "Content-Type": "multipart/form-data; boundary=x"},
            )
            assert response.status == 400, (path, body, response.status)
            assert "The form could not be read. Nothing was changed." in await response.text()
    assert await feeds(config) == []


async def test_admin_actions_need_an_admin_and_an_admin_cannot_lock_themselves_out(
    ui: TestClient[Any, Any], config: Config
) -> None:
    own = str(ui.make_url("")).rstrip("/")
    csrf = await sign_in(ui, "bob")  # not an admin
    for path in ("/ui/admin/users/disable", "/ui/admin/users/delete", "/ui/admin/users/password"):
        response = await ui.post(
            path,
            data={"csrf": csrf, "name": "alice", "confirm": "alice", "password": "x" * 12},
            headers={"Origin": own},
        )
        assert response.status == 403
    assert (await ui.get("/ui/admin/users")).status == 403
    alice = await with_accounts(config, lambda a: a.get_user("alice"))
    assert alice.enabled
    await with_accounts(config, lambda a: a.set_admin("alice", True))
    csrf = await sign_in(ui, "alice")
    for path, data in (
        ("/ui/admin/users/disable", {"name": "alice"}),
        ("/ui/admin/users/delete", {"name": "alice", "confirm": "alice"}),
    ):
        response = await ui.post(path, data={"csrf": csrf, **data}, headers={"Origin": own})
        assert response.status == 400
        assert "use the CLI" in await response.text()
    assert (await with_accounts(config, lambda a: a.get_user("alice"))).enabled
    response = await ui.post(
        "/ui/admin/users/disable",
        data={"csrf": csrf, "name": "bob"},
        headers={"Origin": own},
        allow_redirects=False,
    )
    assert response.status == 303
    assert not (await with_accounts(config, lambda a: a.get_user("bob"))).enabled
    response = await ui.get("/ui/admin/user?name=nobody")
    assert response.status == 404


async def test_history_pages_walk_both_ways(ui: TestClient[Any, Any], config: Config) -> None:
    from podsync.feeds import url_key
    from podsync.store import episodes
    from podsync.store.episodes import EpisodeAction

    feed = "https://feeds.example.com/show.xml"

    async def seed(accounts: Any) -> None:
        user = await accounts.get_user("alice")
        actions = [
            EpisodeAction(
                0,
                feed,
                url_key(feed),
                f"https://cdn.example.com/ep-{i:03d}.mp3",
                "download",
                1_700_000_000_000_000 + i,
                None,
                None,
                None,
                None,
                None,
            )
            for i in range(120)
        ]
        async with accounts.db.write() as conn:
            batch = await episodes.resolve(conn, user.id, actions)
            await episodes.store(conn, batch, 1_700_000_000_000_000)

    await with_accounts(config, seed)
    await sign_in(ui)
    names = re.compile(r"ep-(\d{3})\.mp3")
    link = re.compile(r'href="(/ui/history\?[^"]+)" rel="(prev|next)"')

    async def page(path: str) -> tuple[list[int], dict[str, str]]:
        text = await (await ui.get(path.replace("&amp;", "&"))).text()
        return [int(n) for n in names.findall(text)], {
            rel: href for href, rel in link.findall(text)
        }

    first, links = await page("/ui/history")
    assert first == list(range(119, 69, -1)) and set(links) == {"next"}
    second, links2 = await page(links["next"])
    assert second == list(range(69, 19, -1)) and set(links2) == {"prev", "next"}
    third, links3 = await page(links2["next"])
    assert third == list(range(19, -1, -1)) and set(links3) == {"prev"}
    back, links4 = await page(links3["prev"])
    assert back == second and set(links4) == {"prev", "next"}
    front, links5 = await page(links4["prev"])
    assert front == first and set(links5) == {"next"}


async def test_a_podcast_page_of_no_subscription_of_yours_is_a_404(
    ui: TestClient[Any, Any],
) -> None:
    csrf = await sign_in(ui, "bob")
    own = str(ui.make_url("")).rstrip("/")
    added = await ui.post(
        "/ui/subscriptions",
        data={"csrf": csrf, "feed_url": "feeds.example.com/show"},  # no scheme: https
        headers={"Origin": own},
    )
    found = re.search(r'href="(/ui/podcasts/[^"]+)"', await added.text())
    assert found is not None and "https://feeds.example.com/show" in await added.text()
    assert (await ui.get(found.group(1))).status == 200
    for path in ("/ui/podcasts/nope", "/ui/podcasts/%00", "/ui/podcasts/" + "9" * 5000):
        response = await ui.get(path)
        assert response.status in (400, 404), (path, response.status)
    await ui.post("/ui/logout", data={"csrf": csrf}, headers={"Origin": own})
    await sign_in(ui, "alice")  # another user: bob's subscription is not hers
    assert (await ui.get(found.group(1))).status == 404
