"""Episode actions (gpodder spec 5.7, 5.8, 6.6): storage, skip-not-fail, idempotent
re-upload, the cursor, paging, aggregated, the podcast and device filters, the
timestamp format, play fields only on play."""

from __future__ import annotations

import re
from typing import Any

from aiohttp.test_utils import TestClient

from tests.support.gpodder_support import GpWith, basic

URL = "/api/2/episodes/alice.json"
FEED = "http://example.com/feed.xml"
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


def action(n: int = 1, kind: str = "download", **extra: Any) -> dict[str, Any]:
    return {"podcast": FEED, "episode": f"http://example.com/{n}.mp3", "action": kind, **extra}


async def upload(gp: TestClient[Any, Any], items: Any) -> dict[str, Any]:
    response = await gp.post(URL, json=items, headers=basic())
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    assert set(body) == {"timestamp", "update_urls"}
    return body


async def pull(gp: TestClient[Any, Any], query: str = "since=0") -> dict[str, Any]:
    response = await gp.get(f"{URL}?{query}", headers=basic())
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    assert set(body) == {"actions", "timestamp"}
    return body


async def test_round_trip_with_the_exact_timestamp_format(gp: TestClient[Any, Any]) -> None:
    sent = [
        action(
            1,
            "play",
            timestamp="2026-03-04T05:06:07",
            started=0,
            position=60,
            total=300,
            device="phone",
            guid="g1",
        ),
        action(2, "download", timestamp="2026-03-04T05:06:07.250Z"),
        action(3, "delete", timestamp="2026-03-04T07:06:07+02:00"),
        action(4, "new", timestamp=1772600767),
        action(5, "flattr"),
    ]
    answer = await upload(gp, sent)
    assert answer["update_urls"] == []
    got = (await pull(gp))["actions"]
    assert [a["action"] for a in got] == ["play", "download", "delete", "new", "flattr"]
    for item in got:
        assert TIME.fullmatch(item["timestamp"]), item  # no Z, no offset, no fraction
    assert got[0] == {
        "podcast": FEED,
        "episode": "http://example.com/1.mp3",
        "action": "play",
        "timestamp": "2026-03-04T05:06:07",
        "started": 0,
        "position": 60,
        "total": 300,
        "device": "phone",
        "guid": "g1",
    }
    assert got[1]["timestamp"] == "2026-03-04T05:06:07"
    assert got[2]["timestamp"] == "2026-03-04T05:06:07"  # the offset read, UTC out
    assert got[3]["timestamp"] == "2026-03-04T05:06:07"  # epoch seconds
    for item in got[1:]:
        assert not {"started", "position", "total"} & set(item)


async def test_play_fields_only_on_play_and_only_when_known(gp: TestClient[Any, Any]) -> None:
    await upload(
        gp,
        [
            action(1, "download", started=0, position=5, total=10),
            action(2, "play", started=-1, position=-1, total=-1),  # AntennaPod at times
            action(3, "play"),  # gPodder's bare play
            action(4, "play", position=30),
        ],
    )
    got = (await pull(gp))["actions"]
    assert not {"started", "position", "total"} & set(got[0])
    assert not {"started", "position", "total"} & set(got[1])
    assert not {"started", "position", "total"} & set(got[2])
    assert got[3]["position"] == 30 and "started" not in got[3]


async def test_bad_items_are_skipped_and_reported_never_a_400(gp: TestClient[Any, Any]) -> None:
    answer = await upload(
        gp,
        [
            "not an object",
            {"podcast": FEED, "action": "play"},
            action(1, "listen"),
            {
                "podcast": "antennapod_local:/storage/x",
                "episode": "http://e.com/1",
                "action": "new",
            },
            {
                "podcast": "feed://example.com/feed.xml",
                "episode": " http://e.com/2 ",
                "action": "PLAY",
            },
            action(3, "play", position=2**40),
            action(4, "download"),
        ],
    )
    assert sorted(answer["update_urls"]) == sorted(
        [
            ["antennapod_local:/storage/x", ""],
            ["feed://example.com/feed.xml", "http://example.com/feed.xml"],
            [" http://e.com/2 ", "http://e.com/2"],
        ]
    )
    got = (await pull(gp))["actions"]
    assert [(a["episode"], a["action"]) for a in got] == [
        ("http://e.com/2", "play"),  # upper case stored lower-cased
        ("http://example.com/4.mp3", "download"),
    ]


async def test_a_body_that_is_not_an_array_is_400(gp: TestClient[Any, Any]) -> None:
    for body in (b'{"actions": []}', b"nope", b""):
        response = await gp.post(URL, data=body, headers=basic())
        assert response.status == 400, body


