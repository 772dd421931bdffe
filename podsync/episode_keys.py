"""How episode actions are kept: each episode once per user and podcast, found by a
32-bit hash of its URL and stored without the part its podcast's episodes share;
the action's kind as a small number.

The store and the schema steps of both engines compute the same values: the hash is
the first four bytes of the URL's MD5 (PostgreSQL: `('x' || substr(md5(url), 1, 8))
::bit(32)::int`), the prefix what `^[^?#]*/` matches (`substring(url from ...)`).
"""

from __future__ import annotations

import hashlib
import re

# An action's kind as stored (a number costs one byte or none; the name four to eight).
ACTION_NAMES = ("download", "play", "delete", "new", "flattr")
ACTION_CODES = {name: code for code, name in enumerate(ACTION_NAMES)}

_PREFIX = re.compile(r"[^?#]*/")
PREFIX_PATTERN = "^[^?#]*/"  # the same, as a PostgreSQL regular expression


def url_hash(url: str) -> int:
    """A signed 32-bit hash of the URL: a short key to find an episode by, checked
    against the URL itself (two URLs may share one)."""
    digest = hashlib.md5(url.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big", signed=True)


def url_prefix(url: str) -> str:
    """What the URLs of a podcast's episodes usually begin with: the first one's
    scheme, host and path up to its last `/` (before any query or fragment)."""
    match = _PREFIX.match(url)
    return match.group(0) if match else ""


def stored_url(url: str, prefix: str) -> tuple[str, int]:
    """(the text stored for an episode URL, 1 when it is without the prefix)."""
    if prefix and url.startswith(prefix):
        return url[len(prefix) :], 1
    return url, 0


def full_url(stored: str, prefixed: int, prefix: str) -> str:
    return prefix + stored if prefixed else stored
