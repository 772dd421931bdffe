"""One play per listening session, through a real `podsync serve` on each engine: the
web player's saves of one session (its token) update one play action of the device
`web` instead of adding one each 30 s; another device's pull of the gpodder and the
Nextcloud API gets the latest position after its cursor (also a puller that already
got the earlier save), the AntennaPod replica applies it; a session token is the
person's own: a bad one is a 400, another person's changes nothing of theirs."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.antennapod_replica import AntennaPod
from tests.support.gpodder_support import basic, call
from tests.support.ui_session import CSRF, Browser

pytestmark = pytest.mark.both_engines

PODCAST = "https://sea.example/show.xml"
EPISODE = "https://sea.example/2.mp3"
NC = "/index.php/apps/gpoddersync"
SESSION = "c0ffee" * 5


@pytest.fixture
def server(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> str:
    return str(serve_process(make_config()).url)


def phone_played(server: str, user: str = "alice") -> AntennaPod:
    phone = AntennaPod(server, user, PASSWORD, "pixel")
    phone.setup("Pixel 8")
    phone.subscribe(PODCAST)
    phone.queued_actions.append(
        {"podcast": PODCAST, "episode": EPISODE, "device": "pixel", "action": "play",
         "timestamp": "2026-11-20T08:00:00", "started": 0, "position": 40, "total": 3600}
    )  # fmt: skip
    phone.sync()
    return phone


class Player:
    """A signed-in browser's episode page and its script's saves."""

    def __init__(self, browser: Browser, ref: str, csrf: str) -> None:
        self.browser, self.ref, self.csrf = browser, ref, csrf

    @classmethod
    async def open(cls, server: str, user: str = "alice") -> Player:
        browser = Browser(server)
        await browser.sign_in(user)
        status, overview = await browser.page("/ui")
        assert status == 200
        found = re.search(r"/ui/episodes/(\d+)", overview)
        assert found is not None, overview
        status, page = await browser.page(f"/ui/episodes/{found.group(1)}")
        csrf = CSRF.search(page)
        assert status == 200 and csrf is not None
        return cls(browser, found.group(1), csrf.group(1))

    async def save(
        self, started: int, position: int, session: str = SESSION, total: int = 3600
    ) -> tuple[int, Any]:
        fields = {"csrf": self.csrf, "started": str(started), "position": str(position),
                  "total": str(total), "session": session}  # fmt: skip
        async with self.browser.http.post(
            f"{self.browser.base}/ui/episodes/{self.ref}/progress",
            data=fields,
            headers={"Accept": "application/json"},
        ) as response:
            return response.status, await response.json()


def gpodder_pull(server: str, since: int = 0, user: str = "alice") -> dict[str, Any]:
    answer = call(server, "GET", f"/api/2/episodes/{user}.json?since={since}", **basic(user))
    assert answer.status == 200, answer.body
    pulled: dict[str, Any] = json.loads(answer.body)
    return pulled


def nextcloud_pull(server: str, since: int) -> list[dict[str, Any]]:
    answer = call(server, "GET", f"{NC}/episode_action?since={since}", **basic())
    assert answer.status == 200, answer.body
    actions: list[dict[str, Any]] = json.loads(answer.body)["actions"]
    return actions


def web_plays(actions: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    return [
        (a["started"], a["position"], a["total"])
        for a in actions
        if a["action"] == "play" and a.get("device") == "web"
    ]


async def test_300_saves_of_one_session_are_one_play_every_puller_sees_updated(
    server: str,
) -> None:
    phone = phone_played(server)
    player = await Player.open(server)
    try:
        assert (await player.save(0, 1800))[0] == 200
        # Another device pulls the first save: its cursors are now past it.
        first = gpodder_pull(server)
        assert web_plays(first["actions"]) == [(0, 1800, 3600)]
        nextcloud_since = int(time.time())
        phone.sync()
        assert phone.positions()[EPISODE] == (1800, False)
        await asyncio.sleep(1.1)  # the Nextcloud cursor is in seconds
        for _ in range(300):
            status, body = await player.save(0, 3600)
            assert status == 200 and body["saved"], body
        # The statistics count the hour once, not 300 times.
        status, stats = await player.browser.page("/ui/stats")
        assert status == 200 and "1 h 00 min in all" in stats, stats
    finally:
        await player.browser.close()
    # One action of the session, whatever the number of saves.
    assert web_plays(gpodder_pull(server)["actions"]) == [(0, 3600, 3600)]
    # Pullers whose cursor passed the first save get the update after it.
    assert web_plays(gpodder_pull(server, first["timestamp"])["actions"]) == [(0, 3600, 3600)]
    assert web_plays(nextcloud_pull(server, nextcloud_since)) == [(0, 3600, 3600)]
    phone.sync()
    assert phone.positions()[EPISODE] == (3600, True)


async def test_a_new_session_is_a_new_play_and_the_old_one_stays(server: str) -> None:
    phone_played(server)
    player = await Player.open(server)
    try:
        for position in (100, 130, 160):
            assert (await player.save(40, position))[0] == 200
        for position in (300, 330):
            assert (await player.save(200, position, session="b" * 32))[0] == 200
    finally:
        await player.browser.close()
    assert web_plays(gpodder_pull(server)["actions"]) == [(40, 160, 3600), (200, 330, 3600)]


async def test_a_session_token_is_checked_and_another_persons_is_never_touched(
    server: str,
) -> None:
    phone_played(server)
    phone_played(server, "bob")
    alice = await Player.open(server)
    bob = await Player.open(server, "bob")
    try:
        assert (await alice.save(0, 100))[0] == 200
        for bad in ("x", "a" * 65, "<script>alert(1)</script>", "é" * 20, "a b" * 8):
            status, body = await alice.save(0, 200, session=bad)
            assert status == 400 and body["saved"] is False, (bad, body)
        # Bob sends Alice's token: his own play is stored, hers stays.
        assert (await bob.save(0, 500))[0] == 200
        # And Alice's episode page is not Bob's: a save there is a 404.
        bob.ref = alice.ref if alice.ref != bob.ref else "999999"
        assert (await bob.save(0, 900))[0] == 404
    finally:
        await alice.browser.close()
        await bob.browser.close()
    assert web_plays(gpodder_pull(server)["actions"]) == [(0, 100, 3600)]
    assert web_plays(gpodder_pull(server, user="bob")["actions"]) == [(0, 500, 3600)]
