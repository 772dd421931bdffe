"""Chapters in feeds: Podlove's inline `psc:chapters` (both parsers) and Podcasting
2.0's `podcast:chapters` address (the strict parser), and the JSON document such an
address gives, read and bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from podsync.services.feeds import chapters
from podsync.services.feeds.parse import parse_feed, parse_forgiving

CHAPTERED = b"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:psc="http://podlove.org/simple-chapters"
     xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel><title>T</title>
<item><title>Inline</title><guid>a</guid><enclosure url="https://h.example/a.mp3"/>
<psc:chapters version="1.2"><psc:chapter start="00:01:10.5" title="Second"/>
<psc:chapter start="0" title=" First&#9;one "/><psc:chapter start="soon" title="Unread"/>
<psc:chapter start="00:02:00"/></psc:chapters></item>
<item><title>Linked</title><guid>b</guid><enclosure url="https://h.example/b.mp3"/>
<podcast:chapters url="/b/chapters.json" type="application/json+chapters"/></item>
<item><title>None</title><guid>c</guid><enclosure url="https://h.example/c.mp3"/></item>
</channel></rss>"""


@pytest.mark.parametrize("parse", [parse_feed, parse_forgiving], ids=["strict", "forgiving"])
def test_chapters_inline_and_linked(parse: Any) -> None:
    by_title = {
        e.title: e.chapters for e in parse(CHAPTERED, "https://h.example/feed.xml").episodes
    }
    inline = chapters.kept(by_title["Inline"])
    assert inline is not None and inline.url is None
    assert [(c.start, c.title) for c in inline.chapters] == [(0, "First one"), (70, "Second")]
    assert by_title["None"] is None
    if parse is parse_feed:  # Podcasting 2.0's tag: the strict parser's (well-formed feeds)
        linked = chapters.kept(by_title["Linked"])
        assert linked is not None and linked.url == "https://h.example/b/chapters.json"


def test_chapters_json_read_and_bounded() -> None:
    body = json.dumps(
        {
            "chapters": [
                {"startTime": 5.5, "title": "b"},
                {"startTime": 0, "title": "a"},
                {"startTime": 9, "title": "hidden", "toc": False},
                {"startTime": -1, "title": "bad"},
                {"startTime": True, "title": "bad"},
                {"title": "no start"},
                "junk",
            ]
        }
    ).encode()
    assert [(c.start, c.title) for c in chapters.from_json(body)] == [(0, "a"), (5, "b")]
    assert chapters.from_json(b"not json") == [] and chapters.from_json(b"[1]") == []
    many = json.dumps({"chapters": [{"startTime": n, "title": "x"} for n in range(2000)]})
    assert len(chapters.from_json(many.encode())) == chapters.MAX_CHAPTERS
