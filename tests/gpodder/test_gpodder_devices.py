"""gpodder devices and sync-devices (gpodder spec 5.3, 5.4, 5.9)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.support.gpodder_support import basic

DEVICES = "/api/2/devices/alice.json"


async def devices(gp: TestClient[Any, Any]) -> Any:
    response = await gp.get(DEVICES, headers=basic())
    assert response.status == 200
    return await response.json()


async def test_device_list_starts_empty_as_an_array(gp: TestClient[Any, Any]) -> None:
    assert await devices(gp) == []


async def test_device_upsert_answers_200_with_an_empty_body(gp: TestClient[Any, Any]) -> None:
    body = b'{"caption": "My phone", "type": "mobile"}'
    # mygpoclient sends JSON as form-urlencoded: the content type is ignored.
    headers = {**basic(), "Content-Type": "application/x-www-form-urlencoded"}
    response = await gp.post("/api/2/devices/alice/phone.json", data=body, headers=headers)
    assert response.status == 200
    assert await response.read() == b""
    assert await devices(gp) == [
        {"id": "phone", "caption": "My phone", "type": "mobile", "subscriptions": 0}
    ]


async def test_device_update_changes_only_given_keys(gp: TestClient[Any, Any]) -> None:
    url = "/api/2/devices/alice/phone.json"
    assert (
        await gp.post(url, json={"caption": "Phone", "type": "mobile"}, headers=basic())
    ).status == 200
    # AntennaPod: an empty body when there is nothing to set; an empty caption: unchanged.
    assert (await gp.post(url, data=b"", headers=basic())).status == 200
    assert (await gp.post(url, json={}, headers=basic())).status == 200
    assert (await gp.post(url, json={"caption": ""}, headers=basic())).status == 200
    assert (await gp.post(url, json={"type": "laptop"}, headers=basic())).status == 200
    assert await devices(gp) == [
        {"id": "phone", "caption": "Phone", "type": "laptop", "subscriptions": 0}
    ]


async def test_a_new_device_without_caption_or_type(gp: TestClient[Any, Any]) -> None:
    url = "/api/2/devices/alice/kasts-host.example.org.json"
    assert (await gp.post(url, data=b"", headers=basic())).status == 200
    assert (
        await gp.post("/api/2/devices/alice/b.json", json={"type": "tablet"}, headers=basic())
    ).status == 200
    assert await devices(gp) == [
        {
            "id": "kasts-host.example.org",
            "caption": "kasts-host.example.org",
            "type": "other",
            "subscriptions": 0,
        },
        {"id": "b", "caption": "b", "type": "other", "subscriptions": 0},
    ]


async def test_invalid_device_ids_and_bodies_are_400(gp: TestClient[Any, Any]) -> None:
    for path in ("/api/2/devices/alice/a%2Fb.json", "/api/2/devices/alice/a%20b.json"):
        response = await gp.post(path, json={}, headers=basic())
        assert response.status in (400, 404), path
        assert response.status != 200
    for body in (b"[1]", b"{not json", b'"x"'):
        response = await gp.post("/api/2/devices/alice/ok.json", data=body, headers=basic())
        assert response.status == 400, body
        assert (await response.json())["error"] == "Bad request"
    assert await devices(gp) == []


async def test_sync_devices_puts_every_device_in_one_group(gp: TestClient[Any, Any]) -> None:
    url = "/api/2/sync-devices/alice.json"
    response = await gp.get(url, headers=basic())
    assert await response.json() == {"synchronized": [], "not-synchronized": []}
    await gp.post("/api/2/devices/alice/one.json", json={}, headers=basic())
    response = await gp.get(url, headers=basic())
    assert await response.json() == {"synchronized": [], "not-synchronized": ["one"]}
    await gp.post("/api/2/devices/alice/two.json", json={}, headers=basic())
    response = await gp.post(url, json={"stop-synchronize": ["one"]}, headers=basic())
    assert response.status == 200
    assert await response.json() == {"synchronized": [["one", "two"]], "not-synchronized": []}
