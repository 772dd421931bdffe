"""Contract section 15: the credentials a browser keeps are not an app.

A browser that once answered podsync's `WWW-Authenticate: Basic` prompt (someone
opened `/subscriptions/alice.opml`) sends those credentials with later requests to
podsync, including form posts another site's page makes. So on the gpodder and
simple APIs a write that a browser marks as made by a page of another site is
refused with 403 before authentication, whatever it carries; such a request never
counts as a failed login; and a GET from such a page does not create a device.
Through real `podsync serve` processes, and in real Chromium.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from podsync.config import Config
from podsync.web.app import create_app
from tests.conftest import PASSWORD, ServeProcess
from tests.support.gpodder_support import basic, call
from tests.support.route_table import live_routes, named, not_covered, writes
from tests.support.ui_browser import browser  # noqa: F401 - a fixture

FEEDS = [f"http://show-{n}.example/feed.xml" for n in range(20)]
EVIL = "https://evil.example/x.xml"
ALICE = basic("alice", PASSWORD)
FOREIGN = [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
]
# Every state-changing route a page could post to, with a body it would accept.
WRITES = [
    ("POST", "/subscriptions/alice/phone1.txt", f"{EVIL}?a=b\r\n".encode()),  # text/plain form
    ("PUT", "/subscriptions/alice/phone1.json", json.dumps([EVIL]).encode()),
    ("POST", "/api/2/subscriptions/alice/phone1.json", json.dumps({"add": [EVIL]}).encode()),
    (
        "POST",
        "/api/2/episodes/alice.json",
        json.dumps([{"podcast": EVIL, "episode": EVIL + "/1.mp3", "action": "download"}]).encode(),
    ),
    ("POST", "/api/2/devices/alice/phone1.json", json.dumps({"caption": "pwned"}).encode()),
    ("POST", "/api/2/sync-devices/alice.json", json.dumps({"synchronize": []}).encode()),
    ("POST", "/api/2/auth/alice/logout.json", b""),
    ("POST", "/api/2/auth/alice/login.json", b""),
]


def test_the_writes_are_every_state_changing_route_of_the_gpodder_layer(
    config: Config,
) -> None:
    """A new gpodder write route fails here until it joins WRITES."""
    served = live_routes(create_app(config), lambda r: named("gpodder.")(r) and writes(r))
    assert not_covered(served, [(method, path) for method, path, _ in WRITES]) == []


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> ServeProcess:
    """A real server where alice's phone1 holds FEEDS."""
    process = serve_process(config)
    put = call(
        process.url,
        "PUT",
        "/subscriptions/alice/phone1.json",
        json.dumps(FEEDS).encode(),
        **ALICE,
    )
    assert put.status == 200, put.body
    return process


def _listed(base: str) -> list[str]:
    answer = call(base, "GET", "/subscriptions/alice.txt", **ALICE)
    assert answer.status == 200, answer.body
    return sorted(answer.body.decode().split())


def _devices(base: str, name: str = "alice") -> list[str]:
    answer = call(base, "GET", f"/api/2/devices/{name}.json", **basic(name, PASSWORD))
    assert answer.status == 200, answer.body
    return sorted(d["id"] for d in answer.json())


def test_a_write_from_another_site_with_saved_basic_credentials_is_refused(
    server: ServeProcess,
) -> None:
    for marks in FOREIGN:
        for method, path, body in WRITES:
            answer = call(
                server.url,
                method,
                path,
                body,
                **ALICE,
                **{"Content-Type": "text/plain"},
                **marks,
            )
            assert answer.status == 403, (marks, method, path, answer.body)
            assert answer.json()["error"] == "Forbidden"
            assert "web page of another site" in answer.json()["description"]
            assert "Set-Cookie" not in answer.headers  # not logged in either
    # Nothing changed: the list, the devices and their captions, the actions.
    assert _listed(server.url) == sorted(FEEDS)
    devices = call(server.url, "GET", "/api/2/devices/alice.json", **ALICE).json()
    assert [(d["id"], d["caption"]) for d in devices] == [("phone1", "phone1")]  # not "pwned"
    episodes = call(server.url, "GET", "/api/2/episodes/alice.json?since=0", **ALICE)
    assert episodes.json()["actions"] == []


def test_a_write_from_another_site_with_no_credentials_is_a_403_not_a_prompt(
    server: ServeProcess,
) -> None:
    # A 401 would make the browser ask for (or send saved) credentials and retry.
    answer = call(
        server.url,
        "POST",
        "/subscriptions/alice/phone1.txt",
        EVIL.encode(),
        **{"Sec-Fetch-Site": "cross-site"},
    )
    assert answer.status == 403
    assert "WWW-Authenticate" not in answer.headers


def test_another_site_cannot_lock_a_user_out(server: ServeProcess) -> None:
    # Wrong credentials sent by a page of another site, far past both lockout
    # thresholds' worth for bob (5), are refused before they are checked.
    for n in range(12):  # different ones: the same one again would count once
        marks = FOREIGN[n % len(FOREIGN)]
        wrong = basic("bob", f"wrong password {n}")
        answer = call(server.url, "POST", "/api/2/auth/bob/login.json", b"", **wrong, **marks)
        assert answer.status == 403, answer.body
    # bob's app still logs in, from the same address, at once.
    login = call(server.url, "POST", "/api/2/auth/bob/login.json", b"", **basic("bob", PASSWORD))
    assert login.status == 200, login.body
    # And none of them was logged as a failed login (what fail2ban reads).
    assert "login failed for user bob" not in server.output()


