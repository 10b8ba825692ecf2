"""Work on the engine alone, spread over processes: :func:`run_tasks` runs a task over
chunks (here, in a process pool, or on a dask cluster's executor) and hands each result to
the caller as it comes, so the caller commits as it goes and can stop early (an SPRT that
decided). Used by the in-process SPRT (:mod:`capicua.arena.sprt_runner`) and by
experiments (:mod:`capicua.arena.experiment.play`)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from typing import TypeVar

from capicua.common.interrupt import shielded, sigterm_interrupts
from capicua.common.lifetime import die_with_creator

T = TypeVar("T")


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops cleanly and keeps what is done, and
    die with it if it is killed (no orphan keeps playing)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_creator()  # race-free even if the parent died before this call


def run_tasks(
    task: Callable[[list[int]], T],
    chunks: Iterable[list[int]],
    workers: int,
    on_result: Callable[[T], bool],
    pool: Executor | None = None,
) -> bool:
    """Run ``task`` over ``chunks`` (in ``workers`` processes when more than one, or on
    ``pool``, a dask cluster's executor running ``workers`` at once) and hand each result
    to ``on_result`` as it comes; it returns False to stop early. Returns False if stopped
    (by ``on_result`` or Ctrl-C), True when every chunk ran."""

    def take(result: T) -> bool:
        with shielded():  # a result is committed whole, with its count, or not at all
            return on_result(result)

    with sigterm_interrupts():
        try:
            if workers == 1 and pool is None:
                return all(take(task(chunk)) for chunk in chunks)
            return _run_pooled(task, iter(chunks), workers, take, pool)
        except KeyboardInterrupt:
            return False


def _run_pooled(
    task: Callable[[list[int]], T],
    queue: Iterator[list[int]],
    workers: int,
    on_result: Callable[[T], bool],
    given: Executor | None,
) -> bool:
    """:func:`run_tasks` on a pool: ``2 * workers`` tasks in flight, results in the order
    they finish."""
    pool = given or ProcessPoolExecutor(max_workers=workers, initializer=_worker_init)
    running: set[Future[T]] = set()
    stopped = False

    def fill() -> None:
        for chunk in queue:
            running.add(pool.submit(task, chunk))
            if len(running) >= 2 * workers:
                break

    try:
        fill()
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                if not stopped and not on_result(fut.result()):
                    stopped = True
            if not stopped:
                fill()
        return not stopped
    finally:
        if given is None:
            pool.shutdown(wait=True, cancel_futures=True)
        else:  # the cluster is the caller's: only this run's tasks stop
            for fut in running:
                fut.cancel()
