"""Subscription limits refuse, they never drop (contract 14), through a real
`podsync serve` on each engine.

`sync.max_subscriptions_per_user` counts subscribed feeds only; unsubscribed ones are
bounded apart by `sync.max_entities_per_user`. A gpodder subscriptions POST or a
simple-API PUT whose result would pass a limit changes nothing and answers 400 naming
the limit and the count; the sync API rejects each subscribe past a limit on its
own; OPML import lists every feed it could not add.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import PASSWORD, MakeConfig, ServeProcess, run_cli
from tests.support.limits_support import call, feeds, subscribed
from tests.support.server_support import access_token

pytestmark = pytest.mark.both_engines

Serve = Callable[..., ServeProcess]


@pytest.fixture
def server(
    make_config: MakeConfig, seeded_users: tuple[str, ...], serve_process: Serve
) -> Callable[..., str]:
    """A server with the given sync limits; its base URL."""

    def start(subscriptions: int = 10, entities: int | None = None) -> str:
        limits = {"max_subscriptions_per_user": subscriptions}
        if entities is not None:
            limits["max_entities_per_user"] = entities
        return serve_process(make_config(sync=limits)).url

    return start


def put(base: str, urls: list[str]) -> tuple[int, object]:
    return call(base, "PUT", "/subscriptions/alice/phone.json", body=urls)


def test_a_put_replacing_the_list_keeps_every_feed_when_old_ones_filled_the_limit(
    server: Callable[..., str],
) -> None:
    # The reproduction: limit 10, PUT 8, then PUT 8 others answered 200 and kept 2.
    base = server(subscriptions=10)
    assert put(base, feeds("a", 8))[0] == 200
    assert put(base, feeds("b", 8)) == (200, None)
    assert subscribed(base) == sorted(feeds("b", 8))


def test_a_put_past_the_subscription_limit_is_400_naming_it_and_changes_nothing(
    server: Callable[..., str],
) -> None:
    base = server(subscriptions=10)
    assert put(base, feeds("a", 8))[0] == 200
    status, body = put(base, feeds("b", 11))
    assert status == 400, body
    assert isinstance(body, dict) and body["error"] == "Bad request"
    description = body["description"]
    assert "11 subscribed feeds" in description and "the limit is 10" in description
    assert "sync.max_subscriptions_per_user" in description
    assert subscribed(base) == sorted(feeds("a", 8))


def test_a_put_past_the_entity_limit_is_400_naming_it_and_changes_nothing(
    server: Callable[..., str],
) -> None:
    base = server(subscriptions=10, entities=20)
    assert put(base, feeds("a", 8))[0] == 200
    assert put(base, feeds("b", 8))[0] == 200  # 16 feeds kept, 8 of them subscribed
    status, body = put(base, feeds("c", 8))
    assert status == 400, body
    description = body["description"]  # type: ignore[index]
    assert "24 feeds kept" in description and "the limit is 20" in description
    assert "sync.max_entities_per_user" in description
    assert subscribed(base) == sorted(feeds("b", 8))


def test_a_big_put_past_the_limit_is_refused_before_any_piece_is_written(
    server: Callable[..., str],
) -> None:
    # More than one piece (100 commands): checked on the whole list first.
    base = server(subscriptions=250)
    assert put(base, feeds("a", 150))[0] == 200
    status, body = put(base, feeds("a", 150) + feeds("b", 101))
    assert status == 400, body
    assert "251 subscribed feeds" in body["description"]  # type: ignore[index]
    assert subscribed(base) == sorted(feeds("a", 150))
    assert put(base, feeds("b", 250))[0] == 200
    assert subscribed(base) == sorted(feeds("b", 250))


def post(base: str, add: list[str], remove: list[str] | None = None) -> tuple[int, object]:
    body = {"add": add, "remove": remove or []}
    return call(base, "POST", "/api/2/subscriptions/alice/phone.json", body=body)


def test_a_gpodder_post_past_the_limit_is_400_and_stores_nothing(
    server: Callable[..., str],
) -> None:
    # Before: 200 with empty update_urls, and only the first 10 stored.
    base = server(subscriptions=10)
    status, body = post(base, feeds("a", 12))
    assert status == 400, body
    description = body["description"]  # type: ignore[index]
    assert "12 subscribed feeds" in description and "the limit is 10" in description
    assert subscribed(base) == []
    status, body = post(base, feeds("a", 5))
    assert status == 200 and body["update_urls"] == []  # type: ignore[index]
    status, body = post(base, feeds("b", 6))
    assert status == 400 and "11 subscribed feeds" in body["description"]  # type: ignore[index]
    assert subscribed(base) == sorted(feeds("a", 5))
    # Removing in the same upload makes room: the result is what counts.
    status, body = post(base, feeds("b", 6), remove=feeds("a", 5)[:1])
    assert status == 200, body
    assert subscribed(base) == sorted(feeds("a", 5)[1:] + feeds("b", 6))


def test_a_big_gpodder_post_past_the_limit_stores_nothing(server: Callable[..., str]) -> None:
    base = server(subscriptions=120)
    status, body = post(base, feeds("a", 150))
    assert status == 400 and "150 subscribed feeds" in body["description"]  # type: ignore[index]
    assert subscribed(base) == []
    status, body = post(base, feeds("a", 120))
    assert status == 200, body
    assert len(subscribed(base)) == 120


def sync(base: str, token: str, actions: list[dict[str, object]]) -> list[dict[str, object]]:
    import json
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - loopback
        base + "/api/v1/sync",
        data=json.dumps({"requests": actions}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        results: list[dict[str, object]] = json.loads(response.read())["results"]
        return results


def action(kind: str, url: str, at: str) -> dict[str, object]:
    import uuid

    return {
        "action_id": str(uuid.uuid4()),
        "type": "subscription",
        "action": kind,
        "occurred_at": at,
        "data": {"feed_url": url},
    }


def test_sync_api_counts_subscribed_feeds_and_rejects_each_subscribe_past_the_limit(
    server: Callable[..., str],
) -> None:
    base = server(subscriptions=10)
    token = access_token(base, "alice", PASSWORD)
    first = feeds("a", 10)
    at = "2026-01-01T00:00:0{}Z"
    results = sync(base, token, [action("subscribe", u, at.format(1)) for u in first])
    assert {r["status"] for r in results} == {"applied"}
    results = sync(base, token, [action("unsubscribe", u, at.format(2)) for u in first[:5]])
    assert {r["status"] for r in results} == {"applied"}
    # Five places are free again (before: the 10 unsubscribed-or-not entities filled it).
    results = sync(base, token, [action("subscribe", u, at.format(3)) for u in feeds("b", 6)])
    assert [r["status"] for r in results] == ["applied"] * 5 + ["rejected"]
    assert results[5]["reason"] == "subscription limit reached"
    assert len(subscribed(base)) == 10


def test_opml_import_lists_every_feed_it_could_not_add(
    make_config: MakeConfig, seeded_users: tuple[str, ...], tmp_path: Path
) -> None:
    config = make_config(sync={"max_subscriptions_per_user": 10})
    urls = feeds("o", 25)
    document = tmp_path / "list.opml"
    outlines = "".join(f'<outline type="rss" text="{i}" xmlUrl="{u}"/>' for i, u in enumerate(urls))
    document.write_text(f'<opml version="2.0"><head/><body>{outlines}</body></opml>')
    result = run_cli(config, "opml", "import", "alice", str(document))
    assert result.exit_code == 0, result.output
    assert "added: 10" in result.output
    assert "skipped: 15" in result.output
    for url in urls[10:]:
        assert f"  {url}: subscription limit reached" in result.output
