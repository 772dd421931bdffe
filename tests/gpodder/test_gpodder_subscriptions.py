"""The gpodder subscription stream over the OPA store (gpodder spec 4, 5.5, 5.6,
6.1-6.5): full state without tombstones, each change once in both cursor styles,
no loss between a GET and a POST, update_urls, 400 for add+remove, aliases, and
the OPA API seeing gpodder writes (and the reverse)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.opml import parse_opml
from podsync.services.device_subscriptions import device_client_id
from podsync.web.gpodder.subscriptions import LIST_ON_LOOP_MAX, json_list
from podsync.web.http import dumps
from tests.conftest import PASSWORD
from tests.support.gpodder_support import basic

A, B, C = "http://a.example/feed", "http://b.example/feed", "http://c.example/feed"


def url(device: str = "phone", user: str = "alice") -> str:
    return f"/api/2/subscriptions/{user}/{device}.json"


async def pull(gp: TestClient[Any, Any], since: int | str = 0, device: str = "phone") -> Any:
    response = await gp.get(f"{url(device)}?since={since}", headers=basic())
    assert response.status == 200, await response.text()
    body = await response.json()
    assert set(body) == {"add", "remove", "timestamp"}
    assert type(body["timestamp"]) is int and 0 < body["timestamp"] < 2**31
    return body


async def push(
    gp: TestClient[Any, Any], add: Any = (), remove: Any = (), device: str = "phone"
) -> Any:
    body = {"add": list(add), "remove": list(remove)}
    response = await gp.post(url(device), json=body, headers=basic())
    assert response.status == 200, await response.text()
    answer = await response.json()
    assert set(answer) == {"timestamp", "update_urls"}
    return answer


async def opa_token(gp: TestClient[Any, Any]) -> str:
    response = await gp.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    token: str = (await response.json())["access_token"]
    return token


async def test_an_empty_account_answers_cursor_1(gp: TestClient[Any, Any]) -> None:
    assert await pull(gp) == {"add": [], "remove": [], "timestamp": 1}


async def test_first_sync_of_a_new_device_gets_the_list_and_no_tombstones(
    gp: TestClient[Any, Any],
) -> None:
    await push(gp, add=[A, B, C], device="first")
    await push(gp, remove=[B], device="first")
    fresh = await pull(gp, 0, device="second")
    assert fresh["add"] == [A, C]
    assert fresh["remove"] == []
    # The device was created on the fly and every device sees one list.
    devices = await (await gp.get("/api/2/devices/alice.json", headers=basic())).json()
    assert {d["id"]: d["subscriptions"] for d in devices} == {"first": 2, "second": 2}


async def test_each_change_once_in_both_cursor_styles(gp: TestClient[Any, Any]) -> None:
    start = await pull(gp, 0, device="reader")
    await push(gp, add=[A], device="writer")
    for plus in (0, 1):  # AntennaPod sends the cursor back, Kasts the cursor + 1
        got = await pull(gp, start["timestamp"] + plus, device="reader")
        assert (got["add"], got["remove"]) == ([A], [])
        again = await pull(gp, got["timestamp"] + plus, device="reader")
        assert (again["add"], again["remove"]) == ([], [])  # no boundary duplicate
    await push(gp, remove=[A], device="writer")
    got = await pull(gp, again["timestamp"], device="reader")
    assert (got["add"], got["remove"]) == ([], [A])


async def test_a_write_between_get_and_post_is_not_skipped(gp: TestClient[Any, Any]) -> None:
    cookie_headers = {}
    login = await gp.post("/api/2/auth/alice/login.json", headers=basic())
    cookie_headers["Cookie"] = f"sessionid={login.cookies['sessionid'].value}"
    got = await gp.get(f"{url('a')}?since=0", headers=cookie_headers)
    served = (await got.json())["timestamp"]
    await push(gp, add=[B], device="b")  # device B writes now
    posted = await gp.post(url("a"), json={"add": [A]}, headers=cookie_headers)
    timestamp = (await posted.json())["timestamp"]
    assert timestamp == served  # not the maximum after A's write: that would skip B's
    later = await gp.get(f"{url('a')}?since={timestamp}", headers=cookie_headers)
    assert B in (await later.json())["add"]
    # Without a foreign write, the POST answers the maximum after it: no echo.
    posted = await gp.post(url("a"), json={"add": [C]}, headers=cookie_headers)
    after = await gp.get(
        f"{url('a')}?since={(await posted.json())['timestamp']}", headers=cookie_headers
    )
    assert (await after.json())["add"] == []


async def test_unusable_and_rewritten_urls_are_reported_with_200(
    gp: TestClient[Any, Any],
) -> None:
    answer = await push(
        gp,
        add=["feed://a.example/feed", " http://b.example/feed ", "antennapod_local:x", "", 7],
        remove=["itpc://gone.example/rss"],
    )
    assert sorted(answer["update_urls"]) == sorted(
        [
            ["feed://a.example/feed", A],
            [" http://b.example/feed ", B],
            ["antennapod_local:x", ""],
            ["", ""],
            ["itpc://gone.example/rss", "http://gone.example/rss"],
        ]
    )
    assert (await pull(gp))["add"] == [A, B]


async def test_an_add_of_a_variant_is_steered_to_the_stored_url(
    gp: TestClient[Any, Any],
) -> None:
    await push(gp, add=[A])
    answer = await push(gp, add=["HTTPS://A.example/feed/"])
    assert answer["update_urls"] == [["HTTPS://A.example/feed/", A]]
    assert (await pull(gp))["add"] == [A]
    await push(gp, remove=["https://a.example/feed/"])  # a variant finds the entity too
    assert (await pull(gp))["add"] == []


async def test_the_same_url_in_add_and_remove_is_400(gp: TestClient[Any, Any]) -> None:
    response = await gp.post(url(), json={"add": [A], "remove": [A]}, headers=basic())
    assert response.status == 400
    # Two spellings of one feed: the add wins, the removal is ignored.
    await push(gp, add=[A], remove=["https://a.example/feed/"])
    assert (await pull(gp))["add"] == [A]


async def test_malformed_bodies_and_since_are_400(gp: TestClient[Any, Any]) -> None:
    for body in (b"[]", b'{"add": "http://x/"}', b"{", b'"x"'):
        response = await gp.post(url(), data=body, headers=basic())
        assert response.status == 400, body
    for since in ("x", "-3", "1.0"):
        response = await gp.get(f"{url()}?since={since}", headers=basic())
        assert response.status == 400, since
    response = await gp.get("/api/2/subscriptions/alice/bad%20id.json", headers=basic())
    assert response.status == 400


async def test_missing_keys_read_as_empty(gp: TestClient[Any, Any]) -> None:
    await push(gp, add=[A])
    response = await gp.post(url(), json={}, headers=basic())
    assert response.status == 200
    assert (await response.json())["update_urls"] == []


async def test_dotted_usernames_and_devices(gp: TestClient[Any, Any], config: Any) -> None:
    from tests.conftest import with_accounts

    await with_accounts(config, lambda a: a.add_user("first.last", PASSWORD))
    headers = basic("first.last")
    path = "/api/2/subscriptions/first.last/host.example.org-AB12.json"
    response = await gp.post(path, json={"add": [A]}, headers=headers)
    assert response.status == 200
    got = await (await gp.get(f"{path}?since=0", headers=headers)).json()
    assert got["add"] == [A]
    devices = await (await gp.get("/api/2/devices/first.last.json", headers=headers)).json()
    assert [d["id"] for d in devices] == ["host.example.org-AB12"]


async def test_opa_sees_gpodder_writes_with_the_derived_client_id(
    gp: TestClient[Any, Any],
) -> None:
    token = await opa_token(gp)
    bearer = {"Authorization": f"Bearer {token}"}
    await push(gp, add=[A, B], device="phone")
    await push(gp, remove=[B], device="phone")
    listed = await (await gp.get("/api/v1/subscriptions", headers=bearer)).json()
    assert [s["feed_url"] for s in listed["results"]] == [A]
    feed = await (await gp.get("/api/v1/sync", headers=bearer)).json()
    users = await gp.get("/api/2/devices/alice.json", headers=basic())
    assert users.status == 200
    by_url = {r["data"]["feed_url"]: r for r in feed["results"]}
    assert set(by_url) == {A, B}
    assert by_url[B]["data"]["unsubscribed_at"] is not None
    # The writer is the Client-ID derived from (user, device).
    from podsync.web.keys import DB

    async with gp.app[DB].read() as conn:
        rows = await conn.fetch_all("SELECT DISTINCT last_client_id FROM subscriptions")
    user_id = 1
    assert [r[0] for r in rows] == [device_client_id(user_id, "phone")]


async def test_gpodder_pulls_see_opa_writes_and_moves(gp: TestClient[Any, Any]) -> None:
    token = await opa_token(gp)
    headers = {"Authorization": f"Bearer {token}", "Client-ID": str(uuid.uuid4())}

    async def opa(*actions: dict[str, Any]) -> list[dict[str, Any]]:
        batch = [
            {
                "action_id": str(uuid.uuid4()),
                "type": "subscription",
                "occurred_at": "2026-01-01T00:00:00Z",
                **a,
            }
            for a in actions
        ]
        response = await gp.post("/api/v1/sync", json={"requests": batch}, headers=headers)
        assert response.status == 200, await response.text()
        results: list[dict[str, Any]] = (await response.json())["results"]
        return results

    start = await pull(gp)
    results = await opa({"action": "subscribe", "data": {"feed_url": A}})
    sync_id = results[0]["data"]["sync_id"]
    got = await pull(gp, start["timestamp"])
    assert (got["add"], got["remove"]) == ([A], [])
    moved = "http://a-new.example/feed"
    await opa(
        {
            "action": "update",
            "occurred_at": "2026-01-02T00:00:00Z",
            "data": {"sync_id": sync_id, "feed_url": moved},
        }
    )
    after_move = await pull(gp, got["timestamp"])
    assert (after_move["add"], after_move["remove"]) == ([moved], [A])
    # A gpodder client that still knows the old URL can remove the feed with it.
    await push(gp, remove=[A])
    assert (await pull(gp))["add"] == []


async def test_a_gpodder_write_beats_an_opa_clock_running_ahead(
    gp: TestClient[Any, Any],
) -> None:
    from datetime import UTC, datetime, timedelta

    token = await opa_token(gp)
    ahead = (datetime.now(UTC) + timedelta(seconds=200)).strftime("%Y-%m-%dT%H:%M:%SZ")
    batch = [
        {
            "action_id": str(uuid.uuid4()),
            "type": "subscription",
            "action": "subscribe",
            "occurred_at": ahead,
            "data": {"feed_url": A},
        }
    ]
    response = await gp.post(
        "/api/v1/sync", json={"requests": batch}, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status == 200
    await push(gp, remove=[A])
    assert (await pull(gp))["add"] == []


async def test_a_cursor_from_elsewhere_means_full_state(gp: TestClient[Any, Any]) -> None:
    await push(gp, add=[A])
    got = await pull(gp, 2**31 - 1)
    assert (got["add"], got["remove"]) == ([A], [])


def test_the_simple_api_json_list_is_what_the_encoder_writes() -> None:
    feeds: list[tuple[str, str | None]] = [
        ("https://a.example/feed.xml", 'A "quoted" title'),
        ("https://b.example/f\u00fc\u00dfe?x=1&y=\\", None),
        ("https://c.example/\u2028", "Tab\there, \U0001f3a7 and \ud800 alone"),
        ("https://d.example/", ""),
    ]
    titled = [{"url": url, "title": title or url} for url, title in feeds]
    assert json_list(feeds, titled=True) == dumps(titled).encode("ascii")
    assert json_list(feeds, titled=False) == dumps([url for url, _ in feeds]).encode("ascii")
    assert json_list([], titled=True) == b"[]"


@pytest.mark.parametrize("size", [LIST_ON_LOOP_MAX, LIST_ON_LOOP_MAX + 1], ids=["loop", "thread"])
async def test_a_long_simple_api_list_is_written_alike_in_every_format(
    gp: TestClient[Any, Any], size: int
) -> None:
    """Up to LIST_ON_LOOP_MAX feeds the list is written on the event loop, past it on
    a worker thread: the same bytes and headers either way."""
    urls = [f"https://long.example/{n}/feed.xml?a=1&b=\u00e9" for n in range(size)]
    put = await gp.put("/subscriptions/alice/desk.json", json=urls, headers=basic())
    assert put.status == 200
    for path, expected in (
        ("/subscriptions/alice/desk.json", urls),
        ("/subscriptions/alice.json", [{"url": url, "title": url} for url in urls]),
    ):
        response = await gp.get(path, headers=basic())
        assert response.headers["Content-Type"] == "application/json; charset=utf-8"
        assert await response.read() == dumps(expected).encode("ascii")
    as_txt = await gp.get("/subscriptions/alice/desk.txt", headers=basic())
    assert as_txt.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert await as_txt.read() == "".join(f"{url}\n" for url in urls).encode("utf-8")
    as_opml = await gp.get("/subscriptions/alice.opml", headers=basic())
    assert as_opml.headers["Content-Type"] == "text/x-opml; charset=utf-8"
    document = await as_opml.read()
    assert b"<title>podsync subscriptions of alice</title>" in document
    assert [outline.url for outline in parse_opml(document)] == urls


async def test_simple_api_formats_and_put_replaces(gp: TestClient[Any, Any]) -> None:
    await push(gp, add=[A, B])
    response = await gp.put("/subscriptions/alice/desk.json", json=[B, C], headers=basic())
    assert response.status == 200
    assert await response.read() == b""
    as_json = await gp.get("/subscriptions/alice/desk.json", headers=basic())
    assert await as_json.json() == [B, C]
    as_txt = await gp.get("/subscriptions/alice/desk.txt", headers=basic())
    assert await as_txt.text() == f"{B}\n{C}\n"
    as_opml = await gp.get("/subscriptions/alice.opml", headers=basic())
    assert as_opml.content_type == "text/x-opml"
    text = await as_opml.text()
    assert f'type="rss" text="{B}" xmlUrl="{B}"' in text
    users_json = await (await gp.get("/subscriptions/alice.json", headers=basic())).json()
    assert users_json == [{"url": B, "title": B}, {"url": C, "title": C}]
    put_txt = await gp.put("/subscriptions/alice/desk.txt", data=f"{A}\n\n", headers=basic())
    assert put_txt.status == 200
    assert await (await gp.get("/subscriptions/alice/desk.json", headers=basic())).json() == [A]
    assert (await gp.get("/subscriptions/alice.xml", headers=basic())).status == 400
    assert (
        await gp.put("/subscriptions/alice/desk.json", data=b"{", headers=basic())
    ).status == 400
    # The replacement went through unsubscribe/subscribe: other devices see it once.
    got = await pull(gp, 0, device="other")
    assert got["add"] == [A]
