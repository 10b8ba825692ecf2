"""What the ladder's web pages read (:mod:`capicua.arena.ladder.web`): one ladder's results
directory, opened read-only, and what its run tells as it plays (the sets it hands out,
the matches it commits).

**The cached table.** The published table (a bootstrap over every rated set), the entries'
rating histories and the head-to-head matrix are computed together as a :class:`Snapshot`
of the store, off the event loop (in a thread of their own), and kept until the store
holds more matches. A commit only marks the snapshot stale: at most one computation runs
at a time, and one starts at most every :data:`REFRESH_SECONDS` (a commit meanwhile is
taken by the next one), so a busy ladder of 100,000 matches costs one computation every
few seconds however many matches end and however many people watch; every page reads the
latest snapshot, and the rest with indexed SQL.

**Matches playing now.** The board keeps the matches handed out and not yet committed:
only who plays which side in which set (never a match's seed or deal, which would tell its
tiles); a match's replay is served once it is committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from capicua.common.errors import CapicuaError
from capicua.common.naming import ladder_id

from .. import ratings
from ..schedule import MatchSpec
from ..store import Results, Where
from ..study import Study
from . import table
from .table import Entry, LadderTable, Meeting, Point

#: A computation of the cached table starts at most this often (seconds).
REFRESH_SECONDS = 3.0

T = TypeVar("T")


@dataclass(frozen=True)
class Snapshot:
    """What the pages show of the store at one moment (its ``matches`` count)."""

    matches: int
    table: LadderTable
    meetings: dict[str, dict[str, Meeting]]
    history: dict[str, list[Point]]
    think: dict[str, tuple[int, int]]  # entry -> (decisions, total µs)
    failures: dict[str, dict[str, int]]  # entry -> failure kind -> count

    def entry(self, name: str) -> Entry | None:
        return next((e for e in self.table.entries if e.name == name), None)


def compute_snapshot(directory: Where) -> Snapshot:
    """The snapshot of a ladder directory now (reads only; the expensive part is the
    table's bootstrap)."""
    results = Results.open_existing(directory)
    try:
        # one read transaction: the table, the history and the counts see the same
        # matches while the run commits more
        results.read_snapshot()
        everything = results.matches()
        # the public table's sets (private gauntlets' are their owners' alone)
        sets = ratings.duplicate_sets(m for m in results.rated_of(everything) if table.public(m))
        fitted = table.compute(results, results.entered(), everything=everything)
        return Snapshot(
            matches=fitted.matches,
            table=fitted,
            meetings=table.head_to_head(sets),
            history=table.history(sets),
            think=results.think_totals(),
            failures=results.failure_counts(),
        )
    finally:
        results.close()


def stored_name(directory: Where) -> str:
    """The name of the ladder stored in ``directory`` (one line of error for anything
    else: :func:`capicua.arena.ladder.table.reading`)."""
    with table.reading(directory) as results:
        return str(results.tournament()["name"])


class Closed(CapicuaError):
    """The board closed (the server stops) before it had anything to show."""


@dataclass(eq=False)  # each is its own: kept in a set
class Watcher:
    """One page following the board: the kinds of change it has not been told of."""

    pending: set[str] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False


class LadderBoard:
    """One ladder as the web pages see it: its directory (read-only), its cached
    :class:`Snapshot`, its matches playing now, and the pages following it."""

    def __init__(
        self,
        directory: Where,
        name: str,
        refresh_seconds: float = REFRESH_SECONDS,
        *,
        stored: bool = True,
    ) -> None:
        """``stored``: the directory holds the ladder already, and whatever writes more
        into it (another process's run, a server's hosted ladder) is watched by its store's
        mark every ``refresh_seconds``; else the run that makes it is followed in this
        process (:meth:`follow`), and the first computation waits for its store."""
        self.where = directory  # its results: a directory, or a ladder on PostgreSQL
        self.name = name
        self.slug = ladder_id(name)  # in its URLs: a hosted ladder's id on the server
        self.refresh_seconds = refresh_seconds
        self.playing: dict[str, MatchSpec] = {}  # key -> a match handed out, not committed
        self._snapshot: Snapshot | None = None
        self._ready = asyncio.Event()
        self._stale = asyncio.Event()
        self._watches_store = stored
        self._watchers: set[Watcher] = set()
        self._mark = 0  # the run's store: the last match committed that the board has seen
        self._tasks: list[asyncio.Task[None]] = []
        # a server's ladder: entry -> (its bot connected now, its uptime), from the roster
        self.online: Callable[[], dict[str, tuple[bool, float]]] | None = None
        # a server's ladder: the matches playing now that a spectator may follow (a set's
        # last, listed one: key -> the server's match name), and where to watch them from
        self.watchable: dict[str, str] = {}
        self.watch_from: str | None = None

    # -- lifetime (on the event loop that serves the pages) ---------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._refresh()))
        if self._watches_store:
            self._tasks.append(loop.create_task(self._watch_store()))

    async def close(self) -> None:
        """Stop computing and end every page's event stream (a server can then stop
        without waiting for streams that never end)."""
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for w in self._watchers:
            w.closed = True
            w.wake.set()
        self._ready.set()  # a page still waiting for the first snapshot gets Closed

    async def snapshot(self) -> Snapshot:
        """The latest snapshot (the first call waits for the first one; raises
        :class:`Closed` when the board closes first)."""
        await self._ready.wait()
        if self._snapshot is None:
            raise Closed(f"the leaderboard of {self.name!r} is stopping")
        return self._snapshot

    async def _refresh(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._stale.wait()
            self._stale.clear()
            began = loop.time()
            self._snapshot = await in_thread(compute_snapshot, self.where)
            self._ready.set()
            self._tell("table")
            # the rule of the cache: a computation at most every refresh_seconds; commits
            # meanwhile leave the board stale, and the next one takes them all
            await asyncio.sleep(max(0.0, self.refresh_seconds - (loop.time() - began)))

    async def _watch_store(self) -> None:
        """Another process writes the store: a new match there makes the snapshot stale
        (its mark read every refresh_seconds: one indexed query)."""
        seen = None
        while True:
            try:
                mark = await in_thread(self.read, Results.mark)
            except FileNotFoundError:  # a server's ladder its leader has not made yet: wait
                await asyncio.sleep(self.refresh_seconds)
                continue
            if mark != seen:
                seen = mark
                self._stale.set()
            await asyncio.sleep(self.refresh_seconds)

    # -- what the run tells ---------------------------------------------------------------------

    def follow(self, study: Study) -> Study:
        """``study`` with its plan reporting each set it hands out to the board (the run's
        own plan is unchanged: the board only watches it)."""
        plan = study.plan
        assert callable(plan), "a ladder's plan reads its results"

        def watched(results: Results) -> Iterator[list[MatchSpec]]:
            self._mark = results.mark()
            self._stale.set()  # the store is bound: its first snapshot can be computed
            finished = results.finished_keys()  # a half-played set resumed: its rest only
            for unit in plan(results):
                if unit:  # (a hosted ladder's plan hands out IDLE, nothing, while it waits)
                    self.handed_out(m for m in unit if m.key not in finished)
                yield unit

        return dataclasses.replace(study, plan=watched)

    def not_played(self, matches: Iterable[MatchSpec]) -> None:
        """Matches handed out that will not be played (their set ended early: a bot left,
        the run stopped): no longer playing."""
        for m in matches:
            self.playing.pop(m.key, None)
            self.watchable.pop(m.key, None)
        self._tell("live")

    def handed_out(self, matches: Iterator[MatchSpec]) -> None:
        for m in matches:
            self.playing[m.key] = m
        self._tell("live")

    def committed(self, results: Results) -> None:
        """The run committed matches (its ``on_progress``): they are no longer playing,
        and the snapshot is stale."""
        done, self._mark = results.matches_after(self._mark)
        for m in done:
            self.playing.pop(m.key, None)
            self.watchable.pop(m.key, None)
        self._stale.set()
        self._tell("live")

    # -- pages following the board ----------------------------------------------------------

    def watch(self) -> Watcher:
        w = Watcher()
        self._watchers.add(w)
        return w

    def unwatch(self, w: Watcher) -> None:
        self._watchers.discard(w)

    def _tell(self, kind: str) -> None:
        for w in self._watchers:
            w.pending.add(kind)
            w.wake.set()

    def live(self) -> list[MatchSpec]:
        """The matches playing now, by set and rotation."""
        return sorted(self.playing.values(), key=lambda m: (m.seq, m.rotation))

    def busy(self) -> set[str]:
        """The entries in a match now."""
        return {name for m in self.playing.values() for name in m.sides}

    # -- reads (in a thread: they use a connection of their own) --------------------------

    def read(self, query: Callable[[Results], T]) -> T:
        """``query`` over a read-only connection of its own (opened and closed here)."""
        results = Results.open_existing(self.where)
        try:
            return query(results)
        finally:
            results.close()


async def in_thread(work: Callable[..., T], *args: object) -> T:
    """``work(*args)`` in a daemon thread of its own, awaited: unlike the loop's default
    executor, whose threads Python joins at exit, a computation still running when the
    command is interrupted does not hold the exit back."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result, error = work(*args), None
        except BaseException as e:  # handed to the awaiting coroutine
            result, error = None, e
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="capicua-ladder-web", daemon=True).start()
    return await done


def boards_of(directories: Sequence[Where]) -> list[LadderBoard]:
    """A board per stored ladder directory (each checked: one line of error)."""
    return [LadderBoard(d, stored_name(d)) for d in directories]
