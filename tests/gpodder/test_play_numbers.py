"""Numbers in the apps' bodies, through a real `podsync serve`: a play's `position`,
`started` or `total` that is a fraction is kept rounded down to whole seconds; one that
is not a number (a string, a boolean, NaN, an infinity), negative or past 2^31 - 1
skips that item (the log says why), never a play stored with no numbers that would
become the latest and hide the real position. AntennaPod's -1 ("not known") stays
what it was: a play stored without its numbers. On the gpodder API and the Nextcloud
one alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import MakeConfig, ServeProcess
from tests.support.limits_support import call

NC = "/index.php/apps/gpoddersync"
PODCAST = "https://p.example/feed.xml"
EPISODE = "https://p.example/1.mp3"

# The JSON text of each odd value: 1e999 is read as an infinity, NaN and Infinity are
# what Python's and other encoders write for those.
ODD = ["1e999", "NaN", "Infinity", "-Infinity", '"10"', "-5", "true", "2147483648", "[]", "{}"]


def item(when: str, position: str, started: str = "0", total: str = "3600") -> str:
    return (
        f'{{"podcast": "{PODCAST}", "episode": "{EPISODE}", "device": "phone", '
        f'"action": "play", "timestamp": "{when}", '
        f'"started": {started}, "position": {position}, "total": {total}}}'
    )


Upload = Callable[[str, str], tuple[int, Any]]


def gpodder_upload(base: str, body: str) -> tuple[int, Any]:
    return call(base, "POST", "/api/2/episodes/alice.json", raw=body.encode())


def nextcloud_upload(base: str, body: str) -> tuple[int, Any]:
    return call(base, "POST", f"{NC}/episode_action/create", raw=body.encode())


def plays(base: str) -> list[dict[str, Any]]:
    status, body = call(base, "GET", "/api/2/episodes/alice.json?since=0")
    assert status == 200, body
    return [a for a in body["actions"] if a["action"] == "play"]


@pytest.fixture
def base(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> str:
    server = serve_process(make_config(log={"level": "info"}))
    return str(server.url)


@pytest.mark.parametrize("upload", [gpodder_upload, nextcloud_upload], ids=["gpodder", "nextcloud"])
def test_odd_numbers_skip_the_item_and_never_hide_the_real_position(
    base: str, upload: Upload
) -> None:
    status, _ = upload(base, "[" + item("2026-11-20T10:00:00", "1800") + "]")
    assert status == 200
    odd = []
    minute = 0
    for value in ODD:
        for field in ("position", "started", "total"):
            minute += 1
            numbers = {"position": "1900", "started": "0", "total": "3600", field: value}
            when = f"2026-11-21T10:{minute:02d}:00"
            odd.append(item(when, numbers["position"], numbers["started"], numbers["total"]))
    status, _ = upload(base, "[" + ",".join(odd) + "]")
    assert status == 200  # an upload skips what it cannot use: the apps resend until a 200
    stored = plays(base)
    assert [(a["started"], a["position"], a["total"]) for a in stored] == [(0, 1800, 3600)]
    for a in stored:
        assert a["position"] is not None


@pytest.mark.parametrize("upload", [gpodder_upload, nextcloud_upload], ids=["gpodder", "nextcloud"])
def test_fractions_are_rounded_down_and_minus_one_means_not_known(
    base: str, upload: Upload
) -> None:
    body = [
        item("2026-11-20T10:00:00", "1800.9", "12.5", "3600.0"),
        item("2026-11-20T11:00:00", "-1", "-1", "-1"),
    ]
    status, _ = upload(base, "[" + ",".join(body) + "]")
    assert status == 200
    stored = plays(base)
    assert len(stored) == 2
    assert (stored[0]["started"], stored[0]["position"], stored[0]["total"]) == (12, 1800, 3600)
    # AntennaPod's "not known": served as a play without the play fields, as before
    assert not {"started", "position", "total"} & stored[1].keys()


def test_the_log_says_why_an_item_was_skipped(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> None:
    server = serve_process(make_config(log={"level": "info"}))
    status, _ = gpodder_upload(server.url, "[" + item("2026-11-20T10:00:00", "NaN") + "]")
    assert status == 200
    assert plays(server.url) == []
    server.stop()
    text = server.log_path.read_text()
    assert "item 0 skipped: position is not a finite number" in text, text[-2000:]
