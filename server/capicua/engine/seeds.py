"""One way to derive a seed from other values, for everything seeded in capicua.

A derived seed is the first 8 bytes, big-endian, of ``sha256(":".join(parts))`` with each
part written as ``str`` does: a deal is ``derive(seed, hand, attempt)``, a server CPU
decision ``derive(match_seed, "cpu", turn_id)``, a tournament's deal seed
``derive("capicua-arena", seed, game) >> 1``. Every seeded stream of the project is one
documented formula of its inputs, so a user can recompute any of them (docs/rules.md
gives the deal's).
"""

from __future__ import annotations

from collections.abc import Callable
from hashlib import sha256 as _openssl_sha256
from typing import Final, Protocol


class _Digest(Protocol):
    def digest(self) -> bytes: ...


def _builtin_sha256() -> Callable[[bytes], _Digest]:
    """CPython's own SHA-256 (the same digest as hashlib's): a deal derives one seed per
    hand, and OpenSSL's sha256 costs more to set up than the hash of a few bytes itself;
    hashlib's where the interpreter was built without it."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            return _openssl_sha256
    return sha256  # type: ignore[no-any-return,unused-ignore]


_sha256: Final = _builtin_sha256()  # (Final: a C static in the compiled build)


def derive(*parts: object) -> int:
    """A 64-bit seed from ``parts`` (see the module docstring)."""
    # (a list of str: compiled, each str() is a direct call; map(str, ...) calls the str type
    # through Python's protocol)
    text = ":".join([str(part) for part in parts])
    return int.from_bytes(_sha256(text.encode()).digest()[:8], "big")


def derive_deal(seed: int, hand: int, attempt: int) -> int:
    """``derive(seed, hand, attempt)``, the seed of a deal: the same text, written by one
    f-string (every hand of every playout derives one; compiled, the ints are formatted
    natively instead of as objects)."""
    text = f"{seed}:{hand}:{attempt}"
    return _from_bytes(_sha256(text.encode()).digest()[:8], "big")


# int.from_bytes as a C static in the compiled build: written out, it is a method looked up
# on int at every deal.
_from_bytes: Final = int.from_bytes
