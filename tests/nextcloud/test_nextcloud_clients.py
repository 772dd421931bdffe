"""The Nextcloud clients, replicated from their code (tests/support/nextcloud_replica.py),
against real `podsync serve` processes on both engines:

- AntennaPod signs in through Login Flow v2 with the grant done in a real Chromium,
  two phones sync subscriptions and episode actions through each other, and a
  revoked app password is refused.
- Kasts signs in by `GET subscriptions?since=0` and stores every timestamp + 1.
- What each does with `since` and `timestamp` when another API (the gpodder one,
  on another process) makes a change in the same second: nothing is missed, and a
  change sent again is applied idempotently.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, ServeProcess
from tests.support.cli_support import config_path, podsync_process
from tests.support.gpodder_support import call
from tests.support.nextcloud_replica import AntennaPodNextcloud, HostnameParser, KastsNextcloud
from tests.support.replica_http import SyncFailed, basic_header
from tests.support.server_support import podsync_command
from tests.support.ui_browser import (
    DESKTOP,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)

pytestmark = [pytest.mark.both_engines, pytest.mark.slow]
A, B, C = "http://a.example/feed", "https://b.example/rss", "http://c.example/feed"
EP1, EP2 = "http://a.example/1.mp3", "http://a.example/2.mp3"


@pytest.fixture
def servers(config: Config, serve_process: Callable[..., ServeProcess]) -> tuple[str, str]:
    """Two `podsync serve` processes on one database, with alice made by the CLI in a
    process of its own (Chromium's sync API holds this thread's event loop)."""
    done = subprocess.run(
        podsync_command(config, "user", "add", "alice", "--password-stdin"),
        input=PASSWORD + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return serve_process(config).url, serve_process(config).url


def gpodder_subscribe(base: str, url: str, device: str = "laptop") -> None:
    answer = call(
        base,
        "POST",
        f"/api/2/subscriptions/alice/{device}.json",
        f'{{"add": ["{url}"]}}'.encode(),
        Authorization=basic_header("alice", PASSWORD),
    )
    assert answer.status == 200, answer.body


def gpodder_play(base: str, episode: str, position: int) -> None:
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    body = (
        f'[{{"podcast": "{A}", "episode": "{episode}", "action": "play", "device": "laptop",'
        f' "timestamp": "{when}", "started": 0, "position": {position}, "total": 3600}}]'
    )
    answer = call(
        base,
        "POST",
        "/api/2/episodes/alice.json",
        body.encode(),
        Authorization=basic_header("alice", PASSWORD),
    )
    assert answer.status == 200, answer.body


def grant_in_chromium(browser: Any, login_url: str) -> None:  # noqa: F811
    """What the person does in the browser AntennaPod opened: sign in, Grant access."""
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        page.goto(login_url)
        assert "/ui/login" in page.url
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/grant/*")
        # The app's own word for its name, marked as such (contract section 16).
        said = page.locator("#h-grant + p").inner_text()
        assert "An app that calls itself AntennaPod" in said, said
        screenshot(page, "grant-access")
        found = check_accessibility(page, axe_source())
        assert found == [], violations_text(found)
        page.get_by_role("button", name="Grant access").click()
        page.get_by_role("heading", name="Access granted").wait_for()
    finally:
        context.close()


def phone_through_the_flow(browser: Any, host_url: str) -> AntennaPodNextcloud:  # noqa: F811
    phone = AntennaPodNextcloud(host_url)
    login_url = phone.start_login_flow()
    with pytest.raises(SyncFailed) as refused:  # not granted yet
        phone._form_request(phone.endpoint or "", "token=" + (phone.token or ""))
    assert refused.value.status == 404
    grant_in_chromium(browser, login_url)
    phone.poll_login_flow(timeout=5)
    return phone


def test_hostname_parser_reads_what_people_type() -> None:
    assert HostnameParser.parse("pods.example.org") == HostnameParser(
        "https", "pods.example.org", 443, ""
    )
    assert HostnameParser.parse("http://127.0.0.1:8080/podsync/") == HostnameParser(
        "http", "127.0.0.1", 8080, "/podsync"
    )
    assert HostnameParser.parse("host:80").scheme == "http"


def test_antennapod_two_phones_through_the_flow_sync_through_each_other(
    servers: tuple[str, str],
    browser: Any,  # noqa: F811
    config: Config,
) -> None:
    first, second = servers
    phone = phone_through_the_flow(browser, first)
    tablet = phone_through_the_flow(browser, second + "/")  # typed with a trailing /
    assert phone.host_url == first and tablet.host_url == second  # the poll's `server`
    assert phone.user == tablet.user == "alice" and phone.password != tablet.password

    phone.subscribe(A)
    phone.subscribe(B)
    phone.sync()  # first sync: uploads every local feed
    phone.positions[EP1] = 0
    tablet.positions[EP1] = 0
    phone.play(A, EP1, 600, guid="ep-1")
    phone.sync()
    tablet.sync()
    assert sorted(tablet.feeds) == sorted([A, B])
    assert tablet.positions[EP1] == 600
    tablet.unsubscribe(B)
    # Times are whole seconds, and AntennaPod keeps the first of two plays of one
    # second: the tablet plays in the next second, as a person would (in the same one
    # the phone's play, pulled again within the window, came first).
    time.sleep(1.01 - time.time() % 1)
    tablet.play(A, EP1, 900, guid="ep-1")
    tablet.sync()
    phone.sync()
    assert phone.feeds == [A]
    assert phone.positions[EP1] == 900
    # Sent again within the window: applied again, nothing changes.
    phone.sync()
    tablet.sync()
    assert (phone.feeds, tablet.feeds) == ([A], [A])
    assert phone.positions[EP1] == tablet.positions[EP1] == 900
    # Each phone is a device of its own, named after its app password.
    devices = call(
        first, "GET", "/api/2/devices/alice.json", Authorization=basic_header("alice", PASSWORD)
    ).json()
    assert sorted(d["caption"] for d in devices) == ["AntennaPod", "AntennaPod (2)"]

    # Revoked (here from the CLI): that phone is refused, the other syncs on.
    env = {"PODSYNC_LOG_LEVEL": "warning"}
    done = podsync_process(
        [
            "--config",
            config_path(config),
            "user",
            "app-passwords",
            "alice",
            "--revoke",
            "AntennaPod",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(SyncFailed) as refused:
        phone.sync()
    assert refused.value.status == 401
    tablet.sync()


def test_kasts_logs_in_by_a_pull_and_syncs_with_timestamp_plus_one(
    servers: tuple[str, str],
) -> None:
    first, second = servers
    with pytest.raises(SyncFailed) as refused:
        KastsNextcloud(first, "alice", "wrong").login()
    assert refused.value.status == 401
    kasts = KastsNextcloud(first, "alice", PASSWORD)
    kasts.login()
    kasts.subscribe(A)
    kasts.play(A, EP1, 120, guid="ep-1")
    kasts.sync()
    assert kasts.subscription_timestamp > 1 and kasts.episode_fetches == 1
    other = KastsNextcloud(second, "alice", PASSWORD)
    other.sync()
    assert other.feeds == [A]
    assert [(a["episode"], a["position"]) for a in other.received_actions] == [(EP1, 120)]


def test_kasts_misses_nothing_made_in_the_same_second_by_another_api(
    servers: tuple[str, str],
) -> None:
    """Kasts pulls at T and stores T + 1; the gpodder API, on the other process,
    subscribes and plays in second T. Its next pull (since = T + 1), on that other
    process, has both. (Tried again when the machine is too slow to make both
    changes within the second.)"""
    first, second = servers
    kasts = KastsNextcloud(first, "alice", PASSWORD)
    kasts.sync()  # the first sync (since 0) is whole
    gpodder_subscribe(second, A)  # warms the other process's Basic cache
    for attempt in range(5):
        feed, episode = f"http://c.example/{attempt}/feed", f"http://c.example/{attempt}.mp3"
        kasts.hostname = first
        time.sleep(1 - time.time() % 1)  # a fresh second
        kasts.sync()
        stored = kasts.subscription_timestamp
        gpodder_subscribe(second, feed)
        gpodder_play(second, episode, 300)
        same_second = int(time.time()) == stored - 1
        kasts.hostname = second  # the next sync on the other process, which never served it
        kasts.received_actions = []
        kasts.sync()
        assert feed in kasts.feeds
        assert (episode, 300) in [(a["episode"], a["position"]) for a in kasts.received_actions]
        if same_second:
            break
    else:
        pytest.fail("never made both changes within the second of a pull: machine too slow")
    # Sent again within the window: Kasts keeps one feed.
    kasts.sync()
    assert kasts.feeds.count(feed) == 1


@pytest.mark.parametrize("skew", [0.0, 30.0])
def test_antennapod_misses_nothing_after_an_upload_with_its_own_clock(
    servers: tuple[str, str], skew: float
) -> None:
    """AntennaPod stores its own clock after an upload (a phone 30 s fast here); the
    gpodder API, on the other process, changes things in that same second."""
    first, second = servers
    phone = AntennaPodNextcloud(first, "alice", PASSWORD, clock=lambda: time.time() + skew)
    phone.positions[EP2] = 0
    phone.subscribe(A)
    phone.play(A, EP1, 60)
    phone.sync()  # uploads both: the stored timestamps are the phone's clock
    assert phone.last_subscription_sync >= int(time.time() + skew) - 1
    gpodder_subscribe(second, C)
    gpodder_play(second, EP2, 300)
    phone.host_url = second  # a load balancer sends the next sync to the other process
    phone.sync()
    assert C in phone.feeds
    assert phone.positions[EP2] == 300
