#!/usr/bin/env python3
"""The container image's HEALTHCHECK (installed there as podsync-healthcheck).

Reads podsync's configuration the way `podsync serve` does (PODSYNC_* variables, the
file PODSYNC_CONFIG names, ./podsync.toml) and asks GET /healthz on the address it
listens on. Exit 0 when it answers 200 (the database answers and takes writes), 1
otherwise, with the reason on stderr. Needs only Python: the image has no curl.
"""

from __future__ import annotations

import ssl
import sys
import urllib.error
import urllib.request

from podsync.config import ConfigError, load_config

TIMEOUT = 4.0  # below the image's --timeout=5s


def url_of(host: str, port: int, tls: bool) -> str:
    # A wildcard address is reached on loopback; an IPv6 literal needs brackets.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)  # noqa: S104
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if tls else 'http'}://{host}:{port}/healthz"


def main() -> int:
    try:
        server = load_config().server
    except ConfigError as exc:
        print(f"podsync-healthcheck: {exc}", file=sys.stderr)
        return 1
    tls = bool(server.tls_cert)
    url = url_of(server.host, server.port, tls)
    # Its own server on loopback, with whatever certificate it was given.
    context = ssl._create_unverified_context() if tls else None  # noqa: S323
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT, context=context) as response:  # noqa: S310
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError as exc:
        print(f"podsync-healthcheck: {url}: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"podsync-healthcheck: {url} answered {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
