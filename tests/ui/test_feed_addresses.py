"""Which addresses the feed fetcher may reach: only public ones, however written."""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Callable
from urllib.parse import urlencode

import pytest

from podsync.services.feeds.addresses import RefusedAddress, check_literal, is_public
from podsync.services.feeds.refusals import refused
from tests.conftest import PASSWORD, MakeConfig, ServeProcess, run_cli
from tests.support.gpodder_support import call

REFUSED = [
    "127.0.0.1",  # loopback
    "127.255.255.254",
    "0.0.0.0",  # noqa: S104 - unspecified (reaches this machine on Linux)
    "10.1.2.3",  # private
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",  # link-local: cloud metadata services
    "100.64.0.1",  # shared address space (CGNAT)
    "192.0.0.8",  # IETF protocol assignments
    "192.0.2.1",  # documentation
    "198.18.0.1",  # benchmarking
    "224.0.0.251",  # multicast
    "239.255.255.250",
    "240.0.0.1",  # reserved
    "255.255.255.255",  # broadcast
    "::1",
    "::",
    "fe80::1",  # link-local
    "fc00::1",  # unique local
    "fd12:3456::1",
    "ff02::1",  # multicast
    "::ffff:127.0.0.1",  # IPv4-mapped loopback
    "::ffff:10.0.0.1",
    "2002:7f00:1::1",  # 6to4 wrapping 127.0.0.1
    "2002:a00:1::1",  # 6to4 wrapping 10.0.0.1
    "2001:db8::1",  # documentation
    "64:ff9b:1::1",  # local-use NAT64
    "64:ff9b::7f00:1",  # NAT64 wrapping 127.0.0.1
    # IPv4-compatible (deprecated, ::/96): refused whatever they carry.
    "::7f00:1",  # [::127.0.0.1]
    "::a9fe:a9fe",  # [::169.254.169.254]
    "::a00:1",  # [::10.0.0.1]
    "::101:101",  # [::1.1.1.1]
    # IPv4-translated (::ffff:0:0:0/96): likewise.
    "::ffff:0:7f00:1",
    "::ffff:0:a9fe:a9fe",
    "::ffff:0:101:101",
]
PUBLIC = [
    "93.184.215.14",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "64:ff9b::101:101",  # NAT64 wrapping 1.1.1.1
]


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))
    with pytest.raises(RefusedAddress, match="is not a public address"):
        check_literal(address if ":" not in address else f"[{address}]")


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))
    check_literal(address)


def test_host_names_are_left_to_the_resolver() -> None:
    check_literal("feeds.example.org")  # checked after resolution, not here


# Literals that carry a loopback or link-local IPv4 address in the IPv4-compatible
# and IPv4-translated forms. The port is closed everywhere; the check refuses them
# before any connection is tried, so no packet is ever sent to them.
EMBEDDING = ["::7f00:1", "::127.0.0.1", "::a9fe:a9fe", "::ffff:0:7f00:1", "::ffff:0:a9fe:a9fe"]


def test_the_running_fetcher_refuses_ipv4_compatible_and_translated_literals(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> None:
    """Through `podsync serve` with the fetcher on: each feed is recorded as refused by
    the address check (what its podcast page shows), not as a connection that
    failed."""
    config = make_config(feeds={"fetch_metadata": True})
    feeds = [f"http://[{address}]:9/feed.xml" for address in EMBEDDING]
    outlines = "".join(f'<outline type="rss" text="f" xmlUrl="{url}"/>' for url in feeds)
    opml = f'<opml version="2.0"><head/><body>{outlines}</body></opml>'
    path = config.database.path + ".opml"
    with open(path, "w") as file:
        file.write(opml)
    imported = run_cli(config, "opml", "import", "alice", path)
    assert imported.exit_code == 0, imported.output
    made_admin = run_cli(config, "user", "admin", "alice")  # an admin is shown the address
    assert made_admin.exit_code == 0, made_admin.output
    server = serve_process(config)  # its fetcher's first pass runs at start
    form = urlencode({"username": "alice", "password": PASSWORD}).encode()
    signed_in = call(
        server.url,
        "POST",
        "/ui/login",
        form,
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert signed_in.status == 303, signed_in.body
    cookie = signed_in.headers["Set-Cookie"].split(";")[0]
    listing = call(server.url, "GET", "/ui/subscriptions", Cookie=cookie).body.decode()
    pages = sorted(set(re.findall(r'href="(/ui/podcasts/[^"]+)"', listing)))
    assert len(pages) == len(EMBEDDING), listing
    deadline = time.monotonic() + 30
    while True:  # a podcast's page says why its feed's last fetch failed
        said = []
        for podcast in pages:
            page = call(server.url, "GET", podcast, Cookie=cookie).body.decode()
            said += re.findall(r"the last try failed: ([^<]*)\.<", page)
        if len(said) == len(EMBEDDING) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    shown = [str(ipaddress.ip_address(address)) for address in EMBEDDING]
    assert sorted(said) == sorted(refused(f"{a} is not a public address") for a in shown), said
