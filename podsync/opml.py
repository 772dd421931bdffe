"""OPML parse and serialise: pure functions, no database.

listparser reads the outlines, but it decodes everything as UTF-8, fetches a
string that looks like a URL and accepts files that are not well-formed. So
`parse_opml` first decodes the bytes itself (byte-order mark, then the XML
declaration's encoding, else UTF-8), checks with expat that the document is
well-formed XML whose root is <opml> (refusing DTDs that declare anything, the
"billion laughs" door), and only then hands listparser UTF-8 bytes.
"""

from __future__ import annotations

import codecs
import email.utils
import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from podsync.errors import InvalidInput

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# "<?" in UTF-16 without a byte-order mark.
_UTF16_NO_BOM = ((b"<\x00?\x00", "utf-16-le"), (b"\x00<\x00?", "utf-16-be"))
_DECLARATION = re.compile(rb"^\s*<\?xml\s[^>]*?\?>", re.ASCII)
_DECLARATION_TEXT = re.compile(r"^\s*<\?xml\s[^>]*?\?>")
_DECLARED_ENCODING = re.compile(r"""(\sencoding\s*=\s*)(["'])([A-Za-z][A-Za-z0-9._-]*)\2""")
_ENTITY_REF = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_XML_ENTITIES = frozenset({"amp", "lt", "gt", "quot", "apos"})


# HTML named entities (&eacute;) are not XML, yet apps put them in titles and
# listparser (an HTML parser underneath) decodes them. The well-formedness check
# sees them as character references (and, to locate an error, as blanks of the
# same length); listparser gets them as they are. The table is built on first use,
# as the XML parser is loaded: a server that never reads OPML does not hold it.
@functools.cache
def _html_entities() -> dict[str, str]:
    """name (no ';') -> its characters, for the HTML entities that XML lacks."""
    import html.entities

    return {
        name[:-1]: text
        for name, text in html.entities.html5.items()
        if name.endswith(";") and name[:-1] not in _XML_ENTITIES
    }


# Characters XML 1.0 does not allow; dropped from exported text.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


class OpmlError(InvalidInput):
    """The file is not an OPML document podsync can read; says where, when it can."""


@dataclass(frozen=True)
class OutlineFeed:
    """A feed outline: its xmlUrl and its title (title attribute, else text)."""

    url: str
    title: str | None


def parse_opml(data: bytes) -> list[OutlineFeed]:
    """The feed outlines of an OPML document in document order, exact repeats included.

    Raises OpmlError when the bytes are not a well-formed XML document with an
    <opml> root.
    """
    # Imported here, not at the top: `podsync serve` loads the whole CLI but never
    # parses OPML, and listparser pulls in `requests` when it is installed (~5 MiB of
    # the server's resident memory for nothing).
    import listparser

    text = decode_document(data)
    outlines = _check_well_formed(text)
    parsed = listparser.parse(_as_utf8(text))
    feeds = []
    for entry in parsed["feeds"]:
        url = str(entry.get("url", ""))
        # listparser takes `text` first; gPodder puts the description there and the
        # feed's name in `title`, which OPML 2.0 defines as the feed's own title.
        title = outlines.titles.get(url) or str(entry.get("title", "")).strip() or None
        feeds.append(OutlineFeed(url, title))
        # listparser keeps each exact URL once; the import counts the repeats.
        feeds.extend(OutlineFeed(url, title) for _ in range(outlines.counts[url] - 1))
    return feeds


def decode_document(data: bytes) -> str:
    """Bytes -> text by the byte-order mark, else the declared encoding, else UTF-8."""
    if not data.strip():
        raise OpmlError("the file is empty")
    encoding, start = _detect_encoding(data)
    try:
        text = data[start:].decode(encoding)
    except LookupError:  # a codec that is not a text encoding ("base64")
        raise OpmlError(f"the XML declaration names {encoding!r}, not a text encoding") from None
    except UnicodeDecodeError as exc:
        line, column = _position(data[start : start + exc.start], encoding)
        raise OpmlError(
            f"the file is not valid {encoding} text (line {line}, column {column})"
        ) from None
    except (UnicodeError, ValueError, TypeError) as exc:
        # Codecs such as "punycode" raise a bare UnicodeError (no position); others
        # that call themselves text encodings may raise anything of this kind.
        raise OpmlError(f"the file cannot be decoded as {encoding}: {exc}") from None
    return text


def _detect_encoding(data: bytes) -> tuple[str, int]:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    for prefix, name in _UTF16_NO_BOM:
        if data.startswith(prefix):
            return name, 0
    declaration = _DECLARATION.match(data)
    if declaration is None:
        return "utf-8", 0
    found = _DECLARED_ENCODING.search(declaration.group().decode("ascii", "replace"))
    if found is None:
        return "utf-8", 0
    declared = found.group(3)
    try:
        name = codecs.lookup(declared).name
    except LookupError:
        raise OpmlError(f"the XML declaration names an unknown encoding {declared!r}") from None
    if name.startswith(("utf-16", "utf-32")):
        # The declaration was readable as ASCII, so the file is not UTF-16/32:
        # .NET writers label UTF-8 files "utf-16". Trust the bytes.
        return "utf-8", 0
    return name, 0


def _position(prefix: bytes, encoding: str) -> tuple[int, int]:
    """Line and column (1-based) just after the valid text `prefix`."""
    try:
        text = prefix.decode(encoding, "replace")
    except (UnicodeError, ValueError, TypeError):
        text = prefix.decode("latin-1")
    line = text.count("\n") + 1
    return line, len(text) - (text.rfind("\n") + 1) + 1


