"""The error every part of an arena run raises when the run cannot go on."""

from __future__ import annotations

from capicua.common.errors import CapicuaError

#: How a run that stopped on an error ends its message: nothing recorded is lost.
RESUME = "finished matches are kept: run the same command again to resume"


class ArenaError(CapicuaError):
    """The tournament cannot go on (the message says why and what was kept)."""
