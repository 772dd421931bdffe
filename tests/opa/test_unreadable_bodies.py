"""A body that does not decode as its headers say (a Content-Encoding of gzip or
deflate over bytes that are not) is a 400 on every route that reads one: the JSON
error shape on the APIs, the error page in the web UI. Nothing is stored. A body
that is gzip, as it says, is read as usual."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import re
import sqlite3
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

import pytest

from podsync.config import Config
from podsync.web.app import create_app
from tests.conftest import PASSWORD, ServeProcess, run_cli
from tests.support.gpodder_support import call
from tests.support.replica_http import basic_header
from tests.support.route_table import live_routes, named, not_covered, writes

FEED = "http://bodies.example/feed"
BASIC = {"Authorization": basic_header("alice", PASSWORD)}
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
MESSAGE = "request body could not be read: it does not decode as its headers say"


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> ServeProcess:
    return serve_process(config)


def token(base: str) -> str:
    body = json.dumps({"username": "alice", "password": PASSWORD}).encode()
    answer = call(base, "POST", "/auth/login", body, **JSON)
    assert answer.status == 200, answer.body
    value: str = answer.json()["access_token"]
    return value


# Every API route that reads a body, with what it needs to get that far (checked
# against the route table below).
BODY_ROUTES = [
    ("POST", "/api/2/episodes/alice.json", "basic"),
    ("PUT", "/subscriptions/alice/phone.json", "basic"),
    ("PUT", "/subscriptions/alice/phone.opml", "basic"),
    ("PUT", "/subscriptions/alice/phone.txt", "basic"),
    ("POST", "/subscriptions/alice/phone.txt", "basic"),
    ("POST", "/api/2/subscriptions/alice/phone.json", "basic"),
    ("POST", "/api/2/devices/alice/phone.json", "basic"),
    ("POST", "/api/2/sync-devices/alice.json", "basic"),
    ("POST", "/index.php/apps/gpoddersync/subscription_change/create", "basic"),
    ("POST", "/index.php/apps/gpoddersync/episode_action/create", "basic"),
    ("POST", "/index.php/login/v2/poll", "form"),
    ("POST", "/api/v1/sync", "bearer"),
    ("POST", "/auth/login", "json"),
    ("POST", "/auth/refresh", "json"),
]
# The API's writes that read no body, whatever one says.
NO_BODY = {
    ("POST", "/api/2/auth/{username}/login.json"),
    ("POST", "/api/2/auth/{username}/logout.json"),
    ("POST", "/index.php/login/v2"),
}


def api_routes(base: str) -> list[tuple[str, str, dict[str, str]]]:
    needs = {
        "basic": BASIC,
        "form": FORM,
        "json": JSON,
        "bearer": {"Authorization": f"Bearer {token(base)}", **JSON},
    }
    return [(method, path, needs[need]) for method, path, need in BODY_ROUTES]


def test_the_body_routes_are_every_api_route_that_reads_a_body(config: Config) -> None:
    """A new API route that reads a body fails here until it joins BODY_ROUTES (or
    NO_BODY); the web UI's forms have their own test below."""
    served = live_routes(create_app(config), lambda r: writes(r) and not named("ui.")(r))
    assert not_covered(served - NO_BODY, [(method, path) for method, path, _ in BODY_ROUTES]) == []


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_an_api_body_that_does_not_decode_is_a_400_and_stores_nothing(
    server: ServeProcess, encoding: str
) -> None:
    for method, path, headers in api_routes(server.url):
        answer = call(
            server.url, method, path, b"not compressed", **headers, **{"Content-Encoding": encoding}
        )
        assert answer.status == 400, (path, answer.body)
        assert answer.json() == {"error": "Bad request", "description": MESSAGE}, path
    listed = call(server.url, "GET", "/subscriptions/alice.txt", **BASIC)
    assert (listed.status, listed.body) == (200, b"")
    # Nor a traceback: not podsync's, nor aiohttp's as it reads the rest of the body.
    assert "Traceback" not in server.output()


