"""Client addresses, and the groups the per-address limits count them in.

One party rarely holds one address: a home or an office behind NAT is one IPv4 address, but
a rented server often comes with a few more from its provider's block; an IPv6 site is
delegated a /48 or a /56, 2^64 addresses per subnet. Counting each address alone would give
such a party a full share of every per-address limit for each address it can send from. So
the limits (``--max-matches-per-address``, ``--max-matches-from-address``,
``--max-registrations-per-hour``) count per **address group**:

- an IPv4 address by its ``--ipv4-group-prefix`` network (default /24), an IPv6 one by its
  ``--ipv6-group-prefix`` network (default /48); an IPv4-mapped IPv6 address
  (``::ffff:a.b.c.d``, an IPv4 caller of a dual-stack listener) as its IPv4 address;
- every loopback address (127.0.0.0/8, ``::1``) is the local machine, where any process may
  send from any of them: one group, whatever the prefixes, unless a prefix is the full
  length (/32, /128), which counts every address of that family alone, loopback ones too;
- anything else (a unix socket, an unknown peer) as it is.

The server keeps each caller's own address (the bot origins and match creators in the
store), never its group, and groups when it counts: a restart with other prefixes counts
what it stored by the new ones. docs/security.md has the defaults' reasoning.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass

from capicua.common.errors import CapicuaError

ADDRESS = "address:"  # the prefix of an address in a creator or origin ("address:IP")
LOOPBACK = f"{ADDRESS}loopback"  # the local machine's one group

# The prefix lengths allowed, per IP version: a shorter one would lump together callers of
# different providers (a /8 is the largest IPv4 block one organisation holds; a /32 the
# smallest IPv6 block a registry allocates to a provider), so no limit would be anyone's.
PREFIX_RANGES = {4: (8, 32), 6: (32, 128)}
DEFAULT_PREFIXES = {4: 24, 6: 48}
PREFIX_OPTIONS = {4: "--ipv4-group-prefix", 6: "--ipv6-group-prefix"}


def client_address(peer: str) -> str:
    """The caller's address as the limits keep it, ``address:IP``, from grpc's
    ``context.peer()`` (``ipv4:127.0.0.1:53412``, ``ipv6:%5B::1%5D:53412``): the port
    dropped, since each connection has its own. Another kind of peer (a unix socket) as it
    is; none at all as ``address:unknown``."""
    peer = urllib.parse.unquote(peer)
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return f"{ADDRESS}{peer or 'unknown'}"
    host, sep, port = rest.rpartition(":")
    if sep and port.isdigit():
        rest = host
    return f"{ADDRESS}{rest.removeprefix('[').removesuffix(']')}"


@dataclass(frozen=True, slots=True)
class AddressGroups:
    """How the per-address limits group client addresses (see the module's text)."""

    ipv4_prefix: int = DEFAULT_PREFIXES[4]
    ipv6_prefix: int = DEFAULT_PREFIXES[6]

    def __post_init__(self) -> None:
        for version, prefix in ((4, self.ipv4_prefix), (6, self.ipv6_prefix)):
            low, high = PREFIX_RANGES[version]
            if type(prefix) is not int or not low <= prefix <= high:
                raise CapicuaError(
                    f"{PREFIX_OPTIONS[version]} {prefix!r}: expected a prefix length from "
                    f"{low} to {high} (IPv{version} addresses count by that network)"
                )

    def of(self, key: str) -> str:
        """The group ``key`` counts in: for ``address:IP`` (or ``address:NETWORK``, as a
        store from before the groups kept IPv6 callers: its first address) ``address:`` and
        the group's network (a full-length one as the bare address), or :data:`LOOPBACK`;
        any other key (``bots/x``, ``admin``, an address that is no IP) unchanged."""
        if not key.startswith(ADDRESS):
            return key
        try:
            ip = ipaddress.ip_network(key.removeprefix(ADDRESS), strict=False).network_address
        except ValueError:
            return key
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # a dual-stack listener's IPv4 caller
        prefix = self.ipv4_prefix if ip.version == 4 else self.ipv6_prefix
        if prefix == ip.max_prefixlen:
            return f"{ADDRESS}{ip}"
        if ip.is_loopback:
            return LOOPBACK
        return f"{ADDRESS}{ipaddress.ip_network((ip, prefix), strict=False)}"


def shown(group: str) -> str:
    """A group (:meth:`AddressGroups.of`) as a refusal names it to the caller in it."""
    if group == LOOPBACK:
        return "the local machine (127.0.0.0/8 and ::1)"
    return group.removeprefix(ADDRESS)
