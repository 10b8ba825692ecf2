"""Built-in bots, looked up by name (``random`` and the CPU difficulty levels)."""

from __future__ import annotations

from collections.abc import Callable

from capicua.bots.base import Bot, RandomBot
from capicua.engine.errors import CapicuaError

BUILTIN: dict[str, Callable[[int | None], Bot]] = {
    "random": RandomBot,
}


class UnknownBotError(CapicuaError):
    """No built-in bot has that name."""


def make_bot(name: str, seed: int | None = None) -> Bot:
    """A new built-in bot ``name`` seeded with ``seed`` (None: unseeded)."""
    try:
        factory = BUILTIN[name.strip().lower()]
    except KeyError:
        raise UnknownBotError(
            f"unknown bot {name!r}; built-in bots: {', '.join(sorted(BUILTIN))}"
        ) from None
    return factory(seed)


__all__ = ["BUILTIN", "Bot", "RandomBot", "UnknownBotError", "make_bot"]
