"""Secrets out of output (contract section 14): the one function that every log
line, error message and `podsync config show` passes a database URL through."""

from __future__ import annotations

from urllib.parse import unquote_plus

REDACTED = "<redacted>"


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
