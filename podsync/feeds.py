"""Feed URLs: validation, the url key that matches variants, the derived podcast guid.

Pure functions shared by the sync rules and the OPML import.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
import unicodedata
import uuid
from functools import lru_cache
from urllib.parse import urlsplit

import idna

MAX_FEED_URL = 2048
MAX_GUID = 512
# Podcasting 2.0 `podcast:guid` namespace.
PODCAST_GUID_NAMESPACE = uuid.UUID("ead4c236-bf58-58c6-a2c6-a6b28d128cb6")
# C0 and C1 controls (DEL included) and lone surrogates; one regex scan, not a
# Python loop per character, because every string of every sync action passes here.
_BAD_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# Matches exactly what str.isspace() calls white space (checked over all code points).
_WHITE_SPACE = re.compile(r"\s")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://", re.ASCII)
# The URLs nearly every client sends: http(s), a plain ASCII host, a port below
# 10,000, then printable ASCII. Each check of check_feed_url passes for these by
# construction (no control, invisible or white-space character, a host, a valid
# port), so one regex match stands for them all; anything else takes the full path.
_PLAIN_URL = re.compile(
    r"[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9.-]+(?::[0-9]{1,4})?(?:[/?#][!-~]*)?", re.ASCII
)


class InvalidFeedUrl(ValueError):
    """Why a feed URL is not acceptable."""


def has_bad_characters(text: str) -> bool:
    """Control characters and lone surrogates are invalid in every string field."""
    return _BAD_CHARACTERS.search(text) is not None


def has_invisible_characters(text: str) -> bool:
    """Format characters (Unicode Cf: U+200B, U+FEFF, U+202E, ...) show as nothing,
    so two URLs that look the same would name two feeds. All are outside ASCII."""
    return not text.isascii() and any(unicodedata.category(ch) == "Cf" for ch in text)


def check_feed_url(url: str) -> str:
    """Return `url` when it is an absolute http(s) URL with a host; else InvalidFeedUrl."""
    if len(url) <= MAX_FEED_URL and _PLAIN_URL.fullmatch(url):
        return url
    return _check_any_url(url)


def is_plain_url(url: str) -> bool:
    """The common case of check_feed_url, with nothing around it to trim: an http(s)
    URL of printable ASCII (no white space) that passes every check."""
    return len(url) <= MAX_FEED_URL and _PLAIN_URL.fullmatch(url) is not None


def _check_any_url(url: str) -> str:
    """check_feed_url's every check, one by one (a test compares the two)."""
    if len(url) > MAX_FEED_URL:
        raise InvalidFeedUrl(f"feed_url is longer than {MAX_FEED_URL} characters")
    if has_bad_characters(url):
        raise InvalidFeedUrl("feed_url contains a control character")
    if has_invisible_characters(url):
        raise InvalidFeedUrl("feed_url contains an invisible (Unicode format) character")
    if _WHITE_SPACE.search(url):
        raise InvalidFeedUrl("feed_url contains white space")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise InvalidFeedUrl(f"feed_url is not a valid URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidFeedUrl("feed_url must be an absolute http or https URL")
    if not parts.hostname:
        raise InvalidFeedUrl("feed_url has no host")
    if not parts.hostname.isascii():
        try:
            _ascii_host(parts.hostname)
        except UnicodeError as exc:  # idna.IDNAError is one
            raise InvalidFeedUrl(f"feed_url host is not a valid domain name: {exc}") from None
    return url


def _without_scheme(url: str) -> str:
    scheme = _SCHEME.match(url)  # a match and a slice: half the cost of re.sub
    return url if scheme is None else url[scheme.end() :]


# url_key and derive_guid are pure and a batch asks for each several times (matching,
# then creating); a small cache keeps that off the single writer's critical path.
@lru_cache(maxsize=1024)
def url_key(url: str) -> str:
    """`HTTPS://Example.com/feed/#x` -> `example.com/feed`: scheme, fragment and
    trailing slashes removed, host lower-cased and in its IDNA ASCII form (after
    NFC); port, path and query kept."""
    rest = _without_scheme(url).partition("#")[0]
    slash, query = rest.find("/"), rest.find("?")
    # Where the authority ends: the first '/' or '?', else the end.
    if slash < 0:
        cut = query if query >= 0 else len(rest)
    else:
        cut = slash if query < 0 or slash < query else query
    authority, tail = rest[:cut], rest[cut:]
    userinfo, at, host = authority.rpartition("@")
    host = host.lower()
    if not host.isascii():
        name, colon, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
        with contextlib.suppress(UnicodeError):  # check_feed_url refused those already
            host = _ascii_host(name) + colon + port
    return (userinfo + at + host + tail).rstrip("/")


def _ascii_host(host: str) -> str:
    """`Bücher.example` (composed or decomposed) -> `xn--bcher-kva.example`: NFC, then
    IDNA (UTS 46, non-transitional, as browsers do), so one host has one key."""
    return str(idna.encode(unicodedata.normalize("NFC", host), uts46=True).decode("ascii"))


@lru_cache(maxsize=1024)
def derive_guid(url: str) -> str:
    """The Podcasting 2.0 podcast:guid: UUIDv5 of the URL without scheme and trailing '/'.

    RFC 9562's UUIDv5 computed directly (uuid.uuid5 plus str() took 2.5 times as long,
    and a batch of new feeds derives 30); tests compare it with uuid.uuid5."""
    name = _without_scheme(url).rstrip("/").encode("utf-8", "surrogatepass")
    return _as_uuid(hashlib.sha1(_NAMESPACE_BYTES + name).hexdigest(), "5")  # noqa: S324


def new_uuid7() -> str:
    """A time-ordered (version 7, RFC 9562) UUID string: 48 bits of Unix time in
    milliseconds, then the millisecond's fraction in 12 bits (the RFC's method 3),
    then 62 random bits. Ids made one after another sort after each other, so a
    b-tree on them grows at its right edge: a batch of new entities touches the
    index's last leaf instead of a leaf of its own per row, as a random id does."""
    ms, fraction = divmod(time.time_ns(), 1_000_000)
    sub_ms = fraction * 4096 // 1_000_000
    return _as_uuid(f"{ms & 0xFFFF_FFFF_FFFF:012x}{sub_ms:04x}{os.urandom(8).hex()}", "7")


def new_uuid7s(count: int) -> list[str]:
    """`count` new version 7 UUIDs in ascending order, from one read of the system's
    randomness (a read per id cost a system call each inside the write turn). They
    share the time prefix; sorted by their random bits, they follow each other as
    ids made one at a time do."""
    if count <= 0:
        return []
    ms, fraction = divmod(time.time_ns(), 1_000_000)
    prefix = f"{ms & 0xFFFF_FFFF_FFFF:012x}{fraction * 4096 // 1_000_000:04x}"
    noise = os.urandom(8 * count).hex()
    # _as_uuid(prefix + 16 digits of noise, "7"), with the shared part made once.
    head = f"{prefix[:8]}-{prefix[8:12]}-7{prefix[13:16]}-"
    return sorted(
        [
            f"{head}{_VARIANT[noise[i]]}{noise[i + 1 : i + 4]}-{noise[i + 4 : i + 16]}"
            for i in range(0, 16 * count, 16)
        ]
    )


# The hex digit of a UUID's variant nibble: its two high bits set to 10 (RFC 4122).
_VARIANT = {f"{n:x}": f"{(n & 0x3) | 0x8:x}" for n in range(16)}


def _as_uuid(hex_digits: str, version: str) -> str:
    """The UUID text of the first 32 hex digits, with the version digit and the
    variant bits set: the string edits of the bit operations on the bytes."""
    h = hex_digits
    return f"{h[:8]}-{h[8:12]}-{version}{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


_NAMESPACE_BYTES = PODCAST_GUID_NAMESPACE.bytes
