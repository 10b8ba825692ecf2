"""The dask backend: a tournament's matches played on the workers of a ``dask.distributed``
cluster, recorded by the one process that writes the results.

Each worker hosts what the local backend hosts in one process: an embedded ``capicua
serve`` on loopback and one process per bot of the tournament file, started once per
worker by a worker plugin (:class:`ArenaPlugin`) and checked with the same one-hand
preflight; every bot still plays over the protocol against an authoritative server
(``remote:`` bots on a named server: then the workers connect to that server). The unit of
work is a duplicate set: a task (:func:`play_unit`) plays the set's matches still to be
played on its worker and returns what the local backend would have written (each match's
replay, the failures, disqualifications); the head (:class:`DaskArena`) commits each match
to the results exactly as the local backend does. So the same file gives the same matches
and results on both backends, and either one resumes the other's directory.

Faults: a task returns all of its set at once, so a worker killed mid-set loses only that
set's unreturned work, which dask runs again elsewhere, and nothing is counted twice; a bot
crashing on a worker is restarted and disqualified there by the usual policy, and the head
then skips the sets of that bot not yet started; a scheduler that goes away ends the run
with the directory resumable.

Needs the optional extra ``capicua[dask]`` (``dask.distributed``): the CLI imports this
module only for ``--backend dask``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capicua.v1 import replay_pb2

from .config import Tournament
from .errors import RESUME, ArenaError
from .facts import MatchFacts
from .output import Display
from .recorder import Finished
from .run import TournamentRun
from .runner import Arena
from .schedule import MatchSpec, sets
from .store import Where

try:
    from distributed import WorkerPlugin
except ImportError:  # without the extra: require_dask() says how to install it
    WorkerPlugin = object  # type: ignore[misc,assignment]

#: How long the head waits for the scheduler to answer, and to come back once it went away.
SCHEDULER_TIMEOUT_S = 30.0
#: How often dask runs a set again whose task failed (its worker's server went away).
RETRIES = 3


def require_dask() -> Any:
    """``distributed``, or an ArenaError saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ArenaError(
            "--backend dask needs dask.distributed: pip install 'capicua[dask]'"
        ) from None
    return distributed


def local_cluster(workers: int, threads: int, *, asynchronous: bool = False) -> Any:
    """A LocalCluster of ``workers`` processes on this machine (no dashboard, quiet)."""
    distributed = require_dask()
    return distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=threads,
        processes=True,
        dashboard_address=None,
        asynchronous=asynchronous,
        silence_logs=logging.ERROR,
    )


def unreachable(address: str | None, error: OSError) -> ArenaError:
    where = f"at {address}" if address else "of the LocalCluster"
    return ArenaError(f"cannot reach the dask scheduler {where}: {error}")


# -- what a worker sends back --------------------------------------------------------------


@dataclass(frozen=True)
class Played:
    """A finished match, as the local backend would commit it."""

    key: str
    facts: MatchFacts  # the engine's, from the worker's re-simulation of the replay
    replay: bytes  # capicua.v1.Replay, serialized
    server_match: str
    started: str
    seconds: float


@dataclass(frozen=True)
class Failed:
    bot: str
    kind: str
    detail: str
    key: str | None


@dataclass(frozen=True)
class Disqualified:
    bot: str
    reason: str


@dataclass(frozen=True)
class Abandoned:
    key: str
    reason: str


Event = Played | Failed | Disqualified | Abandoned

# The events of the unit being played: set by play(), inherited by every task it creates.
_OUTBOX: contextvars.ContextVar[list[Event] | None] = contextvars.ContextVar(
    "capicua_outbox", default=None
)


class WorkerRecorder:
    """A worker's :class:`~capicua.arena.recorder.Recorder`: what the local arena would
    record is returned to the head with the unit being played, which records it."""

    def __init__(self, loose: list[Event]) -> None:
        # events of no unit (a bot crashing between units): the session's, so that they
        # outlive this arena and go with the next unit the worker returns
        self.loose = loose
        self.verdicts: dict[str, Disqualified] = {}  # the bots this arena disqualified

    def _emit(self, event: Event) -> None:
        box = _OUTBOX.get()
        (self.loose if box is None else box).append(event)

    def matches(self, batch: Sequence[Finished]) -> None:
        for f in batch:
            replay = b"" if f.replay is None else f.replay.SerializeToString()
            self._emit(
                Played(f.spec.key, f.facts, replay, f.server_match or "", f.started, f.seconds)
            )

    def failure(self, bot: str, kind: str, detail: str, key: str | None) -> None:
        self._emit(Failed(bot, kind, detail, key))

    def disqualified(self, bot: str, reason: str) -> None:
        self.verdicts[bot] = Disqualified(bot, reason)
        self._emit(self.verdicts[bot])

    def abandoned(self, key: str, reason: str) -> None:
        self._emit(Abandoned(key, reason))


