"""The base of every error a user can cause; the CLI prints these as one line."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class CapicuaError(Exception):
    """Bad input from a user or a peer: a bad preset, knob, action, replay or file."""


def unknown_name(what: str, name: str, known: Sequence[str], listed_as: str = "known") -> str:
    """What every command says of a name it does not know: ``unknown bot 'mediun' (did you
    mean 'medium'?); known: random, easy, medium, hard`` (the names it knows, always)."""
    close = difflib.get_close_matches(name.strip().lower(), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {what} {name!r}{hint}; {listed_as}: {', '.join(known)}"
