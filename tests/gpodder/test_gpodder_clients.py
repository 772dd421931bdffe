"""Real clients against a real `podsync serve`: gPodder's own library (mygpoclient
1.10) over every call it makes, and the AntennaPod and Kasts replicas through whole
sync runs (gpodder spec 10)."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mygpoclient import api
from mygpoclient.http import Unauthorized

from podsync.config import Config
from tests.conftest import PASSWORD, ServeProcess
from tests.support.antennapod_replica import AntennaPod
from tests.support.kasts_replica import Kasts, parse_kasts_time
from tests.support.replica_http import basic_header
from tests.support.server_support import access_token, request

A, B, C = "http://a.example/feed", "http://b.example/feed", "http://c.example/feed"


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> Iterator[str]:
    # A server whose local time is far from UTC: naive action times must still be UTC.
    process = serve_process(config, env={"TZ": "Pacific/Auckland"})
    yield process.url


def test_mygpoclient_every_call_on_one_instance(server: str) -> None:
    client = api.MygPodderClient("alice", PASSWORD, server)
    # 1-2: devices (gPodder posts its device before the first sync).
    assert client.update_device_settings("laptop-AB12", "My laptop", "laptop") is True
    devices = client.get_devices()
    assert [(d.device_id, d.caption, d.type) for d in devices] == [
        ("laptop-AB12", "My laptop", "laptop")
    ]
    # 3-5: subscriptions.
    first = client.pull_subscriptions("laptop-AB12", 0)
    assert (first.add, first.remove) == ([], [])
    result = client.update_subscriptions("laptop-AB12", [A, "feed://b.example/feed"], [])
    assert result.update_urls == [("feed://b.example/feed", B)]
    changes = client.pull_subscriptions("laptop-AB12", result.since)
    assert (changes.add, changes.remove) == ([], [])  # no echo of its own upload
    # 6-9: episode actions, with every filter.
    actions = [
        api.EpisodeAction(
            A,
            "http://a.example/1.mp3",
            "play",
            "laptop-AB12",
            "2026-05-06T07:08:09",
            started=0,
            position=100,
            total=500,
        ),
        api.EpisodeAction(
            B, "http://b.example/1.mp3", "download", "laptop-AB12", "2026-05-06T07:08:10"
        ),
    ]
    assert client.upload_episode_actions(actions) > 1
    got = client.download_episode_actions(0)
    assert [(a.action, a.position, a.timestamp) for a in got.actions] == [
        ("play", 100, "2026-05-06T07:08:09"),
        ("download", None, "2026-05-06T07:08:10"),
    ]
    only_b = client.download_episode_actions(0, podcast=B)
    assert [a.episode for a in only_b.actions] == ["http://b.example/1.mp3"]
    by_device = client.download_episode_actions(0, device_id="laptop-AB12")
    assert len(by_device.actions) == 2
    assert client.download_episode_actions(got.since).actions == []
    # 10-11: the simple API (gPodder's "upload subscriptions" menu replaces the list).
    assert client.put_subscriptions("laptop-AB12", [B, C]) is True
    assert client.get_subscriptions("laptop-AB12") == [B, C]
    # 12: "download subscriptions": requests with the credentials in the URL.
    opml_url = client._locator.subscriptions_uri()
    req = urllib.request.Request(  # noqa: S310 - loopback
        opml_url, headers={"Authorization": basic_header("alice", PASSWORD)}
    )
    with urllib.request.urlopen(req, timeout=10) as response:  # noqa: S310 - loopback
        assert b'xmlUrl="http://c.example/feed"' in response.read()


def test_six_and_more_calls_on_one_mygpoclient_instance(server: str) -> None:
    """urllib gives up after three Basic challenges per client object; only the
    session cookie set on Basic-authenticated answers keeps it going."""
    client = api.MygPodderClient("alice", PASSWORD, server)
    for n in range(8):
        assert client.pull_subscriptions("desk", 0).add == ([A] if n > 0 else [])
        if n == 0:
            client.update_subscriptions("desk", [A], [])


def test_mygpoclient_survives_a_revoked_session(server: str, config: Config) -> None:
    """A 401 disables sync in gPodder: a session ended by `podsync user logout` must
    cost one more challenge (answered with Basic), not a failure."""
    from tests.conftest import run_cli

    client = api.MygPodderClient("alice", PASSWORD, server)
    assert client.get_devices() == []
    assert run_cli(config, "user", "logout", "alice").exit_code == 0
    for _ in range(4):
        assert client.get_devices() == []


def test_mygpoclient_with_a_wrong_password_is_unauthorized(server: str) -> None:
    client = api.MygPodderClient("alice", "not the password", server)
    with pytest.raises(Unauthorized):
        client.get_devices()


def test_antennapod_and_kasts_converge_each_change_once(server: str) -> None:
    phone = AntennaPod(server, "alice", PASSWORD, "pixel")
    phone.setup("Pixel")
    phone.subscribe(A)
    phone.subscribe(B)
    phone.play(A, "http://a.example/1.mp3", 120, "2026-02-03T04:05:06")
    phone.sync()
    # Kasts, with a trailing "/" typed after the server: every call goes to //api/2/.
    desktop = Kasts(server + "/", "alice", PASSWORD, "kasts-desk")
    assert desktop.login() == [
        {"id": "pixel", "caption": "Pixel", "type": "mobile", "subscriptions": 2}
    ]
    desktop.register("Desk")
    desktop.subscribe(C)  # a local feed before its first sync
    desktop.sync()
    assert sorted(desktop.feeds) == [A, B, C]
    assert [a["position"] for a in desktop.received_actions] == [120]
    assert parse_kasts_time(desktop.received_actions[0]["timestamp"]) is not None
    # The phone gets C once; then an unsubscribe on the desktop reaches the phone once.
    phone.sync()
    assert sorted(phone.feeds) == [A, B, C]
    desktop.unsubscribe(B)
    desktop.sync()
    phone.sync()
    assert sorted(phone.feeds) == [A, C]
    phone.subscribe("http://d.example/feed")
    phone.sync()
    desktop.sync()
    assert sorted(desktop.feeds) == [A, C, "http://d.example/feed"]
    # Nothing more arrives on either side: no boundary duplicates, no echoes.
    before_phone, before_desk = list(phone.feeds), list(desktop.feeds)
    phone.sync()
    desktop.sync()
    assert (phone.feeds, desktop.feeds) == (before_phone, before_desk)
    desktop.logout()
    # AntennaPod sent Basic only on login.json; everything else rode on the cookie.
    assert phone.calls.count("POST /api/2/auth/alice/login.json") == 6


def test_kasts_episode_loop_pages_and_ends(
    config: Config,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
    make_config: Any,
) -> None:
    small = make_config(gpodder={"episode_page_size": 4})
    server = serve_process(small).url
    phone = AntennaPod(server, "alice", PASSWORD, "pixel")
    phone.setup("Pixel")
    for n in range(10):
        phone.play(A, f"http://a.example/{n}.mp3", n, "2026-02-03T04:05:06")
    phone.sync()
    desktop = Kasts(server, "alice", PASSWORD, "desk")
    desktop.sync()
    assert sorted(a["episode"] for a in desktop.received_actions) == sorted(
        f"http://a.example/{n}.mp3" for n in range(10)
    )
    assert desktop.episode_fetches == 4  # 4 + 4 + 2, then one empty answer ends it


def test_opa_client_and_antennapod_see_each_other_exactly_once(server: str) -> None:
    """The two-app scenario: subscribe, unsubscribe and a feed move, both ways."""
    token = access_token(server, "alice", PASSWORD)
    client_id = str(uuid.uuid4())
    since = {"next": server + "/api/v1/sync"}

    def opa_send(action: str, data: dict[str, Any], when: str) -> dict[str, Any]:
        body = {
            "requests": [
                {
                    "action_id": str(uuid.uuid4()),
                    "type": "subscription",
                    "action": action,
                    "occurred_at": when,
                    "data": data,
                }
            ]
        }
        req = urllib.request.Request(  # noqa: S310 - loopback
            server + "/api/v1/sync",
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {token}",
                "Client-ID": client_id,
            },
        )
        with urllib.request.urlopen(req, timeout=10) as response:  # noqa: S310
            result: dict[str, Any] = json.loads(response.read())["results"][0]
        assert result["status"] == "applied", result
        return result

    def opa_changes() -> list[tuple[str, bool]]:
        req = urllib.request.Request(  # noqa: S310 - loopback
            since["next"], headers={"Authorization": f"Bearer {token}", "Client-ID": client_id}
        )
        with urllib.request.urlopen(req, timeout=10) as response:  # noqa: S310
            body = json.loads(response.read())
        since["next"] = server + body["next_since"]
        return [
            (r["data"]["feed_url"], r["data"].get("unsubscribed_at") is None)
            for r in body["results"]
        ]

    assert opa_changes() == []
    phone = AntennaPod(server, "alice", PASSWORD, "pixel")
    phone.setup("Pixel")
    phone.sync()
    # AntennaPod -> OPA: subscribe, then unsubscribe.
    phone.subscribe(A)
    phone.sync()
    assert opa_changes() == [(A, True)]
    assert opa_changes() == []
    phone.unsubscribe(A)
    phone.sync()
    assert opa_changes() == [(A, False)]
    # OPA -> AntennaPod: subscribe, move, unsubscribe.
    sync_id = opa_send("subscribe", {"feed_url": B}, "2026-01-01T00:00:00Z")["data"]["sync_id"]
    phone.sync()
    assert phone.feeds == [B]
    moved = "http://b-moved.example/feed"
    opa_send("update", {"sync_id": sync_id, "feed_url": moved}, "2026-01-01T00:00:01Z")
    phone.sync()
    assert phone.feeds == [moved]
    opa_send("unsubscribe", {"sync_id": sync_id}, "2026-01-01T00:00:02Z")
    phone.sync()
    assert phone.feeds == []
    assert opa_changes() == []  # its own writes are not echoed to the OPA client
    # The phone saw each change once: later syncs change nothing.
    phone.subscribe(C)
    phone.sync()
    assert opa_changes() == [(C, True)]
    status, listed = request(server + "/api/v1/subscriptions", token=token)
    assert status == 200
    assert [s["feed_url"] for s in listed["results"]] == [C]