class WorkerArena:
    """One worker's arena: its server and bots, opened once, playing units on request
    (several at once, within the tournament's concurrency); the facts go back to the
    caller (:class:`WorkerRecorder`)."""

    def __init__(self, tournament: Tournament, out: Path, loose: list[Event]) -> None:
        self.recorder = WorkerRecorder(loose)
        self.arena = Arena(tournament, out, lock=False, recorder=self.recorder)

    @property
    def fatal(self) -> ArenaError | None:
        """The error that ended this arena (its server went away), if any."""
        return self.arena.fatal

    async def open(self, needed: set[str]) -> None:
        if not await self.arena.open(needed, set()):
            raise ArenaError("the worker was stopped while it checked the bots")

    async def play(self, specs: Sequence[MatchSpec]) -> list[Event]:
        box: list[Event] = []
        token = _OUTBOX.set(box)
        try:
            await self.arena.drive(iter([list(specs)]))
        finally:
            _OUTBOX.reset(token)
        if self.fatal is not None:
            raise self.fatal
        loose = self.recorder.loose
        events = [*loose, *box]
        loose.clear()
        # Every unit says which bots this worker disqualified, not only the one that took
        # the event: units that end together may reach the head in either order, and the
        # first one must explain the matches it skipped (the head ignores a repeat).
        events += [v for v in self.recorder.verdicts.values() if v not in events]
        return events

    async def shutdown(self) -> None:
        await self.arena.shutdown()


class Session:
    """A :class:`WorkerArena` on its own event loop in its own thread (dask runs tasks in
    a thread pool; grpc.aio and the bots' child processes need one loop that lives as long
    as the worker: a child is killed when the thread that started it ends).

    When the arena breaks (its server went away: a fatal error ends every unit in flight)
    the session starts a new one, server and bots, and the failed units are raised to dask,
    which runs them again (:data:`RETRIES`): one worker's crashed server does not end a
    long run. Closing it (the run is over, or cut) stops the arena, lets the units still
    in flight end, and starts no other."""

    def __init__(self, tournament: Tournament, directory: Path, needed: Sequence[str]) -> None:
        self.tournament = tournament
        self.directory = directory
        self.needed = set(needed)
        self.loose: list[Event] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="capicua-arena-session", daemon=True
        )
        self.thread.start()
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.playing = 0  # units in flight
        self.closed = False
        self.generation = 0  # arenas started so far, less one
        try:
            self.arena = self._open()
        except BaseException:
            self._stop_loop()
            raise

    def _open(self) -> WorkerArena:
        arena: WorkerArena = self.call(_make(self.tournament, self.directory, self.loose))
        try:
            self.call(arena.open(self.needed))
        except BaseException:
            self.call(arena.shutdown(), timeout=30)
            raise
        return arena

    def call(self, coro: Any, timeout: float | None = None) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def play(self, specs: Sequence[MatchSpec]) -> list[Event]:
        with self.lock:
            if self.closed:
                raise ArenaError("this worker's arena is closed (the run is over)")
            arena, generation = self.arena, self.generation
            self.playing += 1
        try:
            events: list[Event] = self.call(arena.play(specs))
            return events
        except ArenaError:
            if arena.fatal is None:
                raise
            with self.lock:  # the first failed unit of this arena starts the next one
                if self.generation == generation and not self.closed:
                    with contextlib.suppress(Exception):
                        self.call(arena.shutdown(), timeout=30)
                    self.arena = self._open()
                    self.generation += 1
            raise
        finally:
            with self.lock:
                self.playing -= 1
                self.idle.notify_all()

    def close(self, wait: float = 30.0) -> None:
        with self.lock:
            self.closed = True
        with contextlib.suppress(Exception):
            self.call(self.arena.shutdown(), timeout=30)
        with self.lock:  # the units in flight end once their arena is down
            self.idle.wait_for(lambda: self.playing == 0, timeout=wait)
        self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


async def _make(tournament: Tournament, directory: Path, loose: list[Event]) -> WorkerArena:
    return WorkerArena(tournament, directory, loose)  # its asyncio objects: this loop


