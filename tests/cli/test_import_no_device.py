"""A remote that lists no device (contract 16), against the real oPodSync: when the
apps never registered a device there, its account-wide simple list still names the
feeds the person unsubscribed. The import reads the devices the episode actions
name, each with its removals, and a feed removed there is never added; with no
device named anywhere, the simple list, less the removals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from podsync.config import Config
from tests.cli.test_import_from import import_from
from tests.support.cli_support import add_user, stored
from tests.support.remote_peers import FEEDS, UNSUBSCRIBED, actions, call, opodsync


def _ok(base: str, method: str, path: str, body: Any = None) -> Any:
    status, answer = call(base, method, path, body)
    assert status == 200, (method, path, status, answer)
    return answer


def seed_without_devices(base: str, with_devices: bool) -> None:
    """What apps that never registered a device leave on oPodSync: FEEDS[:3]
    subscribed on `phone`, then UNSUBSCRIBED removed, and 40 episode actions that
    name their devices (`with_devices`) or none."""
    _ok(base, "POST", "/api/2/auth/remote/login.json")
    _ok(base, "POST", "/api/2/subscriptions/remote/phone.json", {"add": FEEDS[:3], "remove": []})
    _ok(
        base,
        "POST",
        "/api/2/subscriptions/remote/phone.json",
        {"add": [], "remove": [UNSUBSCRIBED]},
    )
    items = actions(40)
    if not with_devices:
        for item in items:
            del item["device"]
    _ok(base, "POST", "/api/2/episodes/remote.json", items)
    assert _ok(base, "GET", "/api/2/devices/remote.json") == []
    simple = {f["feed"] for f in _ok(base, "GET", "/subscriptions/remote.json")}
    assert UNSUBSCRIBED in simple  # the simple list still names it


KEPT = {(url, None, True) for url in FEEDS if url != UNSUBSCRIBED}


def test_the_devices_the_actions_name_are_read_with_their_removals(
    config: Config, tmp_path: Path
) -> None:
    add_user(config)
    with opodsync(tmp_path) as base:
        seed_without_devices(base, with_devices=True)
        result = import_from(config, base)
    assert result.exit_code == 0, result.output
    assert "3 subscriptions on 2 devices, 1 feed unsubscribed there, 40 episode actions" in (
        result.output
    )
    assert "1 feed you had unsubscribed on that server was not added." in result.output
    # FEEDS[3] came with the actions (oPodSync subscribes a podcast an action names).
    assert stored(config) == KEPT


def test_with_no_device_anywhere_the_simple_list_less_the_removals(
    config: Config, tmp_path: Path
) -> None:
    add_user(config)
    with opodsync(tmp_path) as base:
        seed_without_devices(base, with_devices=False)
        result = import_from(config, base)
    assert result.exit_code == 0, result.output
    assert "3 subscriptions, 1 feed unsubscribed there, 40 episode actions" in result.output
    assert stored(config) == KEPT
