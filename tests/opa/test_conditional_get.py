"""ETag and If-None-Match on the list, one entity and the change feed (issue 12).

The tag is a digest of the response's bytes, so it changes exactly when the answer
does, whoever wrote: this server, the CLI beside it, or another process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from tests.conftest import bearer, login, run_cli
from tests.support.sync_helpers import action, post_batch

Client = TestClient[Any, Any]


async def _get(client: Client, token: str, path: str, tag: str | None = None) -> Any:
    headers = bearer(token)
    if tag is not None:
        headers["If-None-Match"] = tag
    response = await client.get(path, headers=headers)
    body = await response.read()
    return response.status, response.headers, body


async def _paths(client: Client, token: str) -> list[str]:
    body = await post_batch(client, token, [action(feed_url="https://a.example/rss")])
    sync_id = body["results"][0]["data"]["sync_id"]
    feed = await client.get("/api/v1/sync", headers=bearer(token))
    next_since = (await feed.json())["next_since"]
    return ["/api/v1/subscriptions", f"/api/v1/subscriptions/{sync_id}", next_since]


async def test_an_unchanged_answer_is_a_304_without_a_body(client: Client, alice: str) -> None:
    for path in await _paths(client, alice):
        status, headers, body = await _get(client, alice, path)
        assert status == 200 and body
        tag = headers["ETag"]
        assert tag.startswith('"') and tag.endswith('"')
        assert headers["Cache-Control"] == "private, no-cache"
        for sent in (tag, f"W/{tag}", f'"other", {tag}', "*"):
            status, headers, body = await _get(client, alice, path, sent)
            assert (status, body, headers["ETag"]) == (304, b"", tag), path
        status, _, body = await _get(client, alice, path, '"not-the-tag"')
        assert status == 200 and body


async def test_a_write_through_the_api_changes_the_tag(client: Client, alice: str) -> None:
    paths = await _paths(client, alice)
    tags = [(await _get(client, alice, path))[1]["ETag"] for path in paths]
    sync_id = paths[1].rsplit("/", 1)[1]
    await post_batch(
        client, alice, [action("unsubscribe", occurred_at="2026-02-01T00:00:00Z", sync_id=sync_id)]
    )
    for path, tag in zip(paths, tags, strict=True):
        status, headers, body = await _get(client, alice, path, tag)
        assert status == 200 and body and headers["ETag"] != tag, path


async def test_a_write_by_another_process_changes_the_tag(
    client: Client, alice: str, config: Config, tmp_path: Path
) -> None:
    path = "/api/v1/subscriptions"
    _, headers, _ = await _get(client, alice, path)
    opml = tmp_path / "feeds.opml"
    opml.write_text(
        '<opml version="2.0"><body><outline xmlUrl="https://b.example/"/></body></opml>'
    )
    # The CLI writes through its own connections, as another process would.
    result = await asyncio.to_thread(run_cli, config, "opml", "import", "alice", str(opml))
    assert result.exit_code == 0, result.output
    status, new_headers, body = await _get(client, alice, path, headers["ETag"])
    assert status == 200 and b"https://b.example/" in body
    assert new_headers["ETag"] != headers["ETag"]


@pytest.mark.parametrize("path", ["/api/v1/subscriptions", "/api/v1/sync"])
async def test_tags_belong_to_one_user(
    client: Client, alice: str, create_user: Any, path: str
) -> None:
    """Two users with equal answers may share a tag; a tag never serves another's data."""
    await create_user("bob")
    bob = (await login(client, "bob"))["access_token"]
    await post_batch(client, alice, [action(feed_url="https://only-alice.example/")])
    _, headers, _ = await _get(client, alice, path)
    status, _, body = await _get(client, bob, path, headers["ETag"])
    assert status == 200 and b"only-alice" not in body
