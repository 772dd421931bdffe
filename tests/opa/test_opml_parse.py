# ruff: noqa: RUF001 - the typographic quotes and dashes are what the fixtures hold
"""podsync.opml: parsing what real apps export, refusing what is not OPML, and
serialising so that listparser reads it back (contract section 10)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import listparser
import pytest

from podsync.opml import OpmlError, OutlineFeed, parse_opml, serialise_opml

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opml"

# fixture -> the (url, title) pairs it holds, in document order.
EXPECTED: dict[str, list[tuple[str, str | None]]] = {
    "antennapod.opml": [
        ("https://latenightlinux.com/feed/mp3", "Late Night Linux"),
        ("https://feeds.simplecast.com/EmVW7VGp", "Radiolab"),
        ("https://example.org/podcasts/kurz?format=rss&lang=de", "Kurzgesagt & Friends"),
        ("https://feeds.example.fr/ca-minteresse.xml", "Ça m'intéresse"),
    ],
    "pocketcasts.opml": [
        ("https://feeds.simplecast.com/54nAGcIl", "The Daily"),
        ("https://feeds.simplecast.com/BqbsxVfO", "99% Invisible"),
        ("https://feeds.feedburner.com/dancarlin/history?format=xml", "Hardcore History"),
    ],
    # Episode outlines and playlists inside are not feeds.
    "overcast.opml": [
        ("https://atp.fm/rss", "Accidental Tech Podcast"),
        ("https://www.relay.fm/cortex/feed", "Cortex"),
    ],
    # gPodder puts the description in `text` and the name in `title`.
    "gpodder.opml": [
        ("http://faif.us/feeds/cast-ogg/", "Free as in Freedom"),
        ("https://linuxunplugged.com/rss", "Linux Unplugged"),
        ("https://example.net/nodesc.xml", "No Description Show"),
    ],
    "itunes-apple-podcasts.opml": [
        ("https://www.thisamericanlife.org/podcast/rss.xml", "This American Life"),
        ("https://feeds.npr.org/510289/podcast.xml", "Planet Money"),
    ],
    "podcast-addict.opml": [
        ("https://feeds.simplecast.com/4T39_jAj", "StarTalk Radio"),
        ("https://feeds.megaphone.fm/sciencevs", "Science Vs"),
        ("https://feeds.simplecast.com/dHoohVNH", "Conan O’Brien Needs A Friend"),
    ],
    "castro.opml": [
        ("https://feeds.megaphone.fm/replyall", "Reply All"),
        ("http://www.hellointernet.fm/podcast?format=rss", "Hello Internet"),
    ],
    # Folders three deep; link/include/source lists and website-only outlines are not feeds.
    "nested-folders.opml": [
        ("https://deep.example.com/feed.xml", "Deep Feed"),
        ("https://linux.example.com/rss", "Linux Feed"),
        ("https://tech.example.com/rss", "Tech Feed"),
        ("https://top.example.com/rss", "Top Level"),
    ],
    "odd-case.opml": [
        ("https://upper.example.com/rss", "Upper"),
        ("https://lower.example.com/rss", "Lower"),
        ("https://mixed.example.com/rss", "Mixed"),
        ("https://spaced.example.com/rss", "Spaced   Out"),
    ],
    "entities.opml": [
        ("https://example.com/feed?a=1&b=2", "Tom & Jerry <3 \"cartoons\" 'n' more"),
        ("https://cafe.example.fr/rss", "Café Français … été"),
        ("https://rock.example.com/rss", "Rock\xa0n’Roll — Live"),
    ],
    # A dateCreated that is not a date makes listparser "bozo"; that is not fatal.
    "opml-2.0-flat.opml": [
        ("https://one.example.com/rss", "One"),
        ("https://two.example.com/rss", "Two"),
    ],
    "iso-8859-1.opml": [
        ("https://oe1.example.at/radiokolleg.xml", "Ö1 Radiokolleg - no"),
        ("https://cafe.example.es/rss", "Café Olé"),
    ],
    "windows-1252.opml": [("https://smart.example.com/rss", "“Smart” quotes € 5")],
    "utf8-bom.opml": [("https://bom.example.de/rss", "Mit BOM – Ünïcödé")],
    "utf16-le.opml": [("https://bom.example.de/rss", "UTF-16 LE – Ünïcödé")],
    "utf16-be.opml": [("https://bom.example.de/rss", "UTF-16 BE – Ünïcödé")],
    # .NET writers label UTF-8 text "utf-16"; the bytes win.
    "dotnet-utf16-label.opml": [("https://bom.example.de/rss", ".NET labelled – Ünïcödé")],
}

# fixture -> words the error must contain (the problem, and where).
REFUSED: dict[str, tuple[str, ...]] = {
    "broken.xml": ("not well-formed", "mismatched tag", "line 5, column 5"),
    "page.html": ("root element is <html>",),
    "empty.opml": ("empty",),
    "rss-feed.xml": ("root element is <rss>, not <opml>",),
    "billion-laughs.opml": ("DTD", "line 2"),
    "not-utf8.opml": ("not valid utf-8", "line 3, column 30"),
}


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_exports_give_exactly_their_feeds(name: str) -> None:
    feeds = parse_opml(read(name))
    assert [(f.url, f.title) for f in feeds] == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_files_that_are_not_opml_are_refused_naming_the_problem(name: str) -> None:
    with pytest.raises(OpmlError) as caught:
        parse_opml(read(name))
    for words in REFUSED[name]:
        assert words in str(caught.value)


def test_exact_repeats_are_kept_so_the_import_can_count_them() -> None:
    urls = [f.url for f in parse_opml(read("skipped.opml"))]
    assert urls.count("https://good.example.com/feed/") == 2
    assert len(urls) == 8


def test_an_undefined_entity_is_an_error_with_its_position() -> None:
    doc = b'<opml version="2.0"><body>\n  <outline text="&bogus;" xmlUrl="https://a.example/rss"/>'
    with pytest.raises(OpmlError, match=r"undefined entity \(line 2, column 3\)"):
        parse_opml(doc + b"</body></opml>")


def test_an_error_after_html_entities_reports_the_files_own_column() -> None:
    # &eacute; is 8 characters in the file: the column must be the one a plain
    # 8-letter text gives, not that of a shorter character reference.
    doc = (
        b'<opml><body><outline text="&eacute;&eacute;" xmlUrl="https://a.example/r"></body></opml>'
    )
    plain = doc.replace(b"&eacute;", b"eeeeeeee")
    with pytest.raises(OpmlError) as with_entities:
        parse_opml(doc)
    with pytest.raises(OpmlError) as without:
        parse_opml(plain)
    assert "mismatched tag (line 1, column 77)" in str(without.value)
    assert str(with_entities.value) == str(without.value)


def test_an_unknown_declared_encoding_is_refused() -> None:
    with pytest.raises(OpmlError, match="unknown encoding 'x-klingon'"):
        parse_opml(b'<?xml version="1.0" encoding="x-klingon"?><opml/>')


def test_a_declared_codec_that_is_not_a_text_encoding_is_refused() -> None:
    with pytest.raises(OpmlError, match="not a text encoding"):
        parse_opml(b'<?xml version="1.0" encoding="base64"?><opml/>')


@pytest.mark.parametrize("codec", ["punycode", "punycode ", "PUNYCODE"])
def test_a_declared_codec_python_cannot_decode_with_is_refused_not_a_crash(codec: str) -> None:
    # Issue 10 item 10: punycode is a "text encoding" to Python, and its decoder
    # raises a bare UnicodeError, which escaped as a traceback.
    document = (
        f'<?xml version="1.0" encoding="{codec.strip()}"?>'
        '<opml version="2.0"><body><outline xmlUrl="https://a.example/f"/></body></opml>'
    ).encode()
    with pytest.raises(OpmlError, match="cannot be decoded as punycode"):
        parse_opml(document)


def test_external_entities_are_never_fetched_or_declared() -> None:
    doc = (
        b'<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        b'<opml><body><outline text="&xxe;" xmlUrl="https://a.example/rss"/></body></opml>'
    )
    with pytest.raises(OpmlError, match="DTD"):
        parse_opml(doc)


def test_a_url_looking_document_is_not_fetched() -> None:
    # listparser.parse(str) would fetch this; podsync hands it bytes only.
    with pytest.raises(OpmlError, match="not well-formed"):
        parse_opml(b"https://example.com/subscriptions.opml")


def test_an_opml_without_feeds_parses_to_nothing() -> None:
    assert parse_opml(b'<opml version="2.0"><head/><body/></opml>') == []


def test_serialised_opml_is_read_back_by_listparser_to_the_same_feeds() -> None:
    feeds = [
        OutlineFeed("https://example.com/feed?a=1&b=2", 'Tom & "Jerry" <3'),
        OutlineFeed("https://example.org/rss", None),
        OutlineFeed("https://example.net/é", "Café\nmenu\x01"),
    ]
    document = serialise_opml(feeds, "mine & yours", datetime(2026, 11, 22, tzinfo=UTC))
    assert document.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">')
    assert b"<dateCreated>Sun, 22 Nov 2026 00:00:00 GMT</dateCreated>" in document
    parsed = listparser.parse(document)
    assert not parsed.bozo
    assert [(f.url, f.title) for f in parsed.feeds] == [
        ("https://example.com/feed?a=1&b=2", 'Tom & "Jerry" <3'),
        ("https://example.org/rss", "https://example.org/rss"),
        ("https://example.net/é", "Café\nmenu"),
    ]
    again = parse_opml(document)
    assert [f.url for f in again] == [f.url for f in feeds]
    assert b'type="rss" text="https://example.org/rss" xmlUrl="https://example.org/rss"' in document


def test_mangled_files_give_feeds_or_an_opml_error_never_a_crash() -> None:
    rnd = random.Random(20261122)
    files = [path.read_bytes() for path in sorted(FIXTURES.iterdir())]
    inserts = [b"&", b"<", b"&eacute;", b"\x00", b'"', b"<!DOCTYPE x>", b"&#0;", b"\xff\xfe"]
    for _ in range(1000):
        data = bytearray(rnd.choice(files) or b"<opml/>")
        for _ in range(rnd.randint(1, 4)):
            at = rnd.randrange(len(data) or 1)
            choice = rnd.random()
            if choice < 0.4 and data:
                data[at] = rnd.randrange(256)
            elif choice < 0.7:
                del data[at : at + rnd.randint(1, 20)]
            else:
                data[at:at] = rnd.choice(inserts)
        try:
            feeds = parse_opml(bytes(data))
        except OpmlError:
            continue
        assert all(isinstance(feed, OutlineFeed) for feed in feeds)
