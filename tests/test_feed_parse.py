"""Reading feeds: what is kept of titles, links and artwork, and what is never done
(opening a file or URL named by the body, keeping a javascript: link)."""

from __future__ import annotations

from pathlib import Path

import pytest

from podsync.services.feeds.parse import MAX_TITLE, NotAFeed, parse_feed
from tests.feed_site import rss

BASE = "https://host.example/podcast/feed.xml"


def test_a_body_that_names_a_file_or_url_is_not_opened(tmp_path: Path) -> None:
    # feedparser opens a str or bytes value that names a file or URL; here a real
    # feed waits at that path, so a parser that opened it would find a feed.
    path = tmp_path / "feed.xml"
    path.write_bytes(rss("Read from disk"))
    for body in (str(path).encode(), path.as_uri().encode()):
        with pytest.raises(NotAFeed):
            parse_feed(body, BASE)


def test_markup_in_titles_becomes_text_and_controls_go() -> None:
    body = (
        b'<?xml version="1.0"?><rss version="2.0"><channel>'
        b'<title type="html">A &lt;b&gt;bold&lt;/b&gt;\tshow&#1;</title>'
        b"<link>javascript:alert(1)</link>"
        b"<image><url>/art.png</url><title>t</title><link>/</link></image>"
        b"<item><title>  Tab\tand\nnewline  </title><guid>relative-guid</guid>"
        b'<enclosure url="media/1.mp3" type="audio/mpeg" length="1"/></item>'
        b"<item><title>" + b"x" * (MAX_TITLE + 50) + b"</title><guid>long</guid></item>"
        b"<item><title>No guid, no media</title></item>"
        b"</channel></rss>"
    )
    feed = parse_feed(body, BASE)
    assert feed.title == "A bold show"
    assert feed.link is None  # never a javascript: URL
    assert feed.artwork_url == "https://host.example/art.png"
    assert list(feed.episodes) == [
        ("https://host.example/podcast/media/1.mp3", "relative-guid", "Tab and newline"),
        ("", "long", "x" * MAX_TITLE),
    ]


def test_a_typical_feed_lists_every_episode_with_guid_and_enclosure() -> None:
    feed = parse_feed(rss(episodes=100), BASE)
    assert len(feed.episodes) == 100
    assert feed.episodes[0] == (
        "https://cdn.show.example/100.mp3",
        "show-100",
        "Episode 100: a conversation about things",
    )


@pytest.mark.parametrize(
    "body",
    [b"", b"just text", b"<html><body><p>a page</p></body></html>", b'{"json": "feed?"}'],
)
def test_what_is_not_a_feed_says_so(body: bytes) -> None:
    with pytest.raises(NotAFeed, match="not an RSS or Atom feed"):
        parse_feed(body, BASE)
