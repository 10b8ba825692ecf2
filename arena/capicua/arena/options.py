"""The command-line options every command that plays matches shares: where (``--backend``,
``--scheduler``, ``--workers``: a :class:`~capicua.arena.backend.Backend`) and how
(``--workers``, ``--concurrency``, ``--time-limit-ms``). Command-line parsing only: the
run-time modules take the values."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from capicua.common.sqldb import DatabaseError, LadderLocation

from .backend import KINDS, LOCAL, Backend
from .config import CONCURRENCY, SEEDS, TIME_LIMITS, WORKERS
from .store import Where, location

F = TypeVar("F", bound=Callable[..., Any])

#: ``--time-limit-ms`` of a command that plays over the protocol.
TIME_LIMIT = click.IntRange(*TIME_LIMITS)
#: ``--seed``: a first deal seed, as ``[matches]`` takes it.
SEED = click.IntRange(*SEEDS)
#: ``--concurrency``: matches in flight, as ``[matches]`` takes them.
CONCURRENCY_RANGE = click.IntRange(*CONCURRENCY)


#: A results directory (a file there is refused).
DIRECTORY = click.Path(file_okay=False, path_type=Path)


def results_location(ctx: click.Context, param: click.Parameter, value: str | None) -> Where | None:
    """An option's or an argument's callback: where a ladder's results are, a directory or
    a ladder's store on PostgreSQL, ``postgresql://USER@HOST/DB#LADDER_ID`` (read by
    :func:`~capicua.arena.store.location`; a bad one is one line)."""
    if value is None:
        return None
    try:
        where = location(value)
    except DatabaseError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    if isinstance(where, LadderLocation):
        return where
    directory: Path = DIRECTORY.convert(value, param, ctx)
    return directory


def play_options(fn: F) -> F:
    """``--workers``, ``--concurrency`` and ``--time-limit-ms``: how an experiment or an
    SPRT plays its matches, in process or over the protocol."""
    options = [
        click.option("--workers", type=click.IntRange(*WORKERS), default=1, show_default=True,
                     help="Processes for in-process play."),
        click.option("--concurrency", type=CONCURRENCY_RANGE, default=4,
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
