"""A PostgreSQL database URL: whether podsync can read it, and the start-up line's
words for it (`storage.errors.redact` hides its passwords in every other output).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

SCHEMES = ("postgresql", "postgres")
_HOST_AND_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]*\]|[^:\[\]]*)(?::\d{1,5})?")


def is_database_url(url: str) -> bool:
    """A postgresql:// URL that parses, each of its hosts with a numeric port or none.
    (Messages about one never quote it back: it may hold a password.)"""
    try:
        parts = urlsplit(url)
    except ValueError:  # a bracket left open
        return False
    hosts = parts.netloc.rpartition("@")[2].split(",")
    return parts.scheme in SCHEMES and all(map(_HOST_AND_PORT.fullmatch, hosts))


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
