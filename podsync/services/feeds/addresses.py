"""Which addresses the feed fetcher may connect to (SSRF).

A feed URL comes from any user, so a fetch must never reach the server's own
network: loopback, private, link-local (cloud metadata at 169.254.169.254),
shared (CGNAT), multicast, reserved and unspecified addresses are refused, and so
is an IPv6 address that carries one of them (IPv4-mapped, 6to4, Teredo, NAT64); the
deprecated IPv4-compatible and IPv4-translated forms are refused whatever they
carry. All of it after DNS resolution and for every redirect. The check sits in the
resolver that aiohttp connects through, so the address checked is the address
connected to: a name that resolves to a public address for a check and a private one
for the connection (DNS rebinding) cannot get past it. IP literals never reach a
resolver, so the fetcher checks them itself (`check_literal`).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]


# IANA's special-purpose ranges that are not globally reachable, listed here as well
# as asked of `is_global`: older Pythons (3.11 before 3.11.10) miss some of them.
_NOT_GLOBAL = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::ffff:0:0/96",  # IPv4-mapped (also judged by the address it carries)
        # The deprecated IPv4-compatible range, which holds ::/127 (unspecified and
        # loopback; RFC 4291 2.5.5.1: ::127.0.0.1 is ::7f00:1), and the
        # IPv4-translated range (RFC 2765: ::ffff:0:127.0.0.1 is ::ffff:0:7f00:1):
        # `is_global` calls both global whatever IPv4 address they carry, and no
        # public host is reached through either.
        "::/96",
        "::ffff:0:0:0/96",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "3fff::/20",
        "5f00::/16",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class RefusedAddress(OSError):
    """The host is, or resolves only to, addresses the fetcher must not reach."""


def is_public(address: IPAddress) -> bool:
    """True for an address on the public internet (unicast, globally routed)."""
    if isinstance(address, ipaddress.IPv6Address):
        # Addresses that carry an IPv4 address are judged by that address.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and not is_public(embedded):
            return False
    if any(address in network for network in _NOT_GLOBAL):
        return False
    return address.is_global and not address.is_multicast


def parse_address(host: str) -> IPAddress | None:
    """The address `host` spells (an IPv6 literal may be in brackets), else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def check_literal(host: str, is_allowed: AddressPolicy = is_public) -> None:
    """Raise RefusedAddress when `host` is an IP literal that is not public."""
    address = parse_address(host)
    if address is not None and not is_allowed(address):
        raise RefusedAddress(f"{address} is not a public address")


class PublicOnlyResolver(AbstractResolver):
    """Resolves like the system resolver, then keeps only public addresses; a name
    with none left is refused."""

    def __init__(
        self, inner: AbstractResolver | None = None, is_allowed: AddressPolicy = is_public
    ) -> None:
        self._inner = inner or ThreadedResolver()
        self._is_allowed = is_allowed

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        public = []
        for result in results:
            address = parse_address(result["host"].split("%", 1)[0])
            if address is not None and self._is_allowed(address):
                public.append(result)
        if not public:
            shown = ", ".join(sorted({r["host"] for r in results}))
            raise RefusedAddress(f"{host} resolves to no public address ({shown})")
        return public

    async def close(self) -> None:
        await self._inner.close()
