"""The checks of a configuration value, phrased once: ``expected an integer from 1 to 12,
got 13``. Each returns the value or raises :class:`Invalid` saying what was expected and
what was got; the caller puts the key's path in front.

Plain Python, so that the engine checks its knobs with them without loading pydantic (a
ruleset is validated on every process's first preset, and pydantic more than doubles the
engine's import time); :mod:`capicua.common.schema` declares the files' schemas with the
same checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Invalid(ValueError):
    """A value that fails a check: the message says what was expected and what was got."""


def integer(value: Any, low: int, high: int | None = None) -> int:
    """An integer from ``low`` to ``high`` (no upper bound: None); TOML's and JSON's
    booleans are not integers here."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"expected {_integer_range(low, high)}, got {value!r}")
    if value < low or (high is not None and value > high):
        raise Invalid(f"expected {_integer_range(low, high)}, got {value!r}")
    return value


def _integer_range(low: int, high: int | None) -> str:
    if high is None:
        return f"an integer of at least {low}"
    return f"an integer from {low} to {high}"


def choice(value: Any, choices: Sequence[str]) -> str:
    """One of the strings ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise Invalid(f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def text(value: Any, expected: str = "a string") -> str:
    """A string; ``expected`` says what it holds (``HOST:PORT``)."""
    if not isinstance(value, str):
        raise Invalid(f"expected {expected}, got {value!r}")
    return value


def flag(value: Any) -> bool:
    """``true`` or ``false`` (not 1 or "yes")."""
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {value!r}")
    return value


def texts(value: Any, example: str) -> tuple[str, ...]:
    """A list of strings (``example``: one as the file writes it)."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise Invalid(f"expected a list of strings, e.g. [{example}], got {value!r}")
    return tuple(value)