async def test_a_resent_batch_adds_nothing(gp: TestClient[Any, Any]) -> None:
    batch = [
        action(n, "play", position=n, started=0, total=99, timestamp="2026-01-01T00:00:00")
        for n in range(30)
    ]
    first = await upload(gp, batch)
    again = await upload(gp, batch)
    assert len((await pull(gp))["actions"]) == 30
    assert again["timestamp"] == first["timestamp"]


async def test_the_cursor_gives_each_action_once_in_both_styles(gp: TestClient[Any, Any]) -> None:
    first = await pull(gp)
    assert first == {"actions": [], "timestamp": 1}
    await upload(gp, [action(1)])
    one = await pull(gp, f"since={first['timestamp']}")
    assert [a["episode"] for a in one["actions"]] == ["http://example.com/1.mp3"]
    await upload(gp, [action(2)])
    for since in (one["timestamp"], one["timestamp"] + 1):  # AntennaPod, Kasts
        got = await pull(gp, f"since={since}")
        assert [a["episode"] for a in got["actions"]] == ["http://example.com/2.mp3"]
    assert (await pull(gp, f"since={got['timestamp']}"))["actions"] == []
    assert got["timestamp"] < 2**31


async def test_since_must_be_digits_and_unknown_cursors_mean_everything(
    gp: TestClient[Any, Any],
) -> None:
    for bad in ("-1", "abc", "1.5", "1e3", "9" * 19):
        response = await gp.get(f"{URL}?since={bad}", headers=basic())
        assert response.status == 400, bad
    await upload(gp, [action(1), action(2)])
    assert len((await pull(gp, "since=99999999"))["actions"]) == 2  # another server's
    assert len((await pull(gp, ""))["actions"]) == 2


async def test_paging_resumes_after_the_last_row(gp_with: GpWith) -> None:
    gp = await gp_with(gpodder={"episode_page_size": 3})
    await upload(gp, [action(n) for n in range(7)])
    seen: list[str] = []
    since = 0
    for _ in range(4):
        page = await pull(gp, f"since={since}")
        seen += [a["episode"] for a in page["actions"]]
        since = page["timestamp"]
    assert seen == [f"http://example.com/{n}.mp3" for n in range(7)]


async def test_aggregated_keeps_the_latest_per_episode_and_action(
    gp: TestClient[Any, Any],
) -> None:
    await upload(
        gp,
        [
            action(1, "play", position=10, started=0, total=50, timestamp="2026-01-01T00:00:02"),
            action(1, "play", position=20, started=0, total=50, timestamp="2026-01-01T00:00:03"),
            action(1, "play", position=5, started=0, total=50, timestamp="2026-01-01T00:00:01"),
            action(1, "delete", timestamp="2026-01-01T00:00:09"),
        ],
    )
    got = (await pull(gp, "since=0&aggregated=TRUE"))["actions"]
    assert [(a["action"], a.get("position")) for a in got] == [("play", 20), ("delete", None)]
    assert len((await pull(gp, "since=0&aggregated=false"))["actions"]) == 4


async def test_podcast_and_device_filters(gp: TestClient[Any, Any]) -> None:
    await upload(
        gp,
        [
            action(1, device="phone"),
            {
                "podcast": "http://other.org/rss",
                "episode": "http://other.org/1",
                "action": "new",
                "device": "laptop",
            },
        ],
    )
    only = (await pull(gp, "since=0&podcast=http://EXAMPLE.com/feed.xml/"))["actions"]
    assert [a["episode"] for a in only] == ["http://example.com/1.mp3"]
    assert [a["device"] for a in (await pull(gp, "since=0&device=laptop"))["actions"]] == ["laptop"]
    assert (await pull(gp, "since=0&device=unknown"))["actions"] == []
    # Devices named in uploads were created on the fly; no subscription was made.
    devices = await (await gp.get("/api/2/devices/alice.json", headers=basic())).json()
    assert [(d["id"], d["type"], d["subscriptions"]) for d in devices] == [
        ("phone", "other", 0),
        ("laptop", "other", 0),
    ]


async def test_another_users_actions_are_never_served(gp: TestClient[Any, Any]) -> None:
    await upload(gp, [action(1)])
    response = await gp.get("/api/2/episodes/bob.json?since=0", headers=basic("bob"))
    assert (await response.json())["actions"] == []


async def test_a_late_upload_with_an_old_client_time_is_still_delivered(
    gp: TestClient[Any, Any],
) -> None:
    """`since` counts uploads, not the client's action time (mygpo filters on the
    latter and loses actions a phone uploads late)."""
    await upload(gp, [action(1, timestamp="2026-06-01T00:00:00")])
    cursor = (await pull(gp))["timestamp"]
    await upload(gp, [action(2, timestamp="2020-01-01T00:00:00")])  # offline for years
    got = (await pull(gp, f"since={cursor}"))["actions"]
    assert [(a["episode"], a["timestamp"]) for a in got] == [
        ("http://example.com/2.mp3", "2020-01-01T00:00:00")
    ]
