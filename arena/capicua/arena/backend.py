"""Where a run's matches are played: ``local`` (one embedded server in this process's
care, or the engine in this process and its workers) or ``dask`` (the workers of a
dask.distributed cluster, :mod:`capicua.arena.cluster`, each with its server, or the
engine alone). One set of options for every command that plays matches."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from .config import MAX_TIME_LIMIT_MS, MIN_TIME_LIMIT_MS, Tournament
from .inprocess import InProcessArena, LocalPlay
from .output import Display
from .run import TournamentRun
from .runner import Arena

F = TypeVar("F", bound=Callable[..., Any])

KINDS = ("local", "dask")
#: ``--time-limit-ms`` of a command that plays over the protocol.
TIME_LIMIT = click.IntRange(MIN_TIME_LIMIT_MS, MAX_TIME_LIMIT_MS)


@dataclass(frozen=True)
class Backend:
    kind: str = "local"
    scheduler: str | None = None  # dask: the scheduler's address
    workers: int | None = None  # dask: a LocalCluster of this many worker processes

    def arena(
        self,
        tournament: Tournament,
        out: Path,
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


def play_options(fn: F) -> F:
    """``--workers``, ``--concurrency`` and ``--time-limit-ms``: how an experiment or an
    SPRT plays its matches, in process or over the protocol."""
    options = [
        click.option("--workers", type=click.IntRange(1, 256), default=1, show_default=True,
                     help="Processes for in-process play."),
        click.option("--concurrency", type=click.IntRange(1, 4096), default=4,
                     show_default=True, help="Matches in flight over the protocol."),
        click.option("--time-limit-ms", type=TIME_LIMIT, default=5000,
                     show_default=True, help="Per decision, over the protocol."),
    ]  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn


def backend_options(fn: F) -> F:
    """``--backend``, ``--scheduler`` and ``--workers``; the command gets all three."""
    fn = click.option(
        "--workers",
        type=click.IntRange(1, 1024),
        help="dask: start a LocalCluster of N worker processes on this machine "
        "(default: one per core).",
    )(fn)
    return backend_choice(fn)


def backend_choice(fn: F) -> F:
    """``--backend`` and ``--scheduler``, for a command whose own ``--workers`` (processes
    for in-process play) is also the LocalCluster's size on dask."""
    fn = click.option(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="dask: the scheduler of a running cluster.",
    )(fn)
    return click.option(
        "--backend",
        type=click.Choice(KINDS),
        default="local",
        show_default=True,
        help="Where the matches are played: here, or on a dask.distributed cluster "
        "(pip install 'capicua[dask]'; docs/scaling.md).",
    )(fn)


def backend_from(kind: str, scheduler: str | None, workers: int | None) -> Backend:
    """The options as a :class:`Backend`; a usage error when they do not go together."""
    if kind == "local":
        for given, name in ((scheduler, "--scheduler"), (workers, "--workers")):
            if given is not None:
                raise click.UsageError(f"{name} goes with --backend dask")
        return LOCAL
    if scheduler is not None and workers is not None:
        raise click.UsageError("--scheduler and --workers: give one of them")
    from .cluster import require_dask

    require_dask()  # before anything is created: an output directory, a store
    if scheduler is None and workers is None:
        workers = os.cpu_count() or 1
    return Backend("dask", scheduler, workers)
