"""Contract section 14, "Cookie-only writes come from the apps, not from web pages".

The gpodder layer reads every body as JSON whatever its Content-Type (the apps need
that), and its session cookie is `SameSite=Lax`: a page on a sibling subdomain or
port could POST `text/plain` with the user's cookie. A state-changing request that a
cookie alone authenticates and that a browser marks as coming from another site
(`Sec-Fetch-Site: cross-site|same-site`, or an `Origin` that is not the server's
own) is refused with 403 in the error shape. Apps send neither header; gPodder's own
library (mygpoclient) and the AntennaPod replica keep working through real
`podsync serve` processes. Section 15 widens the rule to every credential a browser
attaches by itself (tests/gpodder/test_browser_saved_credentials.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from mygpoclient import api

from podsync.config import Config
from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.antennapod_replica import AntennaPod
from tests.support.gpodder_support import call
from tests.support.replica_http import basic_header
from tests.support.route_table import live_routes, named, not_covered, writes

FEED = "http://listed.example/feed"
EVIL = "http://evil.example/feed"


def session_cookie(base: str, name: str = "alice") -> str:
    """Log in like AntennaPod; the `Cookie` header that carries the session."""
    login = call(
        base,
        "POST",
        f"/api/2/auth/{name}/login.json",
        b"",
        Authorization=basic_header(name, PASSWORD),
    )
    assert login.status == 200, login.body
    value = login.headers["Set-Cookie"].split(";")[0]
    assert value.startswith("sessionid=")
    return value


def listed(base: str, cookie: str) -> str:
    answer = call(base, "GET", "/subscriptions/alice.txt", Cookie=cookie)
    assert answer.status == 200, answer.body
    return answer.body.decode()


# Every state-changing route of the layer, with a body it would accept.
WRITES = [
    ("POST", "/subscriptions/alice/phone.txt", EVIL.encode()),  # the page's text/plain form
    ("PUT", "/subscriptions/alice/phone.json", json.dumps([EVIL]).encode()),
    ("POST", "/api/2/subscriptions/alice/phone.json", json.dumps({"add": [EVIL]}).encode()),
    (
        "POST",
        "/api/2/episodes/alice.json",
        json.dumps([{"podcast": EVIL, "episode": EVIL + "/1.mp3", "action": "download"}]).encode(),
    ),
    ("POST", "/api/2/devices/alice/phone.json", json.dumps({"caption": "pwned"}).encode()),
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
) -> str:
    return serve_process(config).url


@pytest.fixture
def cookie(server: str) -> str:
    """alice's session, with one feed on her list."""
    value = session_cookie(server)
    put = call(server, "PUT", "/subscriptions/alice/phone.txt", FEED.encode(), Cookie=value)
    assert put.status == 200, put.body
    return value


def _foreign_marks(server: str) -> list[dict[str, str]]:
    port = urlsplit(server).port or 0
    return [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # a sibling subdomain
        {"Origin": "http://evil.example"},
        {"Origin": f"http://127.0.0.1:{port + 1}"},  # a sibling port: same site, not us
        {"Origin": f"https://127.0.0.1:{port}"},  # another scheme
        {"Origin": "null"},  # a sandboxed frame or a data: page
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"},
    ]


def test_cookie_only_writes_marked_by_a_browser_as_foreign_are_refused(
    server: str, cookie: str
) -> None:
    for marks in _foreign_marks(server):
        for method, path, body in WRITES:
            answer = call(
                server,
                method,
                path,
                body,
                Cookie=cookie,
                **{"Content-Type": "text/plain"},
                **marks,
            )
            assert answer.status == 403, (marks, method, path, answer.body)
            assert answer.headers["Content-Type"].startswith("application/json")
            assert answer.headers["X-Request-ID"]
            error = answer.json()
            assert error["error"] == "Forbidden"
            assert "web page of another site" in error["description"]
            assert "Set-Cookie" not in answer.headers
    # Nothing changed: the list, the devices, the episode actions, the session.
    assert listed(server, cookie) == FEED + "\n"
    devices = call(server, "GET", "/api/2/devices/alice.json", Cookie=cookie)
    assert devices.status == 200, devices.body
    assert [d["caption"] for d in devices.json()] == ["phone"]  # not "pwned"
    episodes = call(server, "GET", "/api/2/episodes/alice.json?since=0", Cookie=cookie)
    assert episodes.json()["actions"] == []


