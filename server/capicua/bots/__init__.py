"""Built-in bots, looked up by name (``random`` and the CPU difficulty levels).

``random`` plays uniformly; ``easy`` greedily sheds its heaviest tile; ``medium`` weighs a
club player's heuristics; ``hard`` searches sampled worlds under a time budget. See
docs/bots.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from capicua.bots.base import Bot, RandomBot
from capicua.bots.easy import EasyBot
from capicua.bots.hard import HardBot
from capicua.bots.hard import check_options as check_hard_options
from capicua.bots.medium import MediumBot
from capicua.common.errors import CapicuaError, unknown_name

#: name -> factory(seed, **options), weakest first: the one list of the built-in bots, each
#: named by its class's ``name``. Only ``hard`` takes options (``budget_ms``,
#: ``iterations``, ...: see :class:`~capicua.bots.hard.HardBot`).
BUILTIN: dict[str, Callable[..., Bot]] = {
    bot.name: bot for bot in (RandomBot, EasyBot, MediumBot, HardBot)
}

#: name -> the check of its options, run before it is built (one without takes none).
_OPTION_CHECKS: dict[str, Callable[[Mapping[str, Any]], None]] = {HardBot.name: check_hard_options}

#: The difficulty levels, weakest first: every built-in bot's name.
LEVELS: tuple[str, ...] = tuple(BUILTIN)

#: The levels a server's CPU seat plays (the wire's CpuLevel): every level but random.
CPU_LEVELS: tuple[str, ...] = tuple(name for name in LEVELS if name != RandomBot.name)


class UnknownBotError(CapicuaError):
    """No built-in bot has that name."""


def check_options(name: str, options: Mapping[str, Any]) -> str:
    """Refuse an unknown built-in bot (:class:`UnknownBotError`), an option it does not take
    (TypeError) or a value it cannot use (ValueError), without building it; returns the
    bot's key in :data:`BUILTIN`."""
    key = name.strip().lower()
    if key not in BUILTIN:
        raise UnknownBotError(unknown_name("bot", name, LEVELS, listed_as="built-in bots"))
    check = _OPTION_CHECKS.get(key)
    if check is not None:
        check(options)
    elif options:
        raise TypeError(f"{key}: takes no options, got {', '.join(sorted(options))}")
    return key


def make_bot(name: str, seed: int | None = None, **options: Any) -> Bot:
    """A new built-in bot ``name`` seeded with ``seed`` (None: unseeded); ``options`` go
    to its factory (e.g. ``make_bot("hard", 1, budget_ms=50)``), checked first
    (:func:`check_options`)."""
    return BUILTIN[check_options(name, options)](seed, **options)


__all__ = [
    "BUILTIN",
    "CPU_LEVELS",
    "LEVELS",
    "Bot",
    "EasyBot",
    "HardBot",
    "MediumBot",
    "RandomBot",
    "UnknownBotError",
    "check_options",
    "make_bot",
]
