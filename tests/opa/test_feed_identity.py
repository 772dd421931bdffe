"""One feed, one subscription; one name, one user (issue 10 items 11 and 12).

The url key uses the IDNA ASCII host after NFC, so `bücher.example`, its
decomposed spelling and `xn--bcher-kva.example` are one feed; invisible (Unicode
Cf) characters in a feed URL are invalid; usernames are unique ignoring case."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from tests.conftest import PASSWORD, run_cli
from tests.support.sync_helpers import action, all_subscriptions, post_batch

COMPOSED = "https://bücher.example/feed"
SPELLINGS = [
    COMPOSED,
    unicodedata.normalize("NFD", COMPOSED),
    "https://xn--bcher-kva.example/feed",
    "https://BÜCHER.example/feed/",
]


async def test_every_spelling_of_an_international_host_is_one_subscription(
    client: TestClient[Any, Any], alice: str
) -> None:
    assert len(set(SPELLINGS)) == len(SPELLINGS)
    actions = [
        action(feed_url=url, occurred_at=f"2026-01-01T00:00:0{i}Z")
        for i, url in enumerate(SPELLINGS)
    ]
    body = await post_batch(client, alice, actions)
    assert [r["status"] for r in body["results"]] == ["applied", "ignored", "ignored", "ignored"]
    stored = await all_subscriptions(client, alice)
    assert [s["feed_url"] for s in stored] == [COMPOSED]


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff", "\u202e", "\u00ad", "\u2060"])
@pytest.mark.parametrize("where", ["host", "path"])
async def test_an_invisible_character_in_a_feed_url_is_invalid(
    client: TestClient[Any, Any], alice: str, invisible: str, where: str
) -> None:
    url = (
        f"https://pod{invisible}cast.example/feed"
        if where == "host"
        else f"https://podcast.example/fe{invisible}ed"
    )
    body = await post_batch(client, alice, [action(feed_url=url)])
    [result] = body["results"]
    assert result["status"] == "rejected"
    assert "invisible" in result["reason"]
    assert await all_subscriptions(client, alice) == []


async def test_a_host_idna_refuses_is_invalid(client: TestClient[Any, Any], alice: str) -> None:
    body = await post_batch(client, alice, [action(feed_url="https://a..bücher.example/f")])
    assert body["results"][0]["status"] == "rejected"
    assert "not a valid domain name" in body["results"][0]["reason"]


def test_usernames_are_unique_ignoring_case(config: Config) -> None:
    first = run_cli(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\n")
    assert first.exit_code == 0, first.output
    for name in ("Alice", "ALICE", "aLiCe"):
        result = run_cli(config, "user", "add", name, "--password-stdin", input=PASSWORD + "\n")
        assert result.exit_code == 1
        assert result.stderr == (
            "Error: a user named 'alice' already exists (names are unique ignoring case)\n"
        )
    listed = run_cli(config, "user", "list")
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()[1:]] == ["alice"]


async def test_login_still_compares_names_exactly(
    client: TestClient[Any, Any], create_user: Any
) -> None:
    await create_user("alice")
    response = await client.post("/auth/login", json={"username": "Alice", "password": PASSWORD})
    assert response.status == 401