class ArenaPlugin(WorkerPlugin):
    """The worker plugin: on each worker (and each one that joins later, or replaces a
    killed one) start the server and the bots, check them, keep them for every unit."""

    def __init__(self, tournament: Tournament, needed: Sequence[str], name: str) -> None:
        self.tournament = tournament
        self.needed = sorted(needed)
        self.name = name
        self.session: Session | None = None

    async def setup(self, worker: Any) -> None:
        # one per run: two runs on one cluster must not share a server directory
        directory = Path(worker.local_directory) / self.name
        loop = asyncio.get_running_loop()
        # off the worker's own loop: starting bots and their preflight take seconds
        await loop.run_in_executor(None, self._start, directory)

    def _start(self, directory: Path) -> None:
        self.session = Session(self.tournament, directory, self.needed)

    async def teardown(self, worker: Any) -> None:
        session, self.session = self.session, None
        if session is not None:  # off the worker's loop: stopping takes seconds
            await asyncio.get_running_loop().run_in_executor(None, session.close)


def play_unit(plugin: str, specs: list[MatchSpec]) -> list[Event]:
    """The task: play ``specs`` on this worker's session."""
    from distributed import get_worker

    found = get_worker().plugins.get(plugin)
    if not isinstance(found, ArenaPlugin) or found.session is None:
        raise ArenaError(f"this worker has no arena session {plugin!r}")
    return found.session.play(specs)


def units(todo: Iterable[MatchSpec]) -> list[list[MatchSpec]]:
    """Every set of ``todo`` (a finite plan), in order."""
    return list(sets(todo))


# -- the head ------------------------------------------------------------------------------


