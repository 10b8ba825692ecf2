"""One way to derive a seed from other values, for everything seeded in capicua.

A derived seed is the first 8 bytes, big-endian, of ``sha256(":".join(parts))`` with each
part written as ``str`` does: a deal is ``derive(seed, hand, attempt)``, a server CPU
decision ``derive(match_seed, "cpu", turn_id)``, a tournament's deal seed
``derive("capicua-arena", seed, game) >> 1``. Every seeded stream of the project is one
documented formula of its inputs, so a user can recompute any of them (docs/rules.md
gives the deal's).
"""

from __future__ import annotations

from hashlib import sha256


def derive(*parts: object) -> int:
    """A 64-bit seed from ``parts`` (see the module docstring)."""
    text = ":".join(map(str, parts))
    return int.from_bytes(sha256(text.encode()).digest()[:8], "big")
