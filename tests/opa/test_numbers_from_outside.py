"""Numbers from outside (contract section 16, "No 500 from a number"): a value that
Python's `isdigit()` accepts but `int()` refuses ("²", "①"), digits of another
script ("٣"), a number past what a 64-bit column holds, in any query parameter, form
field, path segment or forwarded header, is a 400 or ignored, never a 500, on both
engines. The findings are checked one by one, then a walk sends such values to every
route the app serves, under every name the web layer reads, so a new route or a new
parameter is covered without a new test."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from podsync.numbers import INT64_MAX, INT64_MIN, parse_int
from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, ServeProcess, run_cli
from tests.opa.test_unreadable_bodies import ui_sign_in
from tests.support.gpodder_support import call
from tests.support.replica_http import basic_header

pytestmark = pytest.mark.both_engines

FEED = "http://numbers.example/feed"
BASIC = {"Authorization": basic_header("alice", PASSWORD)}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
NC = "/index.php/apps/gpoddersync"
# Trusted as a proxy (its X-Forwarded-* count), and never locked out by the walk's
# sign-ins under names such as "²".
SERVER: dict[str, Any] = {
    "server": {"trusted_proxies": ["127.0.0.1"]},
    "auth": {"login_max_failures_per_address": 1_000_000},
}
# Each is a kind of number that once answered 500 somewhere, or could.
HOSTILE = [
    "²",  # isdigit() but not int()
    "①",
    "٣",  # int() reads it; no person means it
    "².1",  # the history's <time>.<seq> keys, each half
    "1.²",
    "9223372036855",  # seconds whose microseconds pass 64 bits
    "9223372036854775808",  # 2**63: past SQLite's INTEGER and PostgreSQL's bigint
    "-9223372036854775809",
]


@pytest.mark.parametrize(
    ("text", "low", "high", "expected"),
    [
        ("0", 0, INT64_MAX, 0),
        ("42", 0, INT64_MAX, 42),
        ("007", 0, INT64_MAX, 7),
        ("0" * 5000 + "7", 0, INT64_MAX, 7),
        (str(INT64_MAX), 0, INT64_MAX, INT64_MAX),
        (str(INT64_MAX + 1), 0, INT64_MAX, None),
        ("1" * 5000, 0, INT64_MAX, None),
        ("-5", 0, INT64_MAX, None),
        ("-5", INT64_MIN, INT64_MAX, -5),
        (str(INT64_MIN), INT64_MIN, INT64_MAX, INT64_MIN),
        (str(INT64_MIN - 1), INT64_MIN, INT64_MAX, None),
        ("65535", 1, 65535, 65535),
        ("65536", 1, 65535, None),
        ("0", 1, 65535, None),
        *[
            (text, INT64_MIN, INT64_MAX, None)
            for text in [
                "",
                "-",
                "--1",
                "+5",
                " 5",
                "5 ",
                "1_000",
                "0x10",
                "1e3",
                "1.0",
                "²",
                "①",
                "٣",
                "\uff11\uff12",  # fullwidth digits
                "-²",
                "\x00",
            ]
        ],
    ],
)
def test_parse_int_reads_ascii_digits_within_the_range_only(
    text: str, low: int, high: int, expected: int | None
) -> None:
    assert parse_int(text, low, high) == expected


@pytest.fixture
def server(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> Iterator[ServeProcess]:
    """alice (an admin) with a device, a subscription, an episode action and an app
    password, on a server that trusts 127.0.0.1 as its proxy."""
    config = make_config(**SERVER)
    assert run_cli(config, "user", "admin", "alice").exit_code == 0
    assert run_cli(config, "user", "app-passwords", "alice", "--create", "kasts").exit_code == 0
    process = serve_process(config)
    put = call(
        process.url, "PUT", "/subscriptions/alice/phone.json", json.dumps([FEED]).encode(), **BASIC
    )
    assert put.status == 200, put.body
    play = {
        "podcast": FEED,
        "episode": FEED + "/1.mp3",
        "action": "play",
        "device": "phone",
        "timestamp": "2026-11-25T10:00:00",
        "started": 0,
        "position": 60,
        "total": 600,
    }
    posted = call(
        process.url, "POST", "/api/2/episodes/alice.json", json.dumps([play]).encode(), **BASIC
    )
    assert posted.status == 200, posted.body
    yield process
    assert "Traceback" not in process.output()


def access_token(base: str) -> str:
    body = json.dumps({"username": "alice", "password": PASSWORD}).encode()
    answer = call(base, "POST", "/auth/login", body, **{"Content-Type": "application/json"})
    token: str = answer.json()["access_token"]
    return token


def sync_id(base: str) -> str:
    token = access_token(base)
    listed = call(base, "GET", "/api/v1/subscriptions", Authorization=f"Bearer {token}").json()
    found: str = listed["results"][0]["sync_id"]
    return found


def utf8(value: str) -> Any:
    """A header value as the bytes curl sends for it (http.client encodes str as latin-1)."""
    return value.encode()


# The findings, one by one ----------------------------------------------------------


@pytest.mark.parametrize("stream", ["subscriptions", "episode_action"])
def test_a_nextcloud_since_past_64_bits_is_a_400_and_the_last_one_that_fits_is_read(
    server: ServeProcess, stream: str
) -> None:
    refused = call(server.url, "GET", f"{NC}/{stream}?since=9223372036855", **BASIC)
    assert refused.status == 400, refused.body
    assert refused.json() == {
        "error": "Bad request",
        "description": "since must be an integer number of seconds up to 9223372036854, "
        "not '9223372036855'",
    }
    for since in ("9223372036854", "-9223372036854775808", "1"):
        read = call(server.url, "GET", f"{NC}/{stream}?since={since}", **BASIC)
        assert read.status == 200, (since, read.body)
    everything = call(server.url, "GET", f"{NC}/subscriptions?since=-5", **BASIC)
    assert everything.json()["add"] == [FEED]


UI_QUERIES = [
    "/ui/subscriptions?page=²",
    "/ui/subscriptions?page=①",
    "/ui/subscriptions?page=٣",
    "/ui/history?before=².1",
    "/ui/history?after=1.²",
    "/ui/history?before=9223372036854775808.1",
    "/ui/podcasts/{id}?page=²",
]


def without_csrf(page: bytes) -> bytes:
    return re.sub(rb'name="csrf" value="[^"]+"', b"", page)


def test_a_ui_page_number_or_history_key_that_is_no_number_shows_the_first_page(
    server: ServeProcess,
) -> None:
    cookie, _ = ui_sign_in(server.url)
    podcast = sync_id(server.url)
    for query in UI_QUERIES:
        path, _, asked = query.format(id=podcast).partition("?")
        first = call(server.url, "GET", path, Cookie=cookie)
        assert first.status == 200, first.body
        answer = call(server.url, "GET", f"{path}?{quote(asked, safe='=')}", Cookie=cookie)
        assert answer.status == 200, (query, answer.body)
        assert without_csrf(answer.body) == without_csrf(first.body), query


def test_a_page_past_the_end_of_the_subscriptions_goes_to_the_last_page(
    server: ServeProcess,
) -> None:
    cookie, _ = ui_sign_in(server.url)
    for page in ("2", "999999", "1000000", str(INT64_MAX)):
        answer = call(server.url, "GET", f"/ui/subscriptions?page={page}", Cookie=cookie)
        assert (answer.status, answer.headers["Location"]) == (302, "/ui/subscriptions"), page


def test_a_forwarded_port_that_is_no_port_is_ignored(server: ServeProcess) -> None:
    for port in ["²", "①", "٣", "0", "65536", "99999999999999999999", "-443", "80 80"]:
        header = {"X-Forwarded-Host": "podcasts.example", "X-Forwarded-Port": utf8(port)}
        home = call(server.url, "GET", "/", **header)
        assert home.status == 200, (port, home.body)
        assert b"<code>http://podcasts.example</code>" in home.body, port
        flow = call(server.url, "POST", "/index.php/login/v2", b"", **header)
        assert flow.status == 200, (port, flow.body)
        login = flow.json()["login"]
        assert login.startswith("http://podcasts.example/index.php/login/v2/flow/"), port
    # A port that is one still counts.
    header = {"X-Forwarded-Host": "podcasts.example", "X-Forwarded-Port": "8443"}
    kept = call(server.url, "POST", "/index.php/login/v2", b"", **header)
    assert kept.json()["login"].startswith("http://podcasts.example:8443/index.php/login/v2/flow/")


def test_a_host_whose_port_is_no_port_is_sent_to_the_grant_page_by_its_path(
    server: ServeProcess,
) -> None:
    """The browser's step of a Login Flow redirects to the grant page on the address
    the browser used; a Host header no URL can hold names it by its path alone."""
    flow = "/index.php/login/v2/flow/" + "f" * 32
    for host in ["podcasts.example:²", "podcasts.example:99999", "[::1"]:
        answer = call(server.url, "GET", flow, Host=utf8(host))
        assert (answer.status, answer.headers["Location"]) == (303, "/ui/grant/" + "f" * 32)
    fine = call(server.url, "GET", flow, Host="podcasts.example:8080")
    assert fine.headers["Location"] == "http://podcasts.example:8080/ui/grant/" + "f" * 32


BIG = ["9223372036854775808", "-9223372036854775809", "1" + "0" * 30, "1e300", "2147483648"]


def test_numbers_past_64_bits_in_uploaded_episode_actions_are_never_a_500(
    server: ServeProcess,
) -> None:
    """Positions and times in the JSON of the gpodder and Nextcloud uploads: an item
    whose play fields pass what podsync keeps (32 bits) is skipped, a time it cannot
    read is the time of receipt; what is stored fits both engines' columns."""
    for number in BIG:
        plays = dict.fromkeys(["started", "position", "total"], "@")
        gpodder = [{"podcast": FEED, "episode": f"{FEED}/big.mp3", "action": "play"}]
        gpodder[0] |= {"device": "phone", "timestamp": "@", **plays}
        nextcloud = [{"podcast": FEED, "episode": f"{FEED}/big.mp3", "guid": "g"}]
        nextcloud[0] |= {"action": "PLAY", "timestamp": "2026-11-25T10:00:00", **plays}
        for path, items in [
            ("/api/2/episodes/alice.json", gpodder),
            (f"{NC}/episode_action/create", nextcloud),
        ]:
            body = json.dumps(items).replace('"@"', number).encode()  # the number as sent
            answer = call(server.url, "POST", path, body, **BASIC)
            assert answer.status == 200, (path, number, answer.body)
    pulled = call(server.url, "GET", "/api/2/episodes/alice.json", **BASIC)
    assert pulled.status == 200, pulled.body
    for action in pulled.json()["actions"]:
        for name in ("started", "position", "total"):
            assert 0 <= action.get(name, 0) <= 2**31 - 1, action


