"""Fault injection: the points where a test makes the server fail as a bug or a broken disk
would, to check what the server does then (what it logs, the status it answers, how the
match ends, what it keeps).

The server has none of these faults to show, so without these hooks a test could reach them
only by patching the server's private names, which a refactoring renames or moves without
the test noticing. A :class:`Faults` is handed to the server's parts through their
constructors (``ServerConfig(faults=...)`` passes it to all of them); a test keeps it and may
set or clear a hook at any time, the next call reads it. Production passes none: each point
then costs one ``is None`` test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Faults:
    """Hooks called at the server's fault points; None: that point never fails (the
    default). A hook fails the point by raising; ``cpu_bot`` by naming a bot the workers
    do not know."""

    #: Called with the method's name (``GetRuleset``) as each MatchService and
    #: PlayService handler starts, inside the handler's error boundary: a bug in it.
    rpc: Callable[[str], None] | None = None
    #: Called with the kind of each message a Play stream reads (``hello``, ``action``,
    #: ``""`` for an empty one) before the server handles it: a bug reading the stream.
    play_message: Callable[[str], None] | None = None
    #: Called on the store's thread as each transaction begins: a disk that refuses the
    #: write (``sqlite3.OperationalError("database or disk is full")``).
    store_write: Callable[[], None] | None = None
    #: Called as a finished match's replay is built: a replay that cannot be built.
    replay: Callable[[], None] | None = None
    #: ``(bot, seat) -> bot``: the built-in bot a CPU decision of ``seat`` (a CPU seat's
    #: level, or the Easy bot auto-playing a late seat) asks the worker processes for.
    #: A name they do not know fails the decision in a real worker.
    cpu_bot: Callable[[str, int], str] | None = None
