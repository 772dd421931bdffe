"""The HTTP layer of the AntennaPod and Kasts replicas: one request at a time over
http.client, no automatic redirects (any 3xx fails the test: OkHttp would turn a
POST into a GET or drop the credentials), exactly 200 required for success, and an
OkHttp-like cookie jar (JavaNetCookieJar over CookieManager(ACCEPT_ORIGINAL_SERVER)).
Our own code, written from gpodder spec 10.2."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlsplit

# The certificates an https server address is checked against (None: the system's);
# the reverse-proxy tests point it at their own test CA.
TLS_CONTEXT: ssl.SSLContext | None = None


class SyncFailed(Exception):
    """What the app would report as a failed sync (AntennaPod's SyncServiceException)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


@dataclass
class StoredCookie:
    name: str
    value: str
    path: str
    secure: bool
    expires_at: float | None  # client clock; None: session cookie


class OkHttpCookieJar:
    """The rules that decide whether AntennaPod sends a cookie back:
    - no Path: the default path is the directory of the URL that set it (RFC 6265);
    - a Domain attribute must be the request host itself (ACCEPT_ORIGINAL_SERVER
      refuses a parent domain of a deeper host and any foreign domain);
    - Secure cookies go only over https;
    - Max-Age counts from now on the client's clock; an absolute Expires is read
      against the client's (possibly skewed) clock, and a past one drops the cookie."""

    def __init__(self, clock_skew: float = 0.0) -> None:
        self.clock_skew = clock_skew
        self.cookies: dict[str, StoredCookie] = {}

    def now(self) -> float:
        return time.time() + self.clock_skew

    def store(self, url: str, headers: list[str]) -> None:
        parts = urlsplit(url)
        for header in headers:
            jar: SimpleCookie = SimpleCookie()
            jar.load(header)
            for name, morsel in jar.items():
                domain = morsel["domain"].lstrip(".").lower()
                if domain and domain != (parts.hostname or "").lower():
                    continue  # refused by ACCEPT_ORIGINAL_SERVER for deeper or other hosts
                path = morsel["path"] or parts.path.rsplit("/", 1)[0] or "/"
                expires_at: float | None = None
                if morsel["max-age"] != "":
                    expires_at = self.now() + int(morsel["max-age"])
                elif morsel["expires"]:
                    expires_at = parsedate_to_datetime(morsel["expires"]).timestamp()
                if expires_at is not None and expires_at <= self.now():
                    self.cookies.pop(name, None)
                    continue
                self.cookies[name] = StoredCookie(
                    name, morsel.value, path, bool(morsel["secure"]), expires_at
                )

    def header_for(self, url: str) -> str | None:
        parts = urlsplit(url)
        sent = []
        for c in self.cookies.values():
            if c.expires_at is not None and c.expires_at <= self.now():
                continue
            if c.secure and parts.scheme != "https":
                continue
            if not (parts.path == c.path or parts.path.startswith(c.path.rstrip("/") + "/")):
                continue
            sent.append(f"{c.name}={c.value}")
        return "; ".join(sent) or None


def basic_header(user: str, password: str, charset: str = "utf-8") -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode(charset)).decode("ascii")


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def send(
    method: str,
    url: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    jar: OkHttpCookieJar | None = None,
) -> Answer:
    """One request; a redirect is an error of the server under test."""
    parts = urlsplit(url)
    all_headers = dict(headers or {})
    if jar is not None and (cookie := jar.header_for(url)) is not None:
        all_headers["Cookie"] = cookie
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = TLS_CONTEXT or ssl.create_default_context()
        conn = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=10, context=context
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        conn.request(method, target, body=body, headers=all_headers)
        response = conn.getresponse()
        answer = Answer(response.status, response.headers, response.read())
    finally:
        conn.close()
    if 300 <= answer.status < 400:
        raise AssertionError(f"{method} {url} answered a redirect: {answer.status}")
    if jar is not None:
        jar.store(url, answer.headers.get_all("Set-Cookie") or [])
    return answer