def test_a_web_ui_form_that_does_not_decode_is_the_error_page(server: ServeProcess) -> None:
    body = f"username=alice&password={PASSWORD}".encode()
    refused = call(server.url, "POST", "/ui/login", body, **FORM, **{"Content-Encoding": "gzip"})
    assert refused.status == 400, refused.body
    assert b"The form could not be read. Nothing was changed." in refused.body
    assert "Set-Cookie" not in refused.headers
    signed_in = call(
        server.url, "POST", "/ui/login", gzip.compress(body), **FORM, **{"Content-Encoding": "gzip"}
    )
    assert signed_in.status == 303, signed_in.body
    assert "Traceback" not in server.output()


def test_a_gzip_body_that_is_gzip_is_read(server: ServeProcess) -> None:
    body = gzip.compress(json.dumps([FEED]).encode())
    put = call(
        server.url,
        "PUT",
        "/subscriptions/alice/phone.json",
        body,
        **BASIC,
        **{"Content-Encoding": "gzip"},
    )
    assert put.status == 200, put.body
    listed = call(server.url, "GET", "/subscriptions/alice.txt", **BASIC)
    assert listed.body == f"{FEED}\n".encode()


# Charsets no codec decodes with: a made-up name, and codecs that are not text ones.
BAD_CHARSETS = ["x-bogus", "base64", "rot13"]
FORM_UNREADABLE = b"The form could not be read. Nothing was changed."


def ui_sign_in(base: str) -> tuple[str, str]:
    """alice's web UI session: (Cookie header, CSRF token)."""
    body = urlencode({"username": "alice", "password": PASSWORD}).encode()
    answer = call(base, "POST", "/ui/login", body, **FORM)
    assert answer.status == 303, answer.body
    cookie = answer.headers["Set-Cookie"].split(";")[0]
    page = call(base, "GET", "/ui/account", Cookie=cookie)
    found = re.search(rb'name="csrf" value="([^"]+)"', page.body)
    assert found is not None, page.body
    return cookie, found.group(1).decode()