# Every route, every name -----------------------------------------------------------


def names_the_web_layer_reads() -> set[str]:
    """Every query parameter and form field named in podsync/web: what `query.get`,
    `query[...]` and the helpers called as `(request, "name"...)` read."""
    source = Path(__file__).parents[2] / "podsync" / "web"
    pattern = re.compile(r'query(?:\.get\(|\[)\s*"(\w+)"|\(request, "(\w+)"|fields\.get\("(\w+)"')
    found: set[str] = set()
    for path in source.rglob("*.py"):
        for match in pattern.finditer(path.read_text()):
            found.update(group for group in match.groups() if group)
    return found


def test_the_walk_finds_the_names_that_carry_numbers() -> None:
    assert {"since", "limit", "page", "before", "after", "id"} <= names_the_web_layer_reads()


class Walker:
    """Sends the walk's requests over one keep-alive connection (there are thousands),
    each with the credentials its path takes, and keeps every answer past 499."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        self.cookie, self.csrf = ui_sign_in(base)
        self.failures: list[tuple[str, str, str, int]] = []
        self.sent = 0

    def credentials(self, path: str) -> dict[str, str]:
        if path.startswith("/ui"):
            return {"Cookie": self.cookie}
        if path.startswith("/api/v1"):
            return {"Authorization": f"Bearer {self.token}"}
        if path.startswith(("/api/2/", "/subscriptions/", f"{NC}/")):
            return BASIC
        return {}

    def send(
        self, method: str, path: str, what: str, form: dict[str, str] | None = None, **headers: str
    ) -> int:
        body = None
        if form is not None:
            body = urlencode({"csrf": self.csrf, **form}).encode()
            headers = {**FORM, **headers}
        elif method != "GET":
            body = b""
        encoded = {name: utf8(value) for name, value in headers.items()}
        status, location = self._request(method, path, body, {**self.credentials(path), **encoded})
        self.sent += 1
        if status >= 500:
            self.failures.append((method, path, what, status))
        if location.startswith("/ui/login") and path.startswith("/ui"):
            # The walk signed itself out (Sign out, Sign out everywhere): back in.
            self.cookie, self.csrf = ui_sign_in(self.base)
        return status

    def _request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, Any]
    ) -> tuple[int, str]:
        for attempt in range(2):
            try:
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                response.read()
                return response.status, response.headers.get("Location", "")
            except (http.client.HTTPException, OSError):
                self.connection.close()  # the server closed it: once more on a new one
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.connection.close()


def walk_route(
    walker: Walker, method: str, pattern: str, params: dict[str, str], names: list[str]
) -> None:
    """Every hostile value in the query, in the form of a web UI POST, in each path
    parameter and in the headers that carry a port. First in every name at once;
    where that is refused and the same request without them is not (a name read
    first may hide the others), in each name alone."""
    keys = re.findall(r"\{(\w+)[^}]*\}", pattern)
    for key in keys:
        assert key in params, f"{pattern}: a new path parameter; give the walk a value for it"

    def fill(values: dict[str, str]) -> str:
        return re.sub(r"\{(\w+)[^}]*\}", lambda m: quote(values[m.group(1)], safe=""), pattern)

    path = fill(params)
    refused = range(400, 500)
    is_form = method == "POST" and path.startswith("/ui/")
    plain = walker.send(method, path, "as is") in refused
    plain_form = is_form and walker.send(method, path, "an empty form", {}) in refused
    for value in HOSTILE:
        everything = urlencode(dict.fromkeys(names, value))
        hidden = walker.send(method, f"{path}?{everything}", f"query={value}") in refused
        if hidden and not plain:
            for name in names:
                walker.send(method, f"{path}?{urlencode({name: value})}", f"{name}={value}")
        if is_form:
            form = dict.fromkeys(names, value)
            hidden = walker.send(method, path, f"form={value}", form) in refused
            if hidden and not plain_form:
                for name in names:
                    walker.send(method, path, f"form {name}={value}", {name: value})
        for key in keys:
            walker.send(method, fill({**params, key: value}), f"path {key}={value}")
        walker.send(method, path, f"X-Forwarded-Port: {value}", **{"X-Forwarded-Port": value})
        host = f"podcasts.example:{value}"
        walker.send(method, path, f"X-Forwarded-Host: {host}", **{"X-Forwarded-Host": host})
        walker.send(method, path, f"Host: {host}", Host=host)


@pytest.mark.slow  # some 5,000 requests per engine
def test_no_number_anywhere_gives_a_500(server: ServeProcess, make_config: MakeConfig) -> None:
    params = {
        "username": "alice",
        "device": "phone",
        "fmt": "json",
        "sync_id": sync_id(server.url),
        "flow_id": "f" * 32,
        "digest": "a" * 64,  # an image no feed has: a 404 whatever the numbers
        "tail": "nothing-here",
        "ref": "1",  # alice's one episode (the play above)
    }
    app = create_app(make_config(**SERVER))
    routes = sorted(
        {
            (r.method, r.resource.canonical)
            for r in app.router.routes()
            if r.resource is not None
            and r.method != "HEAD"
            and not r.resource.canonical.startswith("//")
        }
    )
    names = sorted(names_the_web_layer_reads())
    walker = Walker(server.url, access_token(server.url))
    try:
        for method, pattern in routes:
            walk_route(walker, method, pattern, params, names)
    finally:
        walker.close()
    assert not walker.failures, walker.failures
    assert walker.sent > 1000  # the walk walked
