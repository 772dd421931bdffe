"""OPML export: `podsync opml export` and GET /api/v1/subscriptions.opml."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import listparser
from aiohttp.test_utils import TestClient
from hypothesis import example, given, settings
from hypothesis import strategies as st

from podsync import timestamps
from podsync.config import Config
from podsync.opml import OutlineFeed, opml_outlines, parse_opml
from podsync.services.opml_io import OpmlService
from podsync.services.sync import SyncService
from podsync.storage.sqlite import Database
from tests.conftest import bearer
from tests.opa.test_opml_parse import FIXTURES
from tests.support.cli_support import add_user, run, unsubscribe
from tests.support.sync_helpers import action, post_batch

FEEDS = [
    OutlineFeed("https://example.com/feed?a=1&b=2", 'Tom & "Jerry" <3'),
    OutlineFeed("https://example.org/rss", None),
    OutlineFeed("https://gone.example.net/rss", "Gone"),
]
GONE = "https://gone.example.net/rss"


async def import_feeds(config: Config, feeds: list[OutlineFeed], name: str = "alice") -> None:
    """Through the same service the CLI uses, on the app's database file."""
    async with Database(config.database.path) as db:
        service = OpmlService(db, SyncService(db, config.sync))
        await service.import_feeds(await service.require_user(name), feeds)


def feed_set(document: bytes) -> set[tuple[str, str]]:
    parsed = listparser.parse(document)
    return {(f.url, f.title) for f in parsed.feeds}


async def test_http_export_lists_subscribed_feeds_with_their_titles(
    client: TestClient[Any, Any], alice: str, config: Config
) -> None:
    await import_feeds(config, FEEDS)
    await post_batch(
        client,
        alice,
        [action("unsubscribe", timestamps.format(timestamps.now_us()), feed_url=GONE)],
    )
    response = await client.get("/api/v1/subscriptions.opml", headers=bearer(alice))
    assert response.status == 200
    assert response.content_type == "text/x-opml"
    assert response.charset == "utf-8"
    document = await response.read()
    assert b'<opml version="2.0">' in document
    assert feed_set(document) == {
        ("https://example.com/feed?a=1&b=2", 'Tom & "Jerry" <3'),
        ("https://example.org/rss", "https://example.org/rss"),
    }

    everything = await client.get(
        "/api/v1/subscriptions.opml?include_unsubscribed=TRUE", headers=bearer(alice)
    )
    assert (GONE, "Gone") in feed_set(await everything.read())


async def test_http_export_needs_a_token_and_a_sane_flag(
    client: TestClient[Any, Any], alice: str
) -> None:
    response = await client.get("/api/v1/subscriptions.opml")
    assert response.status == 401
    assert (await response.json())["error"] == "Unauthorized"
    bad = await client.get(
        "/api/v1/subscriptions.opml?include_unsubscribed=maybe", headers=bearer(alice)
    )
    assert bad.status == 400
    assert "include_unsubscribed" in (await bad.json())["description"]


async def test_http_export_of_nothing_is_an_empty_but_valid_document(
    client: TestClient[Any, Any], alice: str
) -> None:
    response = await client.get("/api/v1/subscriptions.opml", headers=bearer(alice))
    assert response.status == 200
    assert parse_opml(await response.read()) == []


def test_cli_export_to_stdout_and_to_a_file(config: Config, tmp_path: Path) -> None:
    add_user(config)
    assert run(config, "opml", "import", "alice", str(FIXTURES / "entities.opml")).exit_code == 0
    result = run(config, "opml", "export", "alice")
    assert result.exit_code == 0, result.output
    expected = {
        ("https://example.com/feed?a=1&b=2", "Tom & Jerry <3 \"cartoons\" 'n' more"),
        ("https://cafe.example.fr/rss", "Café Français … été"),
        ("https://rock.example.com/rss", "Rock\xa0n\u2019Roll — Live"),
    }
    assert feed_set(result.stdout_bytes) == expected
    out = tmp_path / "out.opml"
    result = run(config, "opml", "export", "alice", "-o", str(out))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert feed_set(out.read_bytes()) == expected
    assert not (tmp_path / "out.opml.partial").exists()


def test_cli_export_leaves_out_unsubscribed_feeds_unless_asked(config: Config) -> None:
    add_user(config)
    run(config, "opml", "import", "alice", str(FIXTURES / "castro.opml"))
    unsubscribe(config, "https://feeds.megaphone.fm/replyall", timestamps.now_us())
    subscribed = run(config, "opml", "export", "alice")
    assert {url for url, _ in feed_set(subscribed.stdout_bytes)} == {
        "http://www.hellointernet.fm/podcast?format=rss"
    }
    everything = run(config, "opml", "export", "alice", "--include-unsubscribed")
    assert len(feed_set(everything.stdout_bytes)) == 2


def test_cli_export_errors(config: Config, tmp_path: Path) -> None:
    add_user(config)
    unknown = run(config, "opml", "export", "bob")
    assert (unknown.exit_code, unknown.stderr) == (1, "Error: no user named 'bob'\n")
    nowhere = run(config, "opml", "export", "alice", "-o", str(tmp_path / "no" / "x.opml"))
    assert nowhere.exit_code == 1
    assert nowhere.stderr.startswith("Error: cannot write")
    usage = run(config, "opml", "export", "alice", "--bogus")
    assert usage.exit_code == 2


# Characters that matter to an attribute: what quoteattr escapes, what XML cannot
# hold (control characters, U+FFFE, a lone surrogate), and plain text around them.
ATTRIBUTE_TEXT = st.text(
    alphabet=st.sampled_from(list("ab/:?=é\U0001f3a7 &<>\"'\t\n\r\x00\x0b\x1f\ufffe\ud800"))
    | st.characters(),
    max_size=30,
)


@settings(max_examples=400, deadline=None)
@given(url=ATTRIBUTE_TEXT, title=st.none() | ATTRIBUTE_TEXT)
@example(url="https://a.example/?x=1&y=2", title="Tab\there\nand\rthere")
@example(url="https://b.example/\x00\ufffe", title='Tom\'s "show" <3 \ud800')
@example(url="https://c.example/feed", title="")
def test_outlines_quote_as_quoteattr_after_dropping_what_xml_cannot_hold(
    url: str, title: str | None
) -> None:
    def attribute(value: str) -> str:
        return quoteattr(re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]", "", value))

    names = f" text={attribute(title)} title={attribute(title)}" if title else ""
    names = names or f" text={attribute(url)}"
    expected = f'    <outline type="rss"{names} xmlUrl={attribute(url)}/>\n'
    assert opml_outlines([OutlineFeed(url, title)]) == expected