def _as_utf8(text: str) -> bytes:
    """The document as UTF-8 bytes whose declaration (if any) says so."""
    match = _DECLARATION_TEXT.match(text)
    if match is not None:
        declaration = _DECLARED_ENCODING.sub(r"\1\2UTF-8\2", match.group(), count=1)
        text = declaration + text[match.end() :]
    return text.encode("utf-8")


@dataclass
class _Outlines:
    """What the expat pass saw: how often each feed URL occurs, each feed's title attribute."""

    counts: Counter[str]
    titles: dict[str, str]


def _numeric_html_entity(match: re.Match[str]) -> str:
    text = _html_entities().get(match.group(1))
    return match.group() if text is None else "".join(f"&#{ord(ch)};" for ch in text)


def _blank_html_entity(match: re.Match[str]) -> str:
    return "_" * len(match.group()) if match.group(1) in _html_entities() else match.group()


def _check_well_formed(text: str) -> _Outlines:
    """Parse with expat (HTML named entities as character references); OpmlError if the
    text is not an OPML document. An error is located again on a copy whose HTML
    entities are blanked out, so that its line and column are those of the file."""
    try:
        return _expat_pass(_ENTITY_REF.sub(_numeric_html_entity, text))
    except OpmlError:
        _expat_pass(_ENTITY_REF.sub(_blank_html_entity, text))
        raise


def _expat_pass(text: str) -> _Outlines:
    import xml.parsers.expat  # on the first OPML read, not by every server

    parser = xml.parsers.expat.ParserCreate(encoding="UTF-8")
    root: list[str] = []
    seen = _Outlines(Counter(), {})

    def refuse(what: str) -> None:
        raise OpmlError(
            f"the file {what} (line {parser.CurrentLineNumber}, "
            f"column {parser.CurrentColumnNumber + 1})"
        )

    def start_doctype(name: str, sysid: str | None, pubid: str | None, internal: int) -> None:
        if internal:
            refuse("has a DTD with declarations, which podsync does not read")

    def skipped_entity(name: str, is_parameter_entity: int) -> None:
        refuse(f"uses the undefined entity &{name};")

    def start_element(name: str, attrs: dict[str, str]) -> None:
        if not root:
            root.append(name)
            if name.lower() != "opml":
                raise OpmlError(f"the document's root element is <{name}>, not <opml>")
        if name.lower() != "outline":
            return
        lowered = {key.lower(): value for key, value in attrs.items()}
        if "xmlurl" in lowered and lowered.get("type", "").strip().lower() != "source":
            url = lowered["xmlurl"].strip()
            seen.counts[url] += 1
            title = lowered.get("title", "").strip()
            if title and url not in seen.titles:
                seen.titles[url] = title

    parser.StartDoctypeDeclHandler = start_doctype
    parser.EntityDeclHandler = lambda *args: refuse("declares an entity, which podsync refuses")
    parser.SkippedEntityHandler = skipped_entity
    parser.StartElementHandler = start_element
    try:
        parser.Parse(text.encode("utf-8"), True)
    except xml.parsers.expat.ExpatError as exc:
        reason = xml.parsers.expat.ErrorString(exc.code)
        raise OpmlError(
            f"the file is not well-formed XML: {reason} (line {exc.lineno}, column "
            f"{exc.offset + 1})"
        ) from None
    return seen


def serialise_opml(feeds: Iterable[OutlineFeed], title: str, created: datetime) -> bytes:
    """An OPML 2.0 document with one `type="rss"` outline per feed, as UTF-8 bytes."""
    return (opml_head(title, created) + opml_outlines(feeds) + OPML_TAIL).encode("utf-8")


def opml_head(title: str, created: datetime) -> str:
    """The document up to the first outline (for writing it in pieces)."""
    from xml.sax.saxutils import escape  # on the first export, not by every server

    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            '<opml version="2.0">',
            "  <head>",
            f"    <title>{escape(_xml_text(title))}</title>",
            f"    <dateCreated>{email.utils.format_datetime(created, usegmt=True)}</dateCreated>",
            "  </head>",
            "  <body>",
            "",
        ]
    )


def opml_outlines(feeds: Iterable[OutlineFeed]) -> str:
    """One outline line per feed."""
    lines = []
    for feed in feeds:
        url = _attribute(feed.url)
        if feed.title:
            kept = _attribute(feed.title)
            title_attrs = f" text={kept} title={kept}"
        else:
            title_attrs = f" text={url}"
        lines.append(f'    <outline type="rss"{title_attrs} xmlUrl={url}/>\n')
    return "".join(lines)


# A value with none of what XML cannot hold (_NOT_XML) and none of what quoteattr
# escapes is only put in double quotes: most URLs and titles. Their cleaning and
# quoteattr's replaces, which found nothing, were over half an export's time.
_ATTRIBUTE_PLAIN = re.compile("[^&<>\"'\t\n\r\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]*")


def _attribute(value: str) -> str:
    """`value` as an XML attribute value: without the characters XML cannot hold, then
    quoted and escaped exactly as xml.sax.saxutils.quoteattr writes it."""
    if _ATTRIBUTE_PLAIN.fullmatch(value):
        return f'"{value}"'
    from xml.sax.saxutils import quoteattr  # on the first export, not by every server

    return quoteattr(_xml_text(value))


OPML_TAIL = "  </body>\n</opml>\n"


def _xml_text(value: str) -> str:
    return _NOT_XML.sub("", value)
