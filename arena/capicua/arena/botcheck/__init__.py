"""``capicua bot check``: a conformance check for bots, in any language.

The check starts a ``capicua serve`` of its own and, for each row, the bot's command with
``CAPICUA_SERVER`` pointing at a proxy (:mod:`.proxy`) that records every message both ways
and can change them: an answer made illegal, a second answer to an answered turn, an answer
held past its deadline, ``ask_forced`` turned on or off. The server is stopped and killed
under the bot with a request open, and restarted; another client takes over its token.
Each row (:mod:`.rows`) passes or fails with one line saying the first thing the bot did
wrong. ``--remote BOT_ID`` checks a bot already connected to some server, through the rows
that need neither a proxy nor a restart. docs/writing-a-bot.md, "Checking your bot",
describes every row.

The bot holds no secret of the check's: its token is a stand-in only its proxy takes, the
proxy lets it play and read but change nothing, and the servers' admin tokens reach them
through pipes. It is no sandbox: the bot runs as the user (docs/writing-a-bot.md).
"""

from __future__ import annotations

from .check import Options, check, run, select
from .harness import CheckError
from .report import RowResult, all_passed, render, summary, to_json
from .rows import ROWS, Row

__all__ = [
    "ROWS",
    "CheckError",
    "Options",
    "Row",
    "RowResult",
    "all_passed",
    "check",
    "render",
    "run",
    "select",
    "summary",
    "to_json",
]
