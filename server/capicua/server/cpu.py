"""CPU seats: the built-in bots, run in a process pool (never on the event loop).

A decision is a pure function of picklable values (the seat's observation, its legal actions,
the bot name and a seed derived from the match seed and the turn id), so any worker can take
any decision and a bot needs no state between decisions.

Nothing is ever played in a bot's place: a bot that cannot be built, raises, or chooses an
action that is not legal makes :func:`choose` raise (the exception comes back from the worker
with the worker's traceback as its cause), and the match ends (see ``Asker.cpu_choice``). A
worker that dies breaks the pool; the decisions it held fail, and the next ones get a new pool.

No process of the pool outlives the server, even one killed with SIGKILL (Linux): the
forkserver dies with the server and the workers with the forkserver (``PR_SET_PDEATHSIG``;
see :func:`_worker_init` and ``forkserver_preload``). The multiprocessing resource tracker,
the server's other child, is left to exit by itself, on purpose: it reads a pipe until every
process holding it (the server, the forkserver, the workers) is gone, then unlinks the
semaphores the killed server left in ``/dev/shm``; killed with the server, it would leak them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import structlog

from capicua.common.lifetime import die_with_creator
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.seeds import derive

log = structlog.get_logger("capicua.server.cpu")

#: The level names of the wire's CpuLevel values (the built-in bot names).
EASY = "easy"


class BotFailure(Exception):
    """A built-in bot's choice that is no legal action (raised in the worker)."""


def decision_seed(match_seed: int, turn_id: int) -> int:
    """The seed of one CPU decision: reproducible from (match seed, turn id)."""
    return derive(match_seed, "cpu", turn_id)


def choose(bot: str, seed: int, obs: Observation, legal: Sequence[Action]) -> int:
    """Worker side: the index in ``legal`` that bot ``bot`` chooses. Whatever goes wrong
    (an unknown bot, a bot that raises or answers an action not in ``legal``) raises."""
    from capicua.bots import make_bot

    action = make_bot(bot, seed).choose(obs, legal)
    try:
        return list(legal).index(action)
    except ValueError:
        raise BotFailure(
            f"{bot} chose {action!r}, which is not one of the {len(legal)} legal actions"
        ) from None


_PRELOAD = "capicua.server.forkserver_preload"


def _forkserver_pid() -> int | None:
    """The pid of the forkserver that forked this worker, recorded by it before the fork
    (None when the pool does not use a forkserver)."""
    if _PRELOAD not in sys.modules:  # never import it here: it is the forkserver's own
        return None
    from capicua.server.forkserver_preload import FORKSERVER_PID

    return FORKSERVER_PID


def _worker_init() -> None:
    """Ignore Ctrl+C, and die with the server (Linux).

    A worker's parent is the forkserver, which dies with the server. Two races would each
    leave the worker behind forever, blocked on the call queue (it holds both ends of its
    pipe, so it never reads EOF), and the resource tracker beside it (it holds its pipe):

    * The forkserver dies (with the server) between this worker's fork and this call: the
      worker has already been handed to init, so the parent it asks to die with must be the
      pid the forkserver recorded before forking, not what ``getppid()`` reads now.
    * The server died before the forkserver made its own request (which then missed it),
      and the forkserver still forked this worker, for a request the server had queued:
      so the worker checks that the server is alive (:func:`die_with_creator`). A server
      alive now was alive when the forkserver made its request, earlier, so the forkserver
      dies with it, and this worker with the forkserver.
    """
    # Ctrl+C in a terminal, and SIGTERM sent to the whole process group (a supervisor's or
    # systemd's stop), reach the workers too: the server stops them itself, after it has
    # settled its matches (a worker killed first would fail a decision in flight, and a
    # match that `--on-stop suspend` should keep would be cancelled instead).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_creator(_forkserver_pid())


def _warm() -> int:
    import capicua.bots  # noqa: F401  (import the bots once per worker)

    return os.getpid()


class CpuPool:
    """A process pool for CPU decisions."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        method = "forkserver" if sys.platform.startswith("linux") else "spawn"
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(
                ["capicua.server.forkserver_preload", "capicua.bots", "capicua.server.cpu"]
            )
        return ProcessPoolExecutor(
            max_workers=self.workers, mp_context=ctx, initializer=_worker_init
        )

    async def warm_up(self) -> list[int]:
        """Start the workers now rather than on the first CPU decision; returns the pids
        of the workers that answered (a test kills one to break the pool)."""
        loop = asyncio.get_running_loop()
        pids = await asyncio.gather(
            *(loop.run_in_executor(self._pool, _warm) for _ in range(self.workers))
        )
        return sorted(set(pids))

    async def choose(self, level: str, seed: int, obs: Observation, legal: Sequence[Action]) -> int:
        """The index in ``legal`` that the bot of ``level`` chooses; raises what the bot
        raised, or :class:`BotFailure`, or BrokenProcessPool when its worker died."""
        loop = asyncio.get_running_loop()
        pool = self._pool
        try:
            return await loop.run_in_executor(pool, choose, level, seed, obs, tuple(legal))
        except BrokenProcessPool:
            self._replace(pool)
            raise

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """A new pool for the next decisions (once, however many decisions the dead worker
        took with it): a dead worker must not fail every CPU seat until a restart."""
        if self._pool is not broken:
            return
        log.error("cpu_pool_broken", workers=self.workers)
        broken.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new_pool()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
