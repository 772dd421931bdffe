"""A PostgreSQL database URL: whether it is one, and how output shows it.

Secrets stay out of output (contract section 14): `redact` is the one function that
every log line, error message and `podsync config show` passes a URL through.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus, urlsplit

SCHEMES = ("postgresql", "postgres")
REDACTED = "<redacted>"
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


def redact(url: str) -> str:
    """`url` with every password in it replaced by "<redacted>": the user part's
    (`user:password@host`) and the value of each query parameter whose name holds
    "password" (`password`, `sslpassword`, ...) in any case or percent-encoding.
    Everything else stays exactly as written, so the admin still sees what is set.
    Never raises: a URL that does not parse is cut the same way, by its delimiters."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = (rest[:cut], rest[cut:]) if sep else ("", rest)
    userinfo, at, hosts = authority.rpartition("@")
    if at and ":" in userinfo:
        authority = f"{userinfo.partition(':')[0]}:{REDACTED}@{hosts}"
    path, question, query = tail.partition("?")
    query, hash_, fragment = query.partition("#")
    if question:
        query = "&".join(_redact_parameter(p) for p in query.split("&"))
    return f"{scheme}{sep}{authority}{path}{question}{query}{hash_}{fragment}"


def _redact_parameter(parameter: str) -> str:
    name, equals, _ = parameter.partition("=")
    if equals and "password" in unquote_plus(name).lower():
        return f"{name}={REDACTED}"
    return parameter
