"""Hostile input: deep nesting, huge strings, NUL bytes and lone surrogates, wrong
JSON types in every field, SQL-looking text, and forged, truncated or borrowed
cursors and tokens. Every answer is a clear 4xx JSON error (or, for one bad action
of a batch, a `rejected` result), never a 500, and nothing leaks across users."""

from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from itsdangerous import URLSafeSerializer, URLSafeTimedSerializer

from podsync.config import Config
from podsync.services.auth import ACCESS_SALT
from podsync.services.listing import CURSOR_SALT
from podsync.web.opa.sync_wire import ECHO_DEPTH
from tests.conftest import bearer, login
from tests.support.cli_support import PASSWORD, add_user
from tests.support.server_support import access_token, request, serving
from tests.support.sync_helpers import action, all_subscriptions, post_batch

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
WRONG_TYPES: list[Any] = [None, 1, 1.5, True, [], {}, ["x"], {"x": "y"}]
SQL = "'; DROP TABLE subscriptions; --"


async def send(client: Client, path: str, raw: str | bytes, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", **(bearer(token) if token else {})}
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    # A BytesIO, as aiohttp asks for large bodies.
    response = await client.post(path, data=io.BytesIO(data), headers=headers)
    assert response.content_type == "application/json"
    return response.status, await response.json()


async def sync_raw(client: Client, token: str, body: Any) -> tuple[int, Any]:
    status, answer = await send(client, "/api/v1/sync", json.dumps(body), token)
    return status, answer


async def one_result(client: Client, token: str, act: dict[str, Any]) -> dict[str, Any]:
    body = await post_batch(client, token, [act])
    result: dict[str, Any] = body["results"][0]
    return result


# Deep nesting ---------------------------------------------------------------------


@pytest.mark.parametrize("where", ["requests", "data"])
async def test_json_nested_beyond_the_parser_is_a_400(
    client: Client, alice: str, where: str
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    inner = deep if where == "requests" else f'[{{"action_id": "{uuid.uuid4()}", "data": {deep}}}]'
    status, body = await send(client, "/api/v1/sync", '{"requests": ' + inner + "}", alice)
    assert (status, body["description"]) == (400, "request body is nested too deeply")


@pytest.mark.parametrize("path", ["/auth/login", "/auth/refresh"])
async def test_deeply_nested_auth_bodies_are_a_400(client: Client, path: str) -> None:
    status, body = await send(client, path, "{" + '"a":{' * 50_000 + "}" * 50_001)
    assert (status, body["error"]) == (400, "Bad request")


async def test_nested_data_of_a_rejected_action_is_echoed_cut_to_a_bounded_depth(
    client: Client, alice: str
) -> None:
    shallow: Any = {"feed_url": "https://nested.example/"}
    for _ in range(10):
        shallow = {"inner": shallow}
    result = await one_result(client, alice, action("frobnicate", **shallow))
    assert result["status"] == "rejected"
    assert result["data"] == shallow  # within the bound: intact
    # Built as text: the client's own encoder would not go this deep.
    deep = '{"inner":[' * 200 + '{"feed_url":"https://nested.example/"}' + "]}" * 200
    raw = json.dumps({"requests": [action("frobnicate", deep="@")]}).replace('"@"', deep)
    status, body = await send(client, "/api/v1/sync", raw, alice)
    assert status == 200
    [result] = body["results"]
    assert result["status"] == "rejected"
    depth, level = 0, result["data"]["deep"]
    while level:
        level = level["inner"] if isinstance(level, dict) else level[0]
        depth += 1
    assert depth == ECHO_DEPTH - 1  # "deep" itself is the first level below data


def test_a_deep_rejected_action_beside_a_valid_one_is_saved_and_answered(
    config: Config, tmp_path: Path
) -> None:
    """Revision 2, item 1, reproduced against a real server: the old code saved the
    batch, then failed to encode the echo of a rejected action nested as deep as the
    parser still accepts (~964 levels then; a 500 after the COMMIT), and every retry
    answered 500 again. The depth is found at run time: the deepest the server
    parses, which depends on its own stack."""
    add_user(config)
    with serving(config, tmp_path / "serve.log") as base:
        token = access_token(base, "alice", PASSWORD)
        depth = 990
        while True:  # the deepest data that parses: a lone rejected action, then 200
            probe = [action("unsubscribe", sync_id="not-a-uuid", deep="@")]
            status, _ = _post_raw(base, token, _with_depth(probe, depth))
            if status == 200:
                break
            assert status == 400 and depth > 500, status
            depth -= 10
        batch = [
            action(feed_url="https://kept.example/rss"),
            action("unsubscribe", sync_id="not-a-uuid", deep="@"),
        ]
        raw = _with_depth(batch, depth)
        for _ in range(2):  # the first answer, then a retry of the same batch
            status, body = _post_raw(base, token, raw)
            assert status == 200, body
            assert [r["status"] for r in body["results"]] == ["applied", "rejected"]
        _, listed = request(base + "/api/v1/subscriptions", token=token)
    assert [s["feed_url"] for s in listed["results"]] == ["https://kept.example/rss"]


def _with_depth(batch: list[dict[str, Any]], depth: int) -> bytes:
    deep = '{"x":' * depth + "{}" + "}" * depth  # as text: the client's encoder stops sooner
    return json.dumps({"requests": batch}).replace('"@"', deep).encode()


def _post_raw(base: str, token: str, raw: bytes) -> tuple[int, Any]:
    req = urllib.request.Request(  # noqa: S310 - loopback
        base + "/api/v1/sync",
        data=raw,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as response:  # noqa: S310
            return response.status, json.loads(response.read(), parse_constant=_refuse)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def _refuse(name: str) -> None:
    raise AssertionError(f"{name} in a response: not JSON")


# Huge strings ---------------------------------------------------------------------


async def test_huge_strings_are_rejected_or_refused(client: Client, alice: str) -> None:
    long_url = "https://huge.example/" + "a" * 5000
    result = await one_result(client, alice, action(feed_url=long_url))
    assert result["status"] == "rejected" and "2048" in result["reason"]
    result = await one_result(
        client, alice, action(feed_url="https://g.example/", guid="g" * 100_000)
    )
    assert result["status"] == "rejected" and "512" in result["reason"]
    result = await one_result(client, alice, action(type_="t" * 200_000))
    assert result["status"] == "rejected"
    for field in ("username", "password"):
        credentials = {"username": "alice", "password": "x" * 8, field: "y" * 300_000}
        status, body = await send(client, "/auth/login", json.dumps(credentials))
        assert (status, body["error"]) == (401, "Unauthorized")
    too_big = json.dumps({"requests": [action(feed_url="https://a.example/" + "b" * 2_000_000)]})
    status, body = await send(client, "/api/v1/sync", too_big, alice)
    assert (status, body["error"]) == (413, "Payload too large")
    assert await all_subscriptions(client, alice) == []


# NUL bytes, control characters, lone surrogates ------------------------------------


@pytest.mark.parametrize("bad", ["\x00", "\x1b", "\x85", "\ud800", "\udfff"])
@pytest.mark.parametrize("field", ["feed_url", "guid", "sync_id"])
async def test_bad_characters_in_action_data_reject_that_action(
    client: Client, alice: str, field: str, bad: str
) -> None:
    data = {"feed_url": "https://chars.example/", field: f"{field}{bad}x"}
    raw = json.dumps({"requests": [action(**data), action(feed_url="https://fine.example/")]})
    status, body = await send(client, "/api/v1/sync", raw, alice)
    assert status == 200
    bad_result, good = body["results"]
    assert bad_result["status"] == "rejected" and field in bad_result["reason"]
    assert good["status"] == "applied"


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
@pytest.mark.parametrize("field", ["action_id", "type", "action", "occurred_at"])
async def test_bad_characters_in_envelope_fields_are_a_400(
    client: Client, alice: str, field: str, bad: str
) -> None:
    act = action(feed_url="https://x.example/")
    act[field] = act[field] + bad
    status, body = await sync_raw(client, alice, {"requests": [act]})
    assert status == 400
    assert f"requests[0].{field}" in body["description"]


@pytest.mark.parametrize("bad", ["\x00", "\ud800", "\udc00\ud800"])
async def test_bad_characters_in_credentials_are_refused_not_crashed(
    client: Client, alice: str, bad: str
) -> None:
    for credentials in (
        {"username": "alice" + bad, "password": "correct horse battery"},
        {"username": bad, "password": bad * 8},
        {"username": "alice", "password": "correct horse battery" + bad},
    ):
        status, body = await send(client, "/auth/login", json.dumps(credentials))
        assert (status, body["error"]) == (401, "Unauthorized"), credentials
    # A string no server issued is an unknown refresh token, whatever it holds.
    status, body = await send(client, "/auth/refresh", json.dumps({"refresh_token": "r" + bad}))
    assert (status, body["error"]) == (401, "Unauthorized")


BAD_QUERIES = ["since=%00", "limit=%00", "since=%ED%A0%80", "limit=%EF%BC%95"]


@pytest.mark.parametrize(
    ("path", "query"),
    [("/api/v1/subscriptions", q) for q in [*BAD_QUERIES, "include_unsubscribed=%00"]]
    + [("/api/v1/sync", q) for q in [*BAD_QUERIES, "include_own=%00", "include=%00"]],
)
async def test_bad_bytes_in_query_parameters_are_a_400(
    client: Client, alice: str, path: str, query: str
) -> None:
    response = await client.get(f"{path}?{query}", headers=bearer(alice))
    assert response.status == 400
    assert (await response.json())["error"] == "Bad request"


# Wrong JSON types -----------------------------------------------------------------


@pytest.mark.parametrize("body", [[], "x", 1, None, True, {"requests": {}}, {"requests": "x"}])
async def test_an_envelope_of_the_wrong_type_is_a_400(
    client: Client, alice: str, body: Any
) -> None:
    status, answer = await sync_raw(client, alice, body)
    assert (status, answer["error"]) == (400, "Bad request")


@pytest.mark.parametrize("field", ["action_id", "type", "action", "occurred_at", "data"])
async def test_a_wrong_type_in_any_action_field_is_a_400_naming_it(
    client: Client, alice: str, field: str
) -> None:
    for wrong in WRONG_TYPES:
        if field == "data" and isinstance(wrong, dict):
            continue
        act = action(feed_url="https://types.example/")
        act[field] = wrong
        batch = [action(feed_url="https://ok.example/"), act]
        status, body = await sync_raw(client, alice, {"requests": batch})
        assert status == 400, (field, wrong)
        assert body["description"].startswith(f"requests[1].{field}"), body
    assert await all_subscriptions(client, alice) == []


@pytest.mark.parametrize("field", ["feed_url", "guid", "sync_id"])
async def test_a_wrong_type_in_action_data_rejects_that_action(
    client: Client, alice: str, field: str
) -> None:
    for wrong in WRONG_TYPES:
        if wrong is None:
            continue
        data: dict[str, Any] = {"feed_url": "https://data-types.example/", field: wrong}
        result = await one_result(client, alice, action(**data))
        assert result["status"] == "rejected", (field, wrong)
        assert f"data.{field}" in result["reason"]


async def test_a_wrong_type_in_ignored_timestamps_does_not_matter(
    client: Client, alice: str
) -> None:
    act = action(feed_url="https://ts.example/", subscribed_at=[1], unsubscribed_at={"x": 1})
    result = await one_result(client, alice, act)
    assert result["status"] == "applied"
    assert "unsubscribed_at" not in result["data"]


@pytest.mark.parametrize(
    ("path", "fields"),
    [("/auth/login", ("username", "password")), ("/auth/refresh", ("refresh_token",))],
)
async def test_a_wrong_type_in_auth_bodies_is_a_400(
    client: Client, path: str, fields: tuple[str, ...]
) -> None:
    for field in fields:
        for wrong in [*WRONG_TYPES, ""]:
            body = {f: "some text here" for f in fields} | {field: wrong}
            status, answer = await send(client, path, json.dumps(body))
            assert status == 400, (field, wrong)
            assert field in answer["description"]


# SQL-looking input ----------------------------------------------------------------


async def test_sql_looking_text_is_stored_and_returned_verbatim(client: Client, alice: str) -> None:
    url = ("https://sql.example/feed?q=1' OR '1'='1&x=" + SQL).replace(" ", "%20")
    result = await one_result(client, alice, action(feed_url=url, guid=SQL))
    assert result["status"] == "applied"
    (stored,) = await all_subscriptions(client, alice)
    assert (stored["feed_url"], stored["guid"]) == (url, SQL)
    status, _ = await send(
        client, "/auth/login", json.dumps({"username": "alice' OR '1'='1", "password": SQL})
    )
    assert status == 401
    for path in ("/api/v1/subscriptions/' OR 1=1 --", f"/api/v1/subscriptions/{SQL}"):
        response = await client.get(path, headers=bearer(alice))
        assert response.status == 404
    response = await client.get("/api/v1/subscriptions?since=1%20OR%201=1", headers=bearer(alice))
    assert response.status == 400
    assert len(await all_subscriptions(client, alice)) == 1


# Cursors and tokens: forged, truncated, another user's -----------------------------


CreateUser = Callable[..., Awaitable[Any]]


async def bob_with_pages(client: Client, create_user: CreateUser) -> tuple[str, int, str]:
    """Bob, with three subscriptions: his token, id, and a genuine next cursor."""
    bob_user = await create_user("bob")
    bob = (await login(client, "bob"))["access_token"]
    await post_batch(client, bob, [action(feed_url=f"https://bob.example/{i}") for i in range(3)])
    response = await client.get("/api/v1/subscriptions?limit=1", headers=bearer(bob))
    cursor = (await response.json())["next_cursor"].split("since=")[1].split("&")[0]
    return bob, bob_user.id, cursor


def reforged(cursor: str, payload: Any) -> str:
    """A cursor with its payload swapped and the old signature kept."""
    encoded = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return encoded + "." + cursor.rsplit(".", 1)[1]


async def test_forged_truncated_or_borrowed_cursors_are_a_400(
    client: Client, alice: str, create_user: CreateUser
) -> None:
    bob, bob_id, cursor = await bob_with_pages(client, create_user)
    response = await client.get(f"/api/v1/subscriptions?since={cursor}", headers=bearer(bob))
    assert response.status == 200  # the genuine cursor works for its owner
    feed = await client.get("/api/v1/sync", headers=bearer(bob))
    feed_cursor = (await feed.json())["next_since"].split("since=")[1].split("&")[0]
    other_secret = URLSafeSerializer("another server's secret", salt=CURSOR_SALT)
    attempts = {
        "truncated": (bob, cursor[:-3]),
        "payload only": (bob, cursor.split(".")[0]),
        "re-forged position": (bob, reforged(cursor, ["n", bob_id, 0])),
        "another user's": (alice, cursor),
        "a feed cursor as a list cursor": (bob, feed_cursor),
        "signed with another secret": (bob, other_secret.dumps(["n", bob_id, 0])),
    }
    for name, (token, since) in attempts.items():
        response = await client.get(f"/api/v1/subscriptions?since={since}", headers=bearer(token))
        assert response.status == 400, name
    for token, since in ((alice, feed_cursor), (bob, cursor), (bob, feed_cursor[:-2])):
        response = await client.get(f"/api/v1/sync?since={since}", headers=bearer(token))
        assert response.status == 400


async def test_forged_truncated_or_misused_tokens_are_a_401(
    client: Client, alice: str, create_user: CreateUser
) -> None:
    bob, bob_id, _ = await bob_with_pages(client, create_user)
    payload, stamp, signature = bob.split(".")
    forged_payload = base64.urlsafe_b64encode(json.dumps({"u": bob_id + 1, "g": 0}).encode())
    other = URLSafeTimedSerializer("another server's secret key", salt=ACCESS_SALT)
    refresh = (await login(client, "bob"))["refresh_token"]
    attempts = {
        "truncated": bob[:-4],
        "signature flipped": f"{payload}.{stamp}.{signature[::-1]}",
        "payload forged": f"{forged_payload.decode().rstrip('=')}.{stamp}.{signature}",
        "signed with another secret": other.dumps({"u": bob_id, "g": 0}),
        "a refresh token": refresh,
        "empty-ish": ".",
    }
    for name, token in attempts.items():
        response = await client.get("/api/v1/subscriptions", headers=bearer(token))
        assert response.status == 401, name
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    response = await client.get(f"/api/v1/subscriptions?access_token={bob}")
    assert response.status == 401  # a token in the query string is ignored
    for token in (refresh[:-2], bob):  # truncated refresh token; an access token
        status, _ = await send(client, "/auth/refresh", json.dumps({"refresh_token": token}))
        assert status == 401


async def test_another_users_subscription_is_not_found(
    client: Client, alice: str, create_user: CreateUser
) -> None:
    bob, _, _ = await bob_with_pages(client, create_user)
    (bobs, *_) = await all_subscriptions(client, bob)
    response = await client.get(f"/api/v1/subscriptions/{bobs['sync_id']}", headers=bearer(alice))
    assert response.status == 404
    # Nor can alice touch it through the sync API: her unsubscribe finds no entity.
    result = await one_result(client, alice, action("unsubscribe", sync_id=bobs["sync_id"]))
    assert (result["status"], result["reason"]) == ("rejected", "Entity not found")
    assert "unsubscribed_at" not in (await all_subscriptions(client, bob))[0]