def test_reads_and_the_apps_own_requests_still_work(server: str, cookie: str) -> None:
    port = urlsplit(server).port
    # A cross-site GET is a read (a browser's CORS rules keep its answer from the page).
    read = call(
        server, "GET", "/subscriptions/alice.txt", Cookie=cookie, **{"Sec-Fetch-Site": "cross-site"}
    )
    assert read.status == 200
    allowed: list[dict[str, str]] = [
        {},  # the apps: neither header
        {"Sec-Fetch-Site": "same-origin", "Origin": f"http://127.0.0.1:{port}"},
        {"Sec-Fetch-Site": "none"},  # typed by the user
        # An app's Basic credentials, with neither header.
        {"Authorization": basic_header("alice", PASSWORD)},
    ]
    for n, marks in enumerate(allowed):
        feed = f"http://allowed-{n}.example/feed"
        answer = call(
            server, "PUT", "/subscriptions/alice/phone.txt", feed.encode(), Cookie=cookie, **marks
        )
        assert answer.status == 200, (marks, answer.body)
        assert listed(server, cookie) == feed + "\n"


def test_own_origin_behind_a_proxy_counts_as_own(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> None:
    # public_url names the address the browser sees; a trusted proxy's forwarded
    # host and scheme say it too. An untrusted peer's forwarded headers count for nothing.
    proxied = serve_process(
        make_config(
            server={"public_url": "https://pods.example.org", "trusted_proxies": ["127.0.0.1"]}
        )
    ).url
    cookie = session_cookie(proxied)
    forwarded = {"X-Forwarded-Host": "sync.example.net", "X-Forwarded-Proto": "https"}
    for origin, extra, status in [
        ("https://pods.example.org", {}, 200),
        ("https://pods.example.org:443", {}, 200),
        ("https://sync.example.net", forwarded, 200),
        ("https://sync.example.net", {}, 403),
        ("http://pods.example.org", {}, 403),
        ("https://evil.example.org", forwarded, 403),
    ]:
        answer = call(
            proxied,
            "PUT",
            "/subscriptions/alice/phone.txt",
            FEED.encode(),
            Cookie=cookie,
            Origin=origin,
            **extra,
        )
        assert answer.status == status, (origin, extra, answer.body)


def test_forwarded_headers_from_an_untrusted_peer_do_not_make_an_origin_own(
    server: str, cookie: str
) -> None:
    answer = call(
        server,
        "PUT",
        "/subscriptions/alice/phone.txt",
        EVIL.encode(),
        Cookie=cookie,
        Origin="https://evil.example",
        **{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"},
    )
    assert answer.status == 403
    assert listed(server, cookie) == FEED + "\n"


def test_mygpoclient_writes_on_its_session_cookie(server: str) -> None:
    """urllib answers only three Basic challenges per client object; past them every
    write rides on the session cookie alone, with no Origin: it must keep working."""
    client = api.MygPodderClient("alice", PASSWORD, server)
    assert client.update_device_settings("laptop", "Laptop", "laptop") is True
    for n in range(6):
        feed = f"http://mygpo-{n}.example/feed"
        result = client.update_subscriptions("laptop", [feed], [])
        assert result.update_urls == []
        action = api.EpisodeAction(
            feed, feed + "/1.mp3", "download", "laptop", "2026-05-06T07:08:09"
        )
        assert client.upload_episode_actions([action])
    assert client.put_subscriptions("laptop", ["http://final.example/feed"]) is True
    assert client.get_subscriptions("laptop") == ["http://final.example/feed"]


def test_antennapod_syncs_on_its_session_cookie(server: str) -> None:
    phone = AntennaPod(server, "alice", PASSWORD, "pixel")
    phone.setup("Pixel")
    phone.subscribe(FEED)
    phone.play(FEED, FEED + "/1.mp3", 120, "2026-02-03T04:05:06")
    phone.sync()
    phone.sync()
    assert "POST /api/2/episodes/alice.json" in phone.calls
    assert phone.jar.header_for(server + "/api/2/episodes/alice.json")