class DaskArena(TournamentRun):
    """The arena whose matches are played on a dask cluster: ``scheduler`` (an address)
    or a LocalCluster of ``workers`` processes on this machine."""

    def __init__(
        self,
        tournament: Tournament,
        out: Where,
        display: Display | None = None,
        *,
        scheduler: str | None = None,
        workers: int | None = None,
        **run: Any,
    ) -> None:
        """The other arguments are :class:`~capicua.arena.run.TournamentRun`'s."""
        if (scheduler is None) == (workers is None):
            raise ArenaError("--backend dask takes --scheduler ADDRESS or --workers N")
        super().__init__(tournament, out, display, **run)
        self.scheduler = scheduler
        self.workers = workers
        self.cluster: Any = None
        self.scheduler_address = ""
        self.client: Any = None
        self.plugin = ""
        self.scheduler_timeout = SCHEDULER_TIMEOUT_S  # lost this long: the run ends
        self._skip: set[str] = set()  # disqualified bots: their sets not started are skipped
        self._pending: dict[Any, list[MatchSpec]] = {}  # submitted sets
        self._queue: Iterator[list[MatchSpec]] = iter(())  # sets not submitted yet

    async def open(self, needed: set[str], disqualified: set[str]) -> bool:
        distributed = require_dask()
        self._skip = set(disqualified)
        try:
            if self.workers is not None:
                self.cluster = await local_cluster(
                    self.workers, max(1, self.t.concurrency), asynchronous=True
                )
                address = self.cluster.scheduler_address
            else:
                address = self.scheduler
            self.scheduler_address = address
            self.client = await distributed.Client(
                address, asynchronous=True, timeout=SCHEDULER_TIMEOUT_S
            )
        except OSError as e:  # includes the TimeoutError of an unreachable scheduler
            raise unreachable(self.scheduler, e) from None
        digest = hashlib.sha256(f"{self.t.digest()}{time.time_ns()}".encode()).hexdigest()[:12]
        self.plugin = f"capicua-arena-{digest}"
        plugin = ArenaPlugin(self.t, sorted(needed), self.plugin)
        try:
            await self.client.register_plugin(plugin, name=self.plugin)
        except ArenaError:
            raise
        except Exception as e:
            raise ArenaError(f"a dask worker could not start the tournament: {e}") from None
        return True

    async def drive(self, todo: Iterator[list[MatchSpec]]) -> None:
        """Keep a window of sets submitted (twice the cluster's threads), submit the next as
        each one returns; none after a drain (an SPRT that decided), an interrupt or an
        error. Finished tasks are released at once: their replays leave the workers."""
        distributed = require_dask()
        self._queue = todo
        info = await self.client.scheduler.identity(n_workers=-1)
        known = info.get("workers", {}).values()
        threads = sum(int(w.get("nthreads", 0)) for w in known) or self.t.concurrency
        window = max(4, 2 * threads)  # workers that join later get the next sets
        self._first_create = time.monotonic()
        done = distributed.as_completed(with_results=False)
        self._submit(done, window)
        stopper = asyncio.ensure_future(self.stop.wait())
        watchdog = asyncio.ensure_future(self._watch_scheduler())
        try:
            while self._pending:
                nxt = asyncio.ensure_future(done.__anext__())
                await asyncio.wait([nxt, stopper, watchdog], return_when=asyncio.FIRST_COMPLETED)
                if watchdog.done():
                    nxt.cancel()
                    watchdog.result()  # raises the ArenaError
                if stopper.done():
                    nxt.cancel()
                    break
                try:
                    future = nxt.result()
                except StopAsyncIteration:  # every future is done, yet some never came
                    self._fail(self._lost())
                    break
                unit = self._pending.pop(future, [])
                await self._collect(future, unit)
                future.release()
                if self.fatal is not None:
                    break
                self._submit(done, window)
        finally:
            stopper.cancel()
            watchdog.cancel()
            self._queue = iter(())
            if self._pending:  # interrupted or failed: what runs is cut, nothing is started
                with contextlib.suppress(Exception):
                    await self.client.cancel(list(self._pending))
                self._pending.clear()

    def _submit(self, done: Any, window: int) -> None:
        while len(self._pending) < window and not self.draining:
            unit = next(self._queue, None)
            if unit is None:
                return
            if any(spec.bots & self._skip for spec in unit):  # disqualified meanwhile
                for spec in unit:
                    self._skipped(spec)
                continue
            future = self.client.submit(play_unit, self.plugin, unit, pure=False, retries=RETRIES)
            self._pending[future] = unit
            done.add(future)

    async def _collect(self, future: Any, unit: list[MatchSpec]) -> None:
        if future.cancelled():  # the head cancels only after its loop: the cluster dropped it
            self._fail(self._lost())
            return
        try:
            events: list[Event] = await future
        except ArenaError as e:
            self._fail(ArenaError(f"on a dask worker: {e}"))
            return
        except Exception as e:
            self._fail(ArenaError(f"a dask task failed ({type(e).__name__}: {e}); {RESUME}"))
            return
        played = set()
        by_key = {spec.key: spec for spec in unit}
        for event in events:
            if isinstance(event, Played):
                replay = replay_pb2.Replay.FromString(event.replay) if self.study.replays else None
                finished = Finished(
                    by_key[event.key], event.facts, replay, event.server_match, event.started,
                    event.seconds,
                )  # fmt: skip
                self._commit([finished])
                played.add(event.key)
            elif isinstance(event, Failed):
                self._record_failure(event.bot, event.kind, event.detail, event.key)
            elif isinstance(event, Disqualified):
                await self._disqualified(event.bot, event.reason)
            else:
                self._abandoned(event.key, event.reason)
        unplayed = [spec for spec in unit if spec.key not in played]
        for spec in unplayed:
            if spec.bots & self._skip:
                self._skipped(spec)
            else:  # not expected: say so, a later run plays it
                self.display.note(f"{spec.key} came back unplayed; run again to play it")

    async def _disqualified(self, bot: str, reason: str) -> None:
        """As on the local backend: the matches in flight finish (each worker's arena skips
        the bot's matches it has not started), the sets not yet submitted are skipped as
        they come up."""
        if bot in self._skip:
            return  # another worker said so first
        self._skip.add(bot)
        self._disqualified_note(bot, reason)

    def _lost(self) -> ArenaError:
        if self.client.status != "running":
            return self._gone()
        return ArenaError(f"the dask cluster dropped a task; {RESUME}")

    def _gone(self) -> ArenaError:
        return ArenaError(f"the dask scheduler at {self.scheduler_address} went away; {RESUME}")

    async def _watch_scheduler(self) -> None:
        """Raise once the client has lost the scheduler for ``scheduler_timeout`` s."""
        lost: float | None = None
        while True:
            await asyncio.sleep(0.5)
            if self.client.status == "running":
                lost = None
                continue
            lost = lost or time.monotonic()
            if time.monotonic() - lost > self.scheduler_timeout or self.client.status == "closed":
                raise self._gone()

    async def shutdown(self) -> None:
        await super().shutdown()
        if self.client is not None:
            # the workers stop this run's servers and bots; not waited for without a scheduler
            if self.client.status == "running" and self.plugin:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.client.unregister_worker_plugin(self.plugin), 30)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.close(timeout=2), 5)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                await self.cluster.close()
