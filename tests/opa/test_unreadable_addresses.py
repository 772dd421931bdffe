"""Addresses urllib will not read, or that are not UTF-8, are answered, never a 500.

Anyone can send a Host header with a bracket left open ("[::1") or an IPv4 address in
brackets, and a trusted proxy passes an X-Forwarded-Host on as it came. The home page
and every web UI form read the server's own address from them. Python releases also
differ on the brackets urllib refuses: the CVE-2024-11168 fix, in Debian 12's 3.11.2
and in 3.11.11, 3.12.8 and 3.13.1, refuses "h,[::1]" and "a[::1]", which older
releases read. So a feed or episode URL stored under one release can be one that
another release refuses when a page names it. A Host byte that is not UTF-8 is shown
as U+FFFD. Each case here gets a page or a 403, on every release.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from urllib.parse import urlencode, urlsplit

import pytest

from podsync.config import Config
from podsync.web.ui.render import file_name, host_and_path
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.gpodder_support import Answer, call

# Refused by urllib on every release ("[::1", "h]", "[1.2.3.4]") or on the patched
# ones only (the rest).
HOSTS = ["[::1", "h]", "[1.2.3.4]", "h,[::1]", "a[::1]:80", "[::1]x"]
FORM = "application/x-www-form-urlencoded"


def sign_in(base: str, origin: str | None, **headers: str) -> Answer:
    body = urlencode({"username": "alice", "password": PASSWORD}).encode()
    if origin is not None:
        headers["Origin"] = origin
    return call(base, "POST", "/ui/login", body, **{"Content-Type": FORM, **headers})


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> ServeProcess:
    return serve_process(config)


@pytest.mark.parametrize("host", HOSTS)
def test_a_host_header_urllib_refuses_gets_the_pages_and_the_origin_check(
    server: ServeProcess, host: str
) -> None:
    home = call(server.url, "GET", "/", Host=host)
    assert home.status == 200, home.body
    assert f"<code>http://{escape(host)}</code>".encode() in home.body
    page = call(server.url, "GET", "/ui/login", Host=host)
    assert page.status == 200, page.body
    foreign = sign_in(server.url, "http://evil.example", Host=host)
    assert foreign.status == 403, foreign.body
    assert b"Nothing was changed" in foreign.body
    assert "Set-Cookie" not in foreign.headers
    # No Origin at all (an older browser, curl): the form is taken as it always was.
    signed_in = sign_in(server.url, None, Host=host)
    assert signed_in.status == 303, signed_in.body
    assert "Traceback" not in server.output()


def test_a_host_header_that_is_not_utf8_is_shown_replaced(
    server: ServeProcess, config: Config
) -> None:
    # http.client sends a header's text as Latin-1: the byte 0xE9, not UTF-8.
    home = call(server.url, "GET", "/", Host="caf\xe9.example")
    assert home.status == 200, home.body
    assert "<code>http://caf\ufffd.example</code>".encode() in home.body
    signed_in = sign_in(server.url, None, Host="caf\xe9.example")
    assert signed_in.status == 303, signed_in.body
    cookie = signed_in.headers["Set-Cookie"].split(";")[0]
    overview = call(server.url, "GET", "/ui/", Host="caf\xe9.example", Cookie=cookie)
    assert overview.status == 200, overview.body
    assert "caf\ufffd.example".encode() in overview.body
    assert "Traceback" not in server.output()


@pytest.mark.parametrize("host", ["[::1", "[1.2.3.4]", "a[::1]", "caf\xe9.example"])
def test_a_forwarded_host_urllib_refuses_or_not_utf8_from_a_trusted_proxy(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
    host: str,
) -> None:
    proxied = serve_process(make_config(server={"trusted_proxies": ["127.0.0.1"]}))
    forwarded = {"X-Forwarded-Host": host, "X-Forwarded-Proto": "https"}
    home = call(proxied.url, "GET", "/", **forwarded)
    assert home.status == 200, home.body
    shown = host.encode("latin-1").decode("utf-8", "replace")  # as sent, as read
    assert f"<code>https://{escape(shown)}</code>".encode() in home.body
    foreign = sign_in(proxied.url, "https://evil.example", **forwarded)
    assert foreign.status == 403, foreign.body
    assert "Traceback" not in proxied.output()


@pytest.mark.parametrize(
    "url", ["http://[::1/show/1.mp3", "http://h,[::1]/show/1.mp3", "http://[10.0.0.1]/1.mp3"]
)
def test_a_stored_url_urllib_refuses_is_named_by_itself(url: str) -> None:
    # A feed or episode with no title is named by its host and path, or by its file
    # name; where this release's urllib refuses the URL, by the URL itself. The first
    # is refused on every release.
    try:
        urlsplit(url)
    except ValueError:
        assert host_and_path(url) == url
        assert file_name(url) == url
    else:
        assert file_name(url) == "1.mp3"
    assert host_and_path("http://feeds.example/show/") == "feeds.example/show"
