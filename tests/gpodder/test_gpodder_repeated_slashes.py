"""Contract section 14, "Clocks" (paths): repeated slashes anywhere in `/api/2/` and
`/subscriptions/` paths are routed as one, with no redirect (a redirect turns
OkHttp's POST into a GET). Kasts with a trailing `/` typed after the host sends
`//api/2/...`; a proxy rule or a client template can double any other slash."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from podsync.config import Config
from podsync.web.app import create_app
from tests.conftest import PASSWORD, ServeProcess
from tests.support.gpodder_support import call
from tests.support.replica_http import basic_header
from tests.support.route_table import live_routes, named, not_covered, writes

FEED = "http://slashes.example/feed"
AUTH = {"Authorization": basic_header("alice", PASSWORD)}


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> str:
    url = serve_process(config).url
    put = call(url, "PUT", "/subscriptions/alice/phone.json", json.dumps([FEED]).encode(), **AUTH)
    assert put.status == 200, put.body
    return url


READS = [
    "/api/2/devices/alice.json",
    "/api/2/subscriptions/alice/phone.json?since=0",
    "/api/2/episodes/alice.json?since=0",
    "/api/2/sync-devices/alice.json",
    "/subscriptions/alice.opml",
    "/subscriptions/alice/phone.txt",
]


def test_the_reads_are_every_read_of_the_gpodder_layer(config: Config) -> None:
    """A new gpodder read fails here until it joins READS."""
    served = live_routes(create_app(config), lambda r: named("gpodder.")(r) and not writes(r))
    assert not_covered(served, [("GET", path) for path in READS]) == []


def _doubled(path: str) -> list[str]:
    """The path with its leading slash tripled, each other slash doubled in turn, and
    every slash doubled at once."""
    head, _, query = path.partition("?")
    suffix = "?" + query if query else ""
    spellings = ["//" + head + suffix]
    slashes = [i for i, char in enumerate(head) if char == "/"]
    for i in slashes[1:]:
        spellings.append(head[:i] + "/" + head[i:] + suffix)
    spellings.append(head.replace("/", "//") + suffix)
    return spellings


def _timeless(body: bytes) -> bytes:
    """The body without the OPML export's creation time, which moves on when the
    two reads fall either side of a second."""
    return re.sub(rb"<dateCreated>[^<]*</dateCreated>", b"<dateCreated/>", body)


@pytest.mark.parametrize("path", READS)
def test_reads_with_repeated_slashes_answer_as_the_plain_path(server: str, path: str) -> None:
    expected = call(server, "GET", path, **AUTH)
    assert expected.status == 200, expected.body
    for spelling in _doubled(path):
        answer = call(server, "GET", spelling, **AUTH)
        assert answer.status == 200, (spelling, answer.body)
        assert "Location" not in answer.headers
        if "since=" not in path:  # a stream's timestamp moves on; the rest is the same
            assert _timeless(answer.body) == _timeless(expected.body), spelling


def test_writes_with_repeated_slashes_are_applied_not_redirected(server: str) -> None:
    added = call(
        server,
        "POST",
        "/api//2/subscriptions//alice///laptop.json",
        json.dumps({"add": ["http://added.example/feed"]}).encode(),
        **AUTH,
    )
    assert added.status == 200, added.body
    assert added.json()["update_urls"] == []
    put = call(
        server,
        "PUT",
        "///subscriptions//alice//tablet.txt",
        b"http://put.example/feed\n",
        **AUTH,
    )
    assert put.status == 200, put.body
    devices = call(server, "GET", "//api/2//devices/alice.json", **AUTH)
    assert sorted(d["id"] for d in devices.json()) == ["laptop", "phone", "tablet"]
    listed = call(server, "GET", "/subscriptions//alice/tablet.txt", **AUTH)
    assert listed.body == b"http://put.example/feed\n"


def test_other_paths_keep_their_slashes(server: str) -> None:
    # Only the gpodder layer is forgiving; the OPA API and the rest stay exact.
    for path in ("/api/v1//subscriptions", "//healthz", "/api//v1/sync"):
        answer = call(server, "GET", path)
        assert answer.status == 404, (path, answer.body)
        assert answer.json()["error"] == "Not found"
