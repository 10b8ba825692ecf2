"""Built-in bots, looked up by name (``random`` and the CPU difficulty levels).

``random`` plays uniformly; ``easy`` greedily sheds its heaviest tile; ``medium`` weighs a
club player's heuristics; ``hard`` searches sampled worlds under a time budget. See
docs/bots.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capicua.bots.base import Bot, RandomBot
from capicua.bots.easy import EasyBot
from capicua.bots.hard import HardBot
from capicua.bots.medium import MediumBot
from capicua.engine.errors import CapicuaError

#: name -> factory(seed, **options). Only ``hard`` takes options (``budget_ms``,
#: ``iterations``, ...: see :class:`~capicua.bots.hard.HardBot`).
BUILTIN: dict[str, Callable[..., Bot]] = {
    "random": RandomBot,
    "easy": EasyBot,
    "medium": MediumBot,
    "hard": HardBot,
}

#: The difficulty levels, weakest first.
LEVELS = ("random", "easy", "medium", "hard")


class UnknownBotError(CapicuaError):
    """No built-in bot has that name."""


def make_bot(name: str, seed: int | None = None, **options: Any) -> Bot:
    """A new built-in bot ``name`` seeded with ``seed`` (None: unseeded); ``options`` go
    to its factory (e.g. ``make_bot("hard", 1, budget_ms=50)``)."""
    try:
        factory = BUILTIN[name.strip().lower()]
    except KeyError:
        raise UnknownBotError(
            f"unknown bot {name!r}; built-in bots: {', '.join(sorted(BUILTIN))}"
        ) from None
    return factory(seed, **options)


__all__ = [
    "BUILTIN",
    "LEVELS",
    "Bot",
    "EasyBot",
    "HardBot",
    "MediumBot",
    "RandomBot",
    "UnknownBotError",
    "make_bot",
]
