"""The error every part of an arena run raises when the run cannot go on, and what an
interrupted run says about running it again."""

from __future__ import annotations

from pathlib import Path

from capicua.common.errors import CapicuaError
from capicua.common.sqldb import LadderLocation

#: How a run that stopped on an error ends its message: nothing recorded is lost.
RESUME = "finished matches are kept: run the same command again to resume"
#: Who resumes a run, unless a command says otherwise (``arena demo`` names its --out).
SAME_COMMAND = "the same command"


class ArenaError(CapicuaError):
    """The tournament cannot go on (the message says why and what was kept)."""


class RefusedError(ArenaError):
    """The run is refused before anything is played, nothing of the directory changed: it
    holds another study (another kind, or another configuration), or its results cannot
    be written or read."""


def rerun_in(out: Path | LadderLocation, again: str = SAME_COMMAND) -> str:
    """What running an interrupted run again does, from what its directory holds now: none
    is left when the run made it and recorded nothing (the same command makes it again),
    else ``again`` resumes in it (a ladder in PostgreSQL: not asked of its server here,
    in the middle of an interrupt)."""
    if isinstance(out, LadderLocation):
        return f"{again} resumes: what {out} holds is kept"
    if not out.exists():
        return f"nothing was recorded (no {out} is left): {SAME_COMMAND} starts afresh"
    return f"{again} resumes: what {out} holds is kept"
