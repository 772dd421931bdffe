"""The Nextcloud gpoddersync API (the nextcloud spec) on both engines: the four
calls' shapes, one account-wide list shared with the gpodder and Open Podcast APIs,
episode actions of every kind under the login's device, the `since` window (a
change made in the same second by another API is never missed), bad bodies (400,
never 500), limits that refuse, 401 with a Basic challenge, the browser rule of
contract section 15 (403 before authentication, never a failed login) and the
routes under a path prefix."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.services.accounts import AccountService
from podsync.web.keys import APP_PASSWORDS, AUTH, DB
from tests.conftest import PASSWORD, login
from tests.support.gpodder_support import GpWith, basic
from tests.support.sync_helpers import action, all_subscriptions, post_batch

pytestmark = pytest.mark.both_engines

NC = "/index.php/apps/gpoddersync"
FEED = "http://example.com/feed.xml"
OTHER = "https://other.example/rss"


async def ok(response: Any) -> Any:
    assert response.status == 200, await response.text()
    assert response.headers["Cache-Control"] == "no-store"
    return await response.json()


async def pull_subs(gp: TestClient[Any, Any], since: int | str = 0, user: str = "alice") -> Any:
    return await ok(await gp.get(f"{NC}/subscriptions?since={since}", headers=basic(user)))


async def push_subs(
    gp: TestClient[Any, Any], add: list[str], remove: list[str], user: str = "alice"
) -> Any:
    body = {"add": add, "remove": remove}
    return await ok(
        await gp.post(f"{NC}/subscription_change/create", json=body, headers=basic(user))
    )


async def pull_actions(gp: TestClient[Any, Any], since: int | str = 0) -> Any:
    return await ok(await gp.get(f"{NC}/episode_action?since={since}", headers=basic()))


async def push_actions(gp: TestClient[Any, Any], items: Any) -> Any:
    return await ok(await gp.post(f"{NC}/episode_action/create", json=items, headers=basic()))


def play(n: int, position: int = 60, when: str = "2026-11-25T10:00:00") -> dict[str, Any]:
    """An action as AntennaPod and Kasts send it to a Nextcloud."""
    return {
        "podcast": FEED,
        "episode": f"http://example.com/{n}.mp3",
        "guid": f"guid-{n}",
        "action": "play",
        "timestamp": when,
        "started": 0,
        "position": position,
        "total": 3600,
    }


async def test_the_four_calls_answer_in_the_apps_shapes(gp: TestClient[Any, Any]) -> None:
    before = int(time.time())
    first = await pull_subs(gp)
    assert set(first) == {"add", "remove", "timestamp"}
    assert first["add"] == [] and first["remove"] == []
    assert before <= first["timestamp"] <= int(time.time())
    pushed = await push_subs(gp, [FEED, OTHER], [])
    assert set(pushed) == {"timestamp"} and isinstance(pushed["timestamp"], int)
    assert sorted((await pull_subs(gp))["add"]) == sorted([FEED, OTHER])
    answer = await push_actions(
        gp,
        [
            play(1),
            # device "", no guid, no play fields: Kasts and the Nextcloud app's defaults
            {
                "podcast": FEED,
                "episode": "http://example.com/2.mp3",
                "action": "download",
                "timestamp": "2026-11-25T10:01:00",
                "device": "",
            },
            {
                "podcast": FEED,
                "episode": "http://example.com/3.mp3",
                "action": "delete",
                "timestamp": "2026-11-25T10:02:00",
                "started": -1,
                "position": -1,
                "total": -1,
            },
            {
                "podcast": FEED,
                "episode": "http://example.com/4.mp3",
                "action": "new",
                "timestamp": "2026-11-25T10:03:00",
                "guid": None,
            },
        ],
    )
    assert set(answer) == {"timestamp"}
    pulled = await pull_actions(gp)
    assert set(pulled) == {"actions", "timestamp"}
    actions = {a["episode"].rsplit("/", 1)[1]: a for a in pulled["actions"]}
    assert [a["action"] for a in pulled["actions"]] == ["play", "download", "delete", "new"]
    assert actions["1.mp3"] == {
        "podcast": FEED,
        "episode": "http://example.com/1.mp3",
        "guid": "guid-1",
        "action": "play",
        "timestamp": "2026-11-25T10:00:00",
        "started": 0,
        "position": 60,
        "total": 3600,
        "device": "nextcloud",
    }
    assert "position" not in actions["3.mp3"] and "guid" not in actions["2.mp3"]


async def test_one_list_for_every_api(gp: TestClient[Any, Any]) -> None:
    """Subscribed here: in every gpodder device's list and the Open Podcast API's;
    and the other way round."""
    await push_subs(gp, [FEED], [])
    gpodder = await ok(
        await gp.get("/api/2/subscriptions/alice/phone.json?since=0", headers=basic())
    )
    assert gpodder["add"] == [FEED]
    token = (await login(gp))["access_token"]
    opa = await all_subscriptions(gp, token, include_unsubscribed=False)
    assert [s["feed_url"] for s in opa] == [FEED]
    # gpodder unsubscribes, OPA subscribes another: the Nextcloud pull shows both.
    since = (await pull_subs(gp))["timestamp"]
    response = await gp.post(
        "/api/2/subscriptions/alice/phone.json", json={"remove": [FEED]}, headers=basic()
    )
    assert response.status == 200
    await post_batch(gp, token, [action(feed_url=OTHER)])
    changes = await pull_subs(gp, since)
    assert changes["add"] == [OTHER] and changes["remove"] == [FEED]
    # A first sync never removes (the apps would delete their local feeds).
    assert (await pull_subs(gp, 0)) | {"timestamp": 0} == {
        "add": [OTHER],
        "remove": [],
        "timestamp": 0,
    }


async def test_actions_pushed_here_are_pulled_by_gpodder_clients_and_back(
    gp: TestClient[Any, Any],
) -> None:
    await push_actions(gp, [play(1, 120)])
    gpodder = await ok(await gp.get("/api/2/episodes/alice.json?since=0", headers=basic()))
    assert [(a["episode"], a["position"], a["device"]) for a in gpodder["actions"]] == [
        ("http://example.com/1.mp3", 120, "nextcloud")
    ]
    response = await gp.post(
        "/api/2/episodes/alice.json",
        json=[{**play(2, 30), "device": "laptop"}],
        headers=basic(),
    )
    assert response.status == 200
    pulled = await pull_actions(gp)
    assert [(a["guid"], a["device"]) for a in pulled["actions"]] == [
        ("guid-1", "nextcloud"),
        ("guid-2", "laptop"),
    ]
    devices = await ok(await gp.get("/api/2/devices/alice.json", headers=basic()))
    captions = {d["id"]: d["caption"] for d in devices}
    assert captions["nextcloud"] == "Nextcloud API (account password)"


async def test_a_change_in_the_same_second_by_another_api_is_never_missed(
    gp: TestClient[Any, Any],
) -> None:
    """Kasts sends since = timestamp + 1; AntennaPod its own clock after an upload.
    A change another API makes in the second of the answer (or just after it, by a
    clock a little fast) is in the next pull of both."""
    answer = await pull_subs(gp)
    timestamp = answer["timestamp"]
    response = await gp.post(
        "/api/2/subscriptions/alice/laptop.json", json={"add": [OTHER]}, headers=basic()
    )
    assert response.status == 200
    for since in (timestamp + 1, timestamp, int(time.time()) + 5):  # Kasts, as is, a fast clock
        assert OTHER in (await pull_subs(gp, since))["add"], since
    actions = await pull_actions(gp)
    response = await gp.post(
        "/api/2/episodes/alice.json", json=[{**play(7), "device": "laptop"}], headers=basic()
    )
    assert response.status == 200
    for since in (actions["timestamp"] + 1, int(time.time()) + 5):
        got = (await pull_actions(gp, since))["actions"]
        assert [a["guid"] for a in got] == ["guid-7"], since


async def test_a_pull_far_after_a_change_leaves_it_out(gp: TestClient[Any, Any]) -> None:
    await push_subs(gp, [FEED], [])
    later = int(time.time()) + 3600
    assert (await pull_subs(gp, later))["add"] == []
    assert (await pull_actions(gp, later))["actions"] == []


async def test_an_action_sent_again_is_stored_once(gp: TestClient[Any, Any]) -> None:
    await push_actions(gp, [play(1), play(1)])
    await push_actions(gp, [play(1)])
    assert len((await pull_actions(gp))["actions"]) == 1


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", f"{NC}/subscription_change/create", b"{"),
        ("POST", f"{NC}/subscription_change/create", b"[]"),
        ("POST", f"{NC}/subscription_change/create", b'{"add": "http://x.example/"}'),
        (
            "POST",
            f"{NC}/subscription_change/create",
            b'{"add": ["http://x.example/"], "remove": ["http://x.example/"]}',
        ),
        ("POST", f"{NC}/subscription_change/create", b"\xff\xfe"),
        ("POST", f"{NC}/subscription_change/create", b""),
        ("POST", f"{NC}/episode_action/create", b"{"),
        ("POST", f"{NC}/episode_action/create", b'{"podcast": "x"}'),
        ("POST", f"{NC}/episode_action/create", b"[" * 100000),
        ("POST", f"{NC}/episode_action/create", b""),
        ("GET", f"{NC}/subscriptions?since=yesterday", None),
        ("GET", f"{NC}/episode_action?since=1.5", None),
        ("GET", f"{NC}/episode_action?since=" + "9" * 40, None),
    ],
)
async def test_bad_bodies_are_400_with_a_message(
    gp: TestClient[Any, Any], method: str, path: str, body: bytes | None
) -> None:
    response = await gp.request(method, path, data=body, headers=basic())
    assert response.status == 400, await response.text()
    assert (await response.json())["description"]
    assert (await pull_subs(gp))["add"] == []


async def test_unusable_items_are_skipped_not_refused(gp: TestClient[Any, Any]) -> None:
    await push_actions(gp, [play(1), {"podcast": "nonsense"}, 5, {**play(2), "action": "jump"}])
    await push_subs(gp, [FEED, "not a url", 7], [])
    assert [a["guid"] for a in (await pull_actions(gp))["actions"]] == ["guid-1"]
    assert (await pull_subs(gp))["add"] == [FEED]


async def test_limits_refuse_whole(gp_with: GpWith) -> None:
    gp = await gp_with(
        sync={"max_subscriptions_per_user": 2}, gpodder={"max_episode_actions_per_user": 3}
    )
    response = await gp.post(
        f"{NC}/subscription_change/create",
        json={"add": [FEED, OTHER, "http://third.example/"]},
        headers=basic(),
    )
    assert response.status == 400
    assert "max_subscriptions_per_user" in (await response.json())["description"]
    assert (await pull_subs(gp))["add"] == []
    response = await gp.post(
        f"{NC}/episode_action/create", json=[play(n) for n in range(4)], headers=basic()
    )
    assert response.status == 400
    assert "max_episode_actions_per_user" in (await response.json())["description"]
    assert (await pull_actions(gp))["actions"] == []


async def test_device_limit_refuses_a_new_login_device(gp_with: GpWith) -> None:
    gp = await gp_with(gpodder={"max_devices_per_user": 1})
    response = await gp.post(
        "/api/2/devices/alice/phone.json", json={"caption": "phone"}, headers=basic()
    )
    assert response.status == 200
    response = await gp.post(f"{NC}/episode_action/create", json=[play(1)], headers=basic())
    assert response.status == 400
    assert "max_devices_per_user" in (await response.json())["description"]


async def test_wrong_or_missing_password_is_401_with_a_basic_challenge(
    gp: TestClient[Any, Any],
) -> None:
    for headers in ({}, basic(password="wrong"), {"Authorization": "Bearer x"}):
        response = await gp.get(f"{NC}/subscriptions?since=0", headers=headers)
        assert response.status == 401
        assert response.headers["WWW-Authenticate"].startswith("Basic ")
        assert (await response.json())["description"]


FOREIGN = [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "https://evil.example"},
]
WRITES = [
    f"{NC}/subscription_change/create",
    f"{NC}/episode_action/create",
    "/index.php/login/v2",
    "/index.php/login/v2/poll",
]


@pytest.mark.parametrize("browser", FOREIGN)
async def test_writes_a_page_of_another_site_makes_are_refused_before_authentication(
    gp_with: GpWith, browser: dict[str, str]
) -> None:
    gp = await gp_with(auth={"login_max_failures": 2})
    for path in WRITES:
        # A different wrong password each time: the same one again would count once.
        for credentials in (basic(), basic(password=f"wrong for {path}"), {}):
            response = await gp.post(
                path, data=b'{"add": ["http://evil.example/"]}', headers={**credentials, **browser}
            )
            assert response.status == 403, (path, await response.text())
            assert (await response.json())["error"] == "Forbidden"
    # Nothing changed, and the wrong passwords never counted: alice is not locked out.
    assert (await pull_subs(gp))["add"] == []
    # The same writes from an app (no such header), and from this server's own pages.
    await push_subs(gp, [FEED], [])
    origin = f"http://{gp.server.host}:{gp.server.port}"
    response = await gp.post(
        f"{NC}/subscription_change/create",
        json={"add": [OTHER]},
        headers={**basic(), "Origin": origin, "Sec-Fetch-Site": "same-origin"},
    )
    assert response.status == 200


async def test_reads_with_browser_headers_still_answer(gp: TestClient[Any, Any]) -> None:
    response = await gp.get(
        f"{NC}/subscriptions?since=0", headers={**basic(), "Sec-Fetch-Site": "cross-site"}
    )
    assert response.status == 200


async def test_the_api_under_the_path_prefix_of_public_url(gp_with: GpWith) -> None:
    """Behind a proxy that passes its prefix on; one that strips it reaches the
    routes at the root, which stay."""
    gp = await gp_with(server={"public_url": "https://pods.example.org/podsync/"})
    for prefix in ("/podsync", ""):
        response = await gp.post(
            f"{prefix}{NC}/subscription_change/create", json={"add": [FEED]}, headers=basic()
        )
        assert response.status == 200, prefix
        response = await gp.get(f"{prefix}{NC}/subscriptions?since=0", headers=basic())
        assert (await response.json())["add"] == [FEED]
    started = await ok(await gp.post("/podsync/index.php/login/v2"))
    assert started["login"].startswith("https://pods.example.org/podsync/index.php/login/v2/flow/")
    assert started["poll"]["endpoint"] == "https://pods.example.org/podsync/index.php/login/v2/poll"
    _ = PASSWORD


async def app_password(gp: TestClient[Any, Any], name: str) -> str:
    accounts = AccountService(gp.app[DB], gp.app[AUTH].passwords)
    user = await accounts.get_user("alice")
    return (await gp.app[APP_PASSWORDS].create(user, name))[1]


async def test_the_window_sends_back_what_others_wrote_not_what_this_app_wrote(
    gp: TestClient[Any, Any],
) -> None:
    """With an app password the device is the app's alone: what it wrote itself in
    the window before `since` is not sent back (Kasts repeats an episode pull while
    the answer has actions); what another device wrote there is."""
    phone = basic("alice", await app_password(gp, "phone"))
    response = await gp.post(
        f"{NC}/subscription_change/create", json={"add": [FEED]}, headers=phone
    )
    assert response.status == 200
    response = await gp.post(f"{NC}/episode_action/create", json=[play(1)], headers=phone)
    assert response.status == 200
    response = await gp.post(
        "/api/2/subscriptions/alice/laptop.json", json={"add": [OTHER]}, headers=basic()
    )
    assert response.status == 200
    response = await gp.post(
        "/api/2/episodes/alice.json", json=[{**play(2), "device": "laptop"}], headers=basic()
    )
    assert response.status == 200
    since = int(time.time()) + 1
    await asyncio.sleep(since - time.time() + 0.05)  # the next second: all in the window
    subs = await ok(await gp.get(f"{NC}/subscriptions?since={since}", headers=phone))
    assert subs["add"] == [OTHER]
    actions = await ok(await gp.get(f"{NC}/episode_action?since={since}", headers=phone))
    assert [a["guid"] for a in actions["actions"]] == ["guid-2"]
    # The account password's device is shared by every app that uses it: all of it.
    assert sorted((await pull_subs(gp, since))["add"]) == sorted([FEED, OTHER])
    assert len((await pull_actions(gp, since))["actions"]) == 2
