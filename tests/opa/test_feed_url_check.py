"""check_feed_url answers plain URLs through one regex: for every string it must
answer exactly what its full list of checks answers (accept unchanged, or refuse)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from podsync.feeds import InvalidFeedUrl, _check_any_url, check_feed_url


def _verdict(check: object, url: str) -> str | None:
    try:
        result = check(url)  # type: ignore[operator]
    except InvalidFeedUrl:
        return None
    assert result == url
    return str(result)


PIECES = st.sampled_from(
    ["http://", "https://", "HTTP://", "hTtPs://", "ftp://", "http:/", "//", "a", "Z", "0",
     "9", ".", "-", ":", ":8", ":80", ":443", ":9999", ":10000", ":65535", ":65536", ":99999",
     ":x", "/", "?", "#", "@", "[", "]", "[::1]", "%", "%20", " ", "\t", "\n", "\x00", "\x7f",
     "\x85", "\u200b", "\u00e9", "b\u00fccher", "xn--", "user:pw@", "\\", "~", "!", "'", '"',
     "feed.xml", "example.com", "localhost", "&a=b", "=", "+", ",", ";", "$", "*", "(", ")"]
)  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(st.lists(PIECES, max_size=12).map("".join))
@example("http://example.com/feed.xml")
@example("https://Example.COM:8080/a?b=c#d")
@example("http://host:/x")
@example("http://host:65536/")
@example("http://..")
@example("http://" + "a" * 2100)
def test_the_fast_path_answers_what_every_check_answers(url: str) -> None:
    assert _verdict(check_feed_url, url) == _verdict(_check_any_url, url)


@given(st.text(max_size=40))
def test_any_text_after_the_scheme_agrees(rest: str) -> None:
    for scheme in ("http://", "https://"):
        url = scheme + rest
        assert _verdict(check_feed_url, url) == _verdict(_check_any_url, url)


def test_the_usual_urls_are_accepted_unchanged() -> None:
    for url in ("https://feeds.example.org/podcast.rss", "http://a.example:8000/f?x=1&y=%20"):
        assert check_feed_url(url) == url
    for bad in ("http://", "http://a b/", "http://a:99999/", "mailto:x@example.com"):
        with pytest.raises(InvalidFeedUrl):
            check_feed_url(bad)