def multipart(fields: list[tuple[str, str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body of (name, part Content-Type or "", value)."""
    boundary = "podsync-test-boundary"
    out = b""
    for name, content_type, value in fields:
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n'
        if content_type:
            head += f"Content-Type: {content_type}\r\n"
        out += head.encode() + b"\r\n" + value + b"\r\n"
    return out + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def signed_in_forms() -> list[str]:
    """Every web UI form a signed-in person posts (the import reads its own upload,
    whose file is XML that names its own encoding)."""
    from podsync.web.ui.routes import _UI

    return [
        re.sub(r"\{[^}]+\}", "x", path)  # a path parameter: any value routes there
        for method, path, _, options in _UI
        if method == "POST" and not options.get("public") and not options.get("reads_own_body")
    ]


@pytest.mark.parametrize("charset", BAD_CHARSETS)
def test_a_charset_no_codec_decodes_is_a_400_everywhere_and_changes_nothing(
    config: Config,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
    charset: str,
) -> None:
    assert run_cli(config, "user", "admin", "alice").exit_code == 0  # the admin forms too
    server = serve_process(config)
    base = server.url
    # Signing in: the form's own charset.
    login = f"username=alice&password={PASSWORD}".encode()
    form = {"Content-Type": f"application/x-www-form-urlencoded; charset={charset}"}
    refused = call(base, "POST", "/ui/login", login, **form)
    assert refused.status == 400, refused.body
    assert refused.headers["Content-Type"].startswith("text/html")
    assert FORM_UNREADABLE in refused.body
    assert "Set-Cookie" not in refused.headers
    # Every signed-in form: the form's charset, one part's, and the _charset_ field
    # (RFC 7578 4.6) that sets the default of every part.
    cookie, csrf = ui_sign_in(base)
    fields = {"feed_url": FEED, "sync_id": "1", "name": "bob", "device": "phone"}
    for path in signed_in_forms():
        plain = urlencode({"csrf": csrf, **fields}).encode()
        part = multipart(
            [("csrf", "", csrf.encode())]
            + [(k, f"text/plain; charset={charset}", v.encode()) for k, v in fields.items()]
        )
        default = multipart(
            [("_charset_", "", charset.encode()), ("csrf", "", csrf.encode())]
            + [(k, "", v.encode()) for k, v in fields.items()]
        )
        for body, content_type in [(plain, form["Content-Type"]), part, default]:
            answer = call(base, "POST", path, body, **{"Content-Type": content_type}, Cookie=cookie)
            assert answer.status == 400, (path, content_type, answer.status, answer.body[:200])
            assert answer.headers["Content-Type"].startswith("text/html"), path
            assert FORM_UNREADABLE in answer.body, (path, answer.body)
    # The APIs: a JSON (or text, or OPML) body whose charset nobody decodes.
    described = f"request body could not be read: its charset '{charset}' is unknown; send UTF-8"
    for method, path, headers in api_routes(base):
        body = json.dumps([FEED] if path.startswith("/subscriptions/") else {}).encode()
        labelled = {**headers, "Content-Type": f"application/json; charset={charset}"}
        answer = call(base, method, path, body, **labelled)
        assert answer.status == 400, (path, answer.body)
        assert answer.json() == {"error": "Bad request", "description": described}, path
    # Nothing changed: no subscription, alice still admin and enabled, one session.
    listed = call(base, "GET", "/subscriptions/alice.txt", **BASIC)
    assert (listed.status, listed.body) == (200, b"")
    assert call(base, "GET", "/ui/admin/users", Cookie=cookie).status == 200
    assert "Traceback" not in server.output()
    assert "unhandled error" not in server.output()


def test_a_web_ui_page_that_fails_is_a_page_with_the_request_id(
    server: ServeProcess, config: Config
) -> None:
    """A fault no handler expects (here a table someone dropped by hand) on a web UI
    page answers the UI's page: the layout, the message, the request id; so does a
    method a UI path does not take. The APIs keep their JSON shape."""
    cookie, _ = ui_sign_in(server.url)
    put = call(server.url, "PUT", "/subscriptions/alice/phone.txt", FEED.encode(), **BASIC)
    assert put.status == 200, put.body
    with contextlib.closing(sqlite3.connect(config.database.path)) as db:
        db.execute("DROP TABLE feed_info")
    failed = call(server.url, "GET", "/ui/subscriptions", Cookie=cookie)
    assert failed.status == 500, failed.body
    assert failed.headers["Content-Type"].startswith("text/html")
    request_id = failed.headers["X-Request-ID"]
    page = failed.body.decode()
    assert '<nav aria-label="Main">' in page and "<h1>Something went wrong</h1>" in page
    assert f"quote request id {request_id} to the admin" in page
    assert f"Request id: <code>{request_id}</code>" in page
    assert page.count("Traceback") == 0 and "no such table" not in page
    wrong_method = call(server.url, "PUT", "/ui/login", b"")
    assert wrong_method.status == 405
    assert wrong_method.headers["Content-Type"].startswith("text/html")
    assert "Method PUT is not allowed here" in wrong_method.body.decode()
    api = call(server.url, "PUT", "/auth/login", b"")
    assert (api.status, api.json()["error"]) == (405, "Method not allowed")


def test_an_opml_upload_past_the_read_cap_names_the_10_mib_limit(server: ServeProcess) -> None:
    """Past 128 MiB podsync stops reading an upload: the page still names the limit
    people see, 10 MiB, not an internal buffer size."""
    cookie, csrf = ui_sign_in(server.url)
    head, content_type = multipart([("csrf", "", csrf.encode())])
    head = head[: head.rindex(b"--podsync-test-boundary--")]
    head += (
        b'--podsync-test-boundary\r\nContent-Disposition: form-data; name="opml"; '
        b'filename="huge.opml"\r\nContent-Type: text/x-opml\r\n\r\n'
    )
    size = len(head) + 129 * 1024 * 1024
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        connection.putrequest("POST", "/ui/import")
        for name, value in [
            ("Content-Type", content_type),
            ("Content-Length", str(size)),
            ("Cookie", cookie),
        ]:
            connection.putheader(name, value)
        connection.endheaders()
        connection.send(head)
        chunk = b" " * (1 << 20)
        with contextlib.suppress(OSError):  # the server may stop reading past its cap
            for _ in range(129):
                connection.send(chunk)
        response = connection.getresponse()
        status, body = response.status, response.read().decode()
    finally:
        connection.close()
    assert status == 413, body[:500]
    assert "The file is larger than 10 MiB; nothing imported." in body
    assert "1048576" not in body
    listed = call(server.url, "GET", "/subscriptions/alice.txt", **BASIC)
    assert (listed.status, listed.body) == (200, b"")
    assert "Traceback" not in server.output()
