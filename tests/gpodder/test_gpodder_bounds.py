"""Per-user bounds of the gpodder layer, and clocks (contract 14), through a real
`podsync serve` on each engine: devices (`gpodder.max_devices_per_user`), episode
actions (`gpodder.max_episode_actions_per_user`, an upload past it refused whole),
the pruning of superseded actions past `gpodder.episode_history_days`, and action
times more than a day ahead stored as the time of receipt."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import MakeConfig, ServeProcess
from tests.support.limits_support import call

pytestmark = pytest.mark.both_engines

Serve = Callable[..., ServeProcess]
PODCAST = "https://p.example/feed.xml"


@pytest.fixture
def server(
    make_config: MakeConfig, seeded_users: tuple[str, ...], serve_process: Serve
) -> Callable[..., ServeProcess]:
    """A server with the given [gpodder] settings."""

    def start(**gpodder: int) -> ServeProcess:
        return serve_process(make_config(gpodder=gpodder))

    return start


def play(episode: int, at: str, device: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "podcast": PODCAST,
        "episode": f"https://p.example/{episode}.mp3",
        "action": "play",
        "timestamp": at,
        "started": 0,
        "position": 10,
        "total": 100,
    }
    if device is not None:
        item["device"] = device
    return item


def upload(base: str, items: list[dict[str, Any]]) -> tuple[int, Any]:
    return call(base, "POST", "/api/2/episodes/alice.json", body=items)


def pulled(base: str, query: str = "since=0") -> list[dict[str, Any]]:
    status, body = call(base, "GET", f"/api/2/episodes/alice.json?{query}")
    assert status == 200, body
    actions: list[dict[str, Any]] = body["actions"]
    return actions


def test_a_device_past_the_bound_is_400_naming_it(server: Callable[..., ServeProcess]) -> None:
    base = server(max_devices_per_user=3).url
    for name in ("d1", "d2", "d3"):
        assert call(base, "POST", f"/api/2/devices/alice/{name}.json", body={}) == (200, None)
    # Updating one that exists is always fine.
    assert call(base, "POST", "/api/2/devices/alice/d1.json", body={"caption": "x"})[0] == 200
    for method, path, body in (
        ("POST", "/api/2/devices/alice/d4.json", {}),
        ("GET", "/api/2/subscriptions/alice/d5.json?since=0", None),
        ("POST", "/api/2/subscriptions/alice/d6.json", {"add": [PODCAST]}),
        ("PUT", "/subscriptions/alice/d7.json", [PODCAST]),
    ):
        status, answer = call(base, method, path, body=body)
        assert status == 400, (path, answer)
        assert answer["description"] == (
            "device limit reached: this account has 3 devices, the limit is 3 "
            "(gpodder.max_devices_per_user); use one of them or ask the admin"
        )
    status, devices = call(base, "GET", "/api/2/devices/alice.json")
    assert [d["id"] for d in devices] == ["d1", "d2", "d3"]


def test_an_action_naming_an_unknown_device_past_the_bound_is_skipped(
    server: Callable[..., ServeProcess],
) -> None:
    # Before: every distinct `device` in an action created one (245,000 in 20 s).
    base = server(max_devices_per_user=2).url
    items = [play(1, "2026-01-01T00:00:00", "d1"), play(2, "2026-01-01T00:00:00", "d2")]
    items += [play(3 + n, "2026-01-01T00:00:00", f"spam{n}") for n in range(5)]
    status, body = upload(base, items)
    assert status == 200, body
    assert sorted(a["device"] for a in pulled(base)) == ["d1", "d2"]
    status, devices = call(base, "GET", "/api/2/devices/alice.json")
    assert sorted(d["id"] for d in devices) == ["d1", "d2"]
    # Actions without a device, or of a known one, are still stored.
    assert (
        upload(base, [play(9, "2026-01-02T00:00:00"), play(10, "2026-01-02T00:00:00", "d1")])[0]
        == 200
    )
    assert len(pulled(base)) == 4


def test_an_upload_past_the_action_bound_is_refused_whole(
    server: Callable[..., ServeProcess],
) -> None:
    base = server(max_episode_actions_per_user=10).url
    first = [play(n, "2026-01-01T00:00:00") for n in range(8)]
    assert upload(base, first)[0] == 200
    status, body = upload(base, [play(100 + n, "2026-01-01T00:00:00") for n in range(5)])
    assert status == 400, body
    assert body["description"] == (
        "episode action limit reached: this upload would make 13 stored episode actions, "
        "the limit is 10 (gpodder.max_episode_actions_per_user); nothing was stored"
    )
    assert len(pulled(base)) == 8
    assert upload(base, first)[0] == 200  # sent again: adds nothing, so not refused
    assert upload(base, [play(200 + n, "2026-01-01T00:00:00") for n in range(2)])[0] == 200
    assert len(pulled(base)) == 10


def test_superseded_actions_past_the_history_are_pruned_and_the_latest_kept(
    server: Callable[..., ServeProcess],
) -> None:
    process = server(episode_history_days=30)
    now = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    recent = [(now - timedelta(days=2)).isoformat(), (now - timedelta(days=1)).isoformat()]
    items = [
        play(1, "2020-01-01T00:00:00"),  # superseded and old: pruned
        play(1, "2020-02-01T00:00:00"),  # the latest of episode 1: kept, however old
        play(2, "2020-01-01T00:00:00"),  # alone: kept
        play(3, recent[0]),  # superseded but recent: kept
        play(3, recent[1]),
    ]
    assert upload(process.url, items)[0] == 200
    assert len(pulled(process.url)) == 5
    process.stop()
    base = server(episode_history_days=30).url  # the hourly maintenance runs at start
    left = [(a["episode"][-5:], a["timestamp"]) for a in pulled(base)]
    assert left == [
        ("1.mp3", "2020-02-01T00:00:00"),
        ("2.mp3", "2020-01-01T00:00:00"),
        ("3.mp3", recent[0]),
        ("3.mp3", recent[1]),
    ]


def test_an_action_more_than_a_day_ahead_is_stored_at_the_time_of_receipt(
    server: Callable[..., ServeProcess],
) -> None:
    base = server().url
    soon = (datetime.now(UTC) + timedelta(hours=20)).replace(microsecond=0, tzinfo=None)
    items = [play(1, "9999-12-31T00:00:00"), play(2, soon.isoformat())]
    items += [play(3, "9999-12-31T00:00:00"), play(3, "2026-01-01T00:00:00")]
    before = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=5)
    assert upload(base, items)[0] == 200
    after = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=5)
    stored = {(a["episode"][-5:], a["timestamp"]) for a in pulled(base)}
    times = {episode: at for episode, at in stored if at != "2026-01-01T00:00:00"}
    assert before <= datetime.fromisoformat(times["1.mp3"]) <= after
    assert times["2.mp3"] == soon.isoformat()  # under a day ahead: kept as sent
    # The far-future one no longer wins the aggregated view forever.
    latest = pulled(base, "since=0&aggregated=true")
    assert {a["episode"][-5:]: a["timestamp"] for a in latest}["3.mp3"] == times["3.mp3"]
    assert before <= datetime.fromisoformat(times["3.mp3"]) <= after
