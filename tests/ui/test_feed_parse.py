"""Reading feeds: what is kept of titles, links and artwork, on the fast path for
well-formed RSS and Atom and on feedparser's forgiving one; and what is never done
(opening a file or URL the body names, expanding entities, keeping a javascript:
link)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from podsync.services.feeds.failures import shown
from podsync.services.feeds.parse import NotAFeed, parse_feed, parse_forgiving
from podsync.services.feeds.strict import NotStrict, parse_strict
from podsync.services.feeds.text import MAX_TITLE
from podsync.store.feed_info import LearnedFeed
from tests.support.feed_site import atom, rss

BASE = "https://host.example/podcast/feed.xml"
Parser = Callable[[bytes, str], LearnedFeed]
BOTH_PATHS = pytest.mark.parametrize("parse", [parse_strict, parse_forgiving])


@pytest.mark.parametrize("body", [rss(episodes=100), atom()])
def test_both_paths_read_a_feed_alike(body: bytes) -> None:
    assert parse_strict(body, BASE) == parse_forgiving(body, BASE)


def test_a_typical_feed_lists_every_episode_with_guid_and_enclosure() -> None:
    feed = parse_feed(rss(episodes=100), BASE)
    assert (feed.title, feed.link, feed.artwork_url) == (
        "The Show",
        "https://show.example/",
        "https://cdn.show.example/art.jpg",
    )
    assert len(feed.episodes) == 100
    top = feed.episodes[0]
    assert top[:4] == (
        "https://cdn.show.example/100.mp3",
        "show-100",
        "Episode 100: a conversation about things",
        (1_700_000_000 + 100 * 86400) * 1_000_000,  # its pubDate
    )
    # What its page shows: the duration (itunes:duration 00:40:00), the item's web
    # page, the enclosure's type, the show notes with their links (rel added).
    assert (top.duration, top.link, top.media_type) == (
        2400,
        "https://show.example/100",
        "audio/mpeg",
    )
    assert top.notes is not None and top.notes.count("<p>Show notes with <a href=") == 5
    assert 'rel="noopener noreferrer nofollow"' in top.notes


MESSY = (
    b'<?xml version="1.0"?><rss version="2.0"><channel>'
    b"<title>A &lt;b&gt;bold&lt;/b&gt;\tshow</title>"
    b"<link>javascript:alert(1)</link>"
    b"<image><url>/art.png</url><title>t</title><link>/</link></image>"
    b"<item><title>  Tab\tand\nnewline  </title><guid>relative-guid</guid>"
    b'<enclosure url="media/1.mp3" type="audio/mpeg" length="1"/></item>'
    b"<item><title>&lt;script&gt;alert(1)&lt;/script&gt;Safe</title><guid>s</guid></item>"
    b"<item><title>" + b"x" * (MAX_TITLE + 50) + b"</title><guid>long</guid></item>"
    b"<item><title>No guid, no media</title></item>"
    b"<item><guid>no-title</guid></item>"
    b"</channel></rss>"
)


@BOTH_PATHS
def test_markup_becomes_text_links_are_resolved_and_only_web_urls_kept(parse: Parser) -> None:
    feed = parse(MESSY, BASE)
    assert feed.title == "A bold show"
    assert feed.link is None  # never a javascript: URL
    assert feed.artwork_url == "https://host.example/art.png"
    assert [e[:4] for e in feed.episodes] == [
        ("https://host.example/podcast/media/1.mp3", "relative-guid", "Tab and newline", None),
        ("", "s", "alert(1)Safe", None),
        ("", "long", "x" * MAX_TITLE, None),
    ]


@BOTH_PATHS
def test_a_link_urllib_refuses_is_dropped_not_raised(parse: Parser) -> None:
    # A bracket left open: urllib refuses it on every Python release.
    body = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>Brackets</title>'
        b"<link>http://[::1/</link><image><url>http://[::1/art.png</url></image>"
        b'<item><title>One</title><guid>1</guid><enclosure url="http://[::1/1.mp3"/></item>'
        b"</channel></rss>"
    )
    feed = parse(body, BASE)
    assert (feed.title, feed.link, feed.artwork_url) == ("Brackets", None, None)
    assert [e[:4] for e in feed.episodes] == [("", "1", "One", None)]


def test_a_feed_that_is_not_well_formed_is_read_by_the_forgiving_parser() -> None:
    broken = rss(episodes=3).replace(b"<title>The Show</title>", b"<title>Tom & Jerry<br></title>")
    with pytest.raises(NotStrict):
        parse_strict(broken, BASE)
    feed = parse_feed(broken, BASE)
    assert feed.title is not None and feed.title.startswith("Tom & Jerry")
    assert len(feed.episodes) == 3


def test_itunes_artwork_wins_over_the_rss_image() -> None:
    body = rss(artwork="https://cdn.example/square.jpg", rss_image="https://cdn.example/small.png")
    assert parse_feed(body, BASE).artwork_url == "https://cdn.example/square.jpg"


def test_a_body_that_names_a_file_or_url_is_not_opened(tmp_path: Path) -> None:
    # feedparser opens a str or bytes value that names a file or URL; here a real
    # feed waits at that path, so a parser that opened it would find a feed.
    path = tmp_path / "feed.xml"
    path.write_bytes(rss("Read from disk"))
    for body in (str(path).encode(), path.as_uri().encode()):
        with pytest.raises(NotAFeed):
            parse_feed(body, BASE)


def test_external_entities_are_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("LEAKED")
    body = (
        f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY x SYSTEM "{secret.as_uri()}">]>'
        '<rss version="2.0"><channel><title>T &x;</title></channel></rss>'
    ).encode()
    with pytest.raises(NotAFeed, match="declares XML entities"):
        parse_feed(body, BASE)
    assert "LEAKED" not in (parse_forgiving(body, BASE).title or "")


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_nested_entities_are_refused_at_once(encoding: str) -> None:
    levels = "".join(f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10))
    body = (
        f'<?xml version="1.0" encoding="{encoding}"?>'
        f'<!DOCTYPE rss [<!ENTITY a0 "lol">{levels}]>'
        '<rss version="2.0"><channel><title>&a9;</title></channel></rss>'
    ).encode(encoding)
    began = time.process_time()
    with pytest.raises(NotAFeed, match="declares XML entities"):
        parse_feed(body, BASE)
    assert time.process_time() - began < 0.5  # feedparser alone spends seconds on it


@pytest.mark.parametrize(
    "body",
    [b"", b"just text", b"<html><body><p>a page</p></body></html>", b'{"json": "feed?"}'],
)
def test_what_is_not_a_feed_says_so(body: bytes) -> None:
    with pytest.raises(NotAFeed, match=r"not an RSS or Atom feed|empty"):
        parse_feed(body, BASE)


@pytest.mark.parametrize(
    ("url_key", "logged"),
    [
        ("feeds.example.org/show.xml", "feeds.example.org/show.xml"),
        ("alice:s3cret@feeds.example.org/show.xml", "feeds.example.org/show.xml"),
        ("www.patreon.com/rss/show?auth=T0KEN&show=1", "www.patreon.com/rss/show?..."),
        ("host.example?token=T0KEN", "host.example?..."),
    ],
)
def test_log_lines_name_a_feed_without_its_credentials(url_key: str, logged: str) -> None:
    assert shown(url_key) == logged


DATED = (
    b'<?xml version="1.0"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/">'
    b"<channel><title>Dates</title>"
    b"<item><title>Zoned</title><guid>a</guid>"
    b"<pubDate>Tue, 10 Nov 2026 08:00:00 +0100</pubDate></item>"
    b"<item><title>Named zone</title><guid>b</guid>"
    b"<pubDate>Mon, 09 Nov 2026 08:00:00 GMT</pubDate></item>"
    b"<item><title>Dublin Core</title><guid>c</guid><dc:date>2026-11-08T08:00:00Z</dc:date></item>"
    b"<item><title>Unreadable</title><guid>d</guid><pubDate>sometime soon</pubDate></item>"
    b"<item><title>Year 99999</title><guid>e</guid>"
    b"<pubDate>Wed, 31 Dec 99999 00:00 GMT</pubDate></item>"
    b"<item><title>None</title><guid>f</guid></item>"
    b"</channel></rss>"
)
ATOM_DATED = (
    b'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
    b"<title>A</title><id>urn:a</id><updated>2026-11-11T00:00:00Z</updated>"
    b"<entry><title>Both</title><id>urn:1</id><published>2026-11-01T10:00:00+02:00</published>"
    b"<updated>2026-11-05T00:00:00Z</updated></entry>"
    b"<entry><title>Updated only</title><id>urn:2</id>"
    b"<updated>2026-10-01T00:00:00Z</updated></entry>"
    b"</feed>"
)
US = 1_000_000


@BOTH_PATHS
def test_each_item_keeps_its_date_in_utc_or_none(parse: Parser) -> None:
    dates = [e.published_at for e in parse(DATED, BASE).episodes]
    assert dates == [
        1_794_294_000 * US,  # 07:00 UTC
        1_794_211_200 * US,
        1_794_124_800 * US,
        None,
        None,
        None,
    ]
    atom_dates = [e.published_at for e in parse(ATOM_DATED, BASE).episodes]
    assert atom_dates == [1_793_520_000 * US, 1_790_812_800 * US]  # published wins
