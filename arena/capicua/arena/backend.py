"""Where a run's matches are played: ``local`` (one embedded server in this process's
care, or the engine in this process and its workers) or ``dask`` (the workers of a
dask.distributed cluster, :mod:`capicua.arena.cluster`, each with its server, or the
engine alone). The options that choose one are :mod:`capicua.arena.options`'."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from .config import Tournament
from .inprocess import InProcessArena, LocalPlay
from .output import Display
from .run import TournamentRun
from .runner import Arena
from .store import Where

KINDS = ("local", "dask")


@dataclass(frozen=True)
class Backend:
    kind: str = "local"
    scheduler: str | None = None  # dask: the scheduler's address
    workers: int | None = None  # dask: a LocalCluster of this many worker processes

    def arena(
        self,
        tournament: Tournament,
        out: Where,
        display: Display | None = None,
        *,
        in_process: LocalPlay | None = None,
        **kw: Any,
    ) -> TournamentRun:
        """The run of this backend (the other arguments as :class:`TournamentRun`'s): the
        study's matches played ``in_process`` by the engine (built-in bots only: here and
        in this machine's processes, or on the dask cluster's workers), else over the
        protocol (an embedded or named server; on dask, each worker's)."""
        if in_process is not None:
            return InProcessArena(tournament, out, display, play=in_process, pool=self.pool, **kw)
        if self.kind == "local":
            return Arena(tournament, out, display, **kw)
        from .cluster import DaskArena

        return DaskArena(
            tournament, out, display, scheduler=self.scheduler, workers=self.workers, **kw
        )

    @contextlib.contextmanager
    def pool(self, workers: int) -> Iterator[tuple[Executor | None, int]]:
        """Where in-process matches run (no server): ``(None, workers)`` here (the run's
        own processes), or a dask cluster's executor and how many tasks it runs at once."""
        if self.kind == "local":
            yield None, workers
            return
        from .cluster import SCHEDULER_TIMEOUT_S, local_cluster, require_dask, unreachable

        distributed = require_dask()
        with contextlib.ExitStack() as stack:
            address = self.scheduler
            try:
                if address is None:
                    cluster = stack.enter_context(local_cluster(self.workers or 1, 1))
                    address = cluster.scheduler_address
                client = stack.enter_context(
                    distributed.Client(address, timeout=SCHEDULER_TIMEOUT_S)
                )
            except OSError as e:
                raise unreachable(self.scheduler, e) from None
            slots = sum(client.nthreads().values()) or 1
            yield client.get_executor(pure=False), slots

    def describe(self) -> str:
        if self.kind == "local":
            return "local"
        where = self.scheduler or f"a LocalCluster of {self.workers} workers"
        return f"dask ({where})"


LOCAL = Backend()
