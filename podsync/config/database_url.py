"""A PostgreSQL database URL: whether podsync can read it, and the start-up line's
words for it (`storage.errors.redact` hides its passwords in every other output).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

SCHEMES = ("postgresql", "postgres")
_HOST_AND_PORT = re.compile(r"(\[[0-9A-Fa-f:.]*\]|[^:\[\]]*)(:[0-9]{1,5})?")
_NETLOC_END = re.compile(r"[/?#]")
NOT_A_URL = (
    "must be a postgresql:// URL like postgresql://user:password@host:5432/dbname "
    "(or empty for SQLite)"
)
# asyncpg reads the URL with urllib's parser, which (in the Python releases patched
# for CVE-2024-11168: 3.11.11, 3.12.8, 3.13.1, Debian 12's 3.11.2) takes an address in
# brackets only as the first host, and with a port when more hosts follow.
BRACKETS = (
    "has an address in brackets where the PostgreSQL driver cannot read it: only an "
    "IPv6 address goes in brackets, and only as the first host, with its port when "
    "more hosts follow (postgresql://user:password@[::1]:5432,db2:5432/dbname); or "
    "give that host by name"
)


def problem(url: str) -> str | None:
    """What is wrong with a database URL, in words that follow "database.url" and
    never quote it (it may hold a password); None when podsync and the driver can
    read it on every Python release, old or patched."""
    scheme, separator, rest = url.partition("://")
    if not separator or scheme.lower() not in SCHEMES:
        return NOT_A_URL
    hosts = _NETLOC_END.split(rest, maxsplit=1)[0].rpartition("@")[2].split(",")
    misplaced = False
    for position, text in enumerate(hosts):
        match = _HOST_AND_PORT.fullmatch(text)
        if match is None:
            return NOT_A_URL
        host, port = match.groups()
        if host.startswith("[") and (position > 0 or (len(hosts) > 1 and port is None)):
            misplaced = True
    if misplaced:
        return BRACKETS
    try:
        urlsplit(url)
    except ValueError:  # an IPv4 address or a malformed one in brackets, say
        return BRACKETS
    return None


def describe(url: str) -> str:
    """The database in words, for the start-up line: host, port and database name,
    never the user or a password."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # several hosts, or a port that is not a number: leave it out
        port = ""
    return f"PostgreSQL database {parts.path.lstrip('/') or '(default)'} on {host}{port}"