def test_wrong_credentials_from_an_app_still_count(server: ServeProcess) -> None:
    """The control: without the browser's marks, failures count and lock bob out."""
    for n in range(5):  # different ones: the same one again counts once (a stale phone)
        wrong = basic("bob", f"wrong password {n}")
        assert call(server.url, "POST", "/api/2/auth/bob/login.json", b"", **wrong).status == 401
    locked = call(server.url, "POST", "/api/2/auth/bob/login.json", b"", **basic("bob", PASSWORD))
    assert locked.status in (401, 429), locked.body
    assert server.output().count("login failed for user bob") == 5


@pytest.mark.parametrize(
    "path",
    [
        "/api/2/subscriptions/alice/anything.json?since=0",
        "/subscriptions/alice/anything.opml",
        "/subscriptions/alice/anything.txt",
        "/subscriptions/alice/anything.json",
    ],
)
def test_a_get_from_another_site_does_not_create_a_device(server: ServeProcess, path: str) -> None:
    cookie = call(server.url, "POST", "/api/2/auth/alice/login.json", b"", **ALICE)
    session = {"Cookie": cookie.headers["Set-Cookie"].split(";")[0]}
    for credentials in (ALICE, session):
        for marks in FOREIGN:
            answer = call(server.url, "GET", path, **credentials, **marks)
            assert answer.status == 403, (credentials, marks, answer.body)
            assert "new device" in answer.json()["description"]
    assert _devices(server.url) == ["phone1"]
    # A device that exists is read as usual from such a page (the browser keeps the
    # answer from the page: CORS); an app's own GET still creates the device.
    existing = path.replace("anything", "phone1")
    assert call(server.url, "GET", existing, **ALICE, **FOREIGN[0]).status == 200
    assert call(server.url, "GET", path, **ALICE).status == 200
    assert _devices(server.url) == ["anything", "phone1"]


def test_the_apps_and_the_servers_own_pages_still_write(server: ServeProcess) -> None:
    port = urlsplit(server.url).port
    for n, marks in enumerate(
        [
            {},
            {"Sec-Fetch-Site": "same-origin", "Origin": f"http://127.0.0.1:{port}"},
            {"Sec-Fetch-Site": "none"},
        ]
    ):
        feed = f"http://allowed-{n}.example/feed"
        answer = call(
            server.url, "PUT", "/subscriptions/alice/phone1.txt", feed.encode(), **ALICE, **marks
        )
        assert answer.status == 200, (marks, answer.body)
        assert _listed(server.url) == [feed]


# Real Chromium: the attack as it happened.


class _EvilPage(BaseHTTPRequestHandler):
    """Another site: a page whose form posts to podsync as soon as it loads."""

    html = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.html)))
        self.end_headers()
        self.wfile.write(self.html)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def evil_site() -> Iterator[tuple[str, type[_EvilPage]]]:
    """A page served on 127.0.0.2: another site than podsync's 127.0.0.1."""
    page = type("Page", (_EvilPage,), {})
    httpd = ThreadingHTTPServer(("127.0.0.2", 0), page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{httpd.server_address[1]}/", page
    finally:
        httpd.shutdown()
        httpd.server_close()


FORMS = {
    # The reproduction: a text/plain form whose one field makes a feed URL line.
    "txt": (
        '<form method=post enctype=text/plain action="{base}/subscriptions/alice/phone1.txt">'
        '<input name="https://evil.example/x.xml?a" value="b"></form>'
    ),
    # JSON as text/plain to the v2 API.
    "json": (
        "<form method=post enctype=text/plain"
        ' action="{base}/api/2/subscriptions/alice/phone1.json">'
        '<input name=\'{{"add": ["https://evil.example/x.xml"], "x": "\' value=\'"}}\'></form>'
    ),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_in_chromium_another_sites_form_with_saved_credentials_changes_nothing(
    server: ServeProcess,
    evil_site: tuple[str, type[_EvilPage]],
    browser: Any,  # noqa: F811 - the fixture
    form: str,
) -> None:
    evil_url, page_class = evil_site
    page_class.html = (
        "<!doctype html><title>cute cats</title><body>"
        + FORMS[form].format(base=server.url)
        + "<script>document.forms[0].submit()</script>"
    ).encode()
    context = browser.new_context(http_credentials={"username": "alice", "password": PASSWORD})
    try:
        page = context.new_page()
        # The person opens their OPML link once and the browser keeps the credentials.
        opened = page.goto(f"{server.url}/subscriptions/alice.opml")
        assert opened is not None and opened.status == 200
        # Later, another site's page posts its form to podsync.
        seen: list[tuple[str, dict[str, str], int]] = []
        page.on(
            "response",
            lambda r: (
                seen.append((r.url, r.request.all_headers(), r.status))
                if r.url.startswith(server.url)
                else None
            ),
        )
        page.goto(evil_url)
        page.wait_for_load_state("load")
        page.wait_for_timeout(300)
    finally:
        context.close()
    posts = [(headers, status) for url, headers, status in seen if "/alice/phone1." in url]
    assert posts, seen
    # Every answer to the page's post was a 403, never a 401 that makes the browser
    # send the saved credentials and try again, and nothing changed.
    assert [status for _, status in posts] == [403] * len(posts), posts
    assert _listed(server.url) == sorted(FEEDS)
    if form == "txt":
        # Under the OPML link's path the browser attaches the credentials at once.
        assert posts[0][0].get("authorization", "").startswith("Basic "), posts
