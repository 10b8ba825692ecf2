"""CPU seats: the built-in bots, run in a process pool (never on the event loop).

A decision is a pure function of picklable values (the seat's observation, its legal actions,
the bot name and a seed derived from the match seed and the turn id), so any worker can take
any decision and a bot needs no state between decisions.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import structlog

from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.seeds import derive
from capicua.lifetime import die_with_parent

log = structlog.get_logger("capicua.server.cpu")

#: The level names of the wire's CpuLevel values (the built-in bot names).
EASY = "easy"
FALLBACK = "random"


def decision_seed(match_seed: int, turn_id: int) -> int:
    """The seed of one CPU decision: reproducible from (match seed, turn id)."""
    return derive(match_seed, "cpu", turn_id)


def available(name: str) -> str:
    """``name`` if ``make_bot`` knows it, else the fallback bot (with a warning)."""
    from capicua.bots import make_bot

    try:
        make_bot(name, 0)
    except Exception:  # UnknownBotError, or a bot module still being written
        log.warning("cpu_bot_missing", bot=name, fallback=FALLBACK)
        return FALLBACK
    return name


def choose(bot: str, seed: int, obs: Observation, legal: Sequence[Action]) -> int:
    """Worker side: the index in ``legal`` that bot ``bot`` chooses."""
    from capicua.bots import make_bot

    try:
        player = make_bot(bot, seed)
    except Exception:
        player = make_bot(FALLBACK, seed)
    action = player.choose(obs, legal)
    try:
        return list(legal).index(action)
    except ValueError:
        return 0  # a bot bug must not stall a match: take the first legal action


def _worker_init() -> None:
    # Ctrl+C in a terminal reaches the whole process group: the server shuts the pool down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()  # and a server killed with SIGKILL takes its workers with it


def _warm() -> int:
    import capicua.bots  # noqa: F401  (import the bots once per worker)

    return os.getpid()


class CpuPool:
    """A process pool for CPU decisions."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        method = "forkserver" if sys.platform.startswith("linux") else "spawn"
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(
                ["capicua.server.forkserver_preload", "capicua.bots", "capicua.server.cpu"]
            )
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=ctx, initializer=_worker_init
        )
        self._levels: dict[str, str] = {}

    def bot_for(self, level: str) -> str:
        """The bot that plays ``level`` (checked once per name)."""
        if level not in self._levels:
            self._levels[level] = available(level)
        return self._levels[level]

    async def warm_up(self) -> None:
        """Start the workers now rather than on the first CPU decision."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self._pool, _warm) for _ in range(self.workers))
        )

    async def choose(self, level: str, seed: int, obs: Observation, legal: Sequence[Action]) -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, choose, self.bot_for(level), seed, obs, tuple(legal)
        )

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
