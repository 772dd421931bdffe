"""Which addresses the feed fetcher may reach: only public ones, however written."""

from __future__ import annotations

import ipaddress

import pytest

from podsync.services.feeds.addresses import RefusedAddress, check_literal, is_public

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
