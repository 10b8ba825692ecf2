"""A ladder hosted by a server (``capicua serve --ladder FILE``): the arena's match loop
with entries that come and go.

The server keeps the roster (LadderService: who joined, as which version, with how many
matches at once; whether its Play stream is open); this runner, a client of that server
with the admin's powers, reads it with GetLadder (every ROSTER_POLL_S at most) and plays its
plan (:class:`~capicua.arena.ladder.plan.LadderPlan`) on it: the matchmaker chooses among
the entries that are connected and under their match limit, a set is only ever for a joined
entry (the ladder's own built-in entries are its anchors and opponents), and when nobody can
play the runner waits and asks again. The ladder file's built-in entries are bot processes
this runner starts, as a tournament's are.

Fairness: the matches of one duplicate set are played one after another, never at once, so
that no bot holds both sides of one deal at the same time (a bot that remembers a deal
across the set's matches is against the ladder's rules: docs/ladder.md). A match whose bot
is gone before it starts ends its set there (the set's played matches are kept); a bot that
disconnects during a match loses it when its turn timer runs out (the time control is its
grace), and the match record says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from capicua.client.lobby import LobbyError
from capicua.common.channel import ClientTLS
from capicua.common.sqldb import LadderLocation
from capicua.v1 import ladder_pb2, match_pb2

from ..config import BotSpec, Tournament
from ..connection import ServerConnection
from ..errors import ArenaError
from ..output import Display
from ..recorder import Finished
from ..run import Summary
from ..runner import Arena, tag_of
from ..schedule import MatchSpec
from ..store import RATED_KINDS, Results, Where, locked
from ..supervisor import BotSupervisor
from . import actions, control
from .board import LadderBoard
from .config import Ladder
from .plan import IDLE, study

T = TypeVar("T")

#: How often an idle ladder (nobody who can play) asks the server again who is there; a
#: busy one reads the roster at most this often too (a read costs ~30 ms with 1,000
#: entries: `capicua bench ladder`), its own sets in flight counted as they change.
ROSTER_POLL_S = 0.5
#: A set is only given to connected entries: a seat whose bot is not there this many
#: seconds after its match was made is a bot that just left (the set ends there).
HOSTED_CONNECT_TIMEOUT_S = 10.0


class HostedConnection(ServerConnection):
    """The server this process runs, reached over loopback with a token that has the
    admin's powers (the server made it for its ladders)."""

    def __init__(self, tournament: Tournament, out: Path, token: str) -> None:
        super().__init__(tournament, out)
        self._token = token

    def _client_tls(self) -> ClientTLS | None:
        return None  # the server's own loopback port for its ladders is plaintext

    async def _identify(self) -> None:
        self.admin_token = self.creator_token = self._token


class HostedBots(BotSupervisor):
    """The ladder's bots: its own entries' processes, as a tournament's; a joined entry
    whose bot missed a match's start is not counted toward a disqualification (it left;
    it is paired again once it is back, and the set it missed ends there)."""

    async def not_connected(self, name: str) -> None:
        if self.hosts[name].spec.kind != "remote":
            await super().not_connected(name)


class Entries:
    """The ladder's roster as this runner last read it (the plan's
    :class:`~capicua.arena.ladder.plan.Roster`), and the sets each entry is playing."""

    def __init__(self, built_in: Sequence[str]) -> None:
        self._built_in = tuple(built_in)
        self.joined: dict[str, ladder_pb2.LadderEntry] = {}  # entry id -> its record
        self.playing: Counter[str] = Counter()  # entry id -> sets in flight

    def names(self) -> Sequence[str]:
        return [*self._built_in, *self.joined]

    def built_in(self) -> Collection[str]:
        return self._built_in

    def online(self) -> dict[str, tuple[bool, float]]:
        """Entry -> whether its bot is connected, and its uptime (the last roster read)."""
        return {name: (e.connected, e.uptime) for name, e in self.joined.items()}

    def active(self) -> set[str]:
        """The entries on the ladder now (the others left it, or were superseded)."""
        joined = {n for n, e in self.joined.items() if e.state == ladder_pb2.ENTRY_STATE_ACTIVE}
        return joined | set(self._built_in)

    def available(self) -> Collection[str]:
        ready = {
            name
            for name, e in self.joined.items()
            if e.state == ladder_pb2.ENTRY_STATE_ACTIVE
            and e.connected
            and self.playing[name] < max(1, e.max_concurrent_matches)
        }
        return ready | set(self._built_in)

    def update(self, entries: Sequence[ladder_pb2.LadderEntry]) -> list[ladder_pb2.LadderEntry]:
        """Take the server's answer in; returns the entries it shows for the first time."""
        new = []
        for e in entries:
            if e.built_in:
                continue
            entry_id = e.name.rsplit("/", 1)[-1]
            if entry_id not in self.joined:
                new.append(e)
            self.joined[entry_id] = e
        return new


def entry_label(e: ladder_pb2.LadderEntry) -> str:
    """An entry's label in the results (what `ladder show` and the pages say of it)."""
    after = f" after {e.predecessor.rsplit('/', 1)[-1]}" if e.predecessor else ""
    return f"remote:{e.bot.removeprefix('bots/')} version {e.version}{after}"


class HostedLadder(Arena):
    """One ladder of the server in this process, played until the server stops."""

    connect_timeout = HOSTED_CONNECT_TIMEOUT_S
    supervisor = HostedBots

    def __init__(
        self,
        ladder: Ladder,
        ladder_name: str,
        out: Where,
        *,
        address: str,
        token: str,
        display: Display | None = None,
        board: LadderBoard | None = None,
        workdir: Path | None = None,
    ) -> None:
        """``board``: the ladder's web pages, told of each set handed out and each commit;
        ``out``: its results (a directory, or the ladder in PostgreSQL, when ``workdir``
        is where its bots' logs go)."""
        built_in = [b.name for b in ladder.tournament.bots]
        self.entries = Entries(built_in)
        t = ladder.tournament
        hosted = dataclasses.replace(t, server=address)
        plan = study(ladder, roster=self.entries)
        if board is not None:
            plan = board.follow(plan)
        on_progress = board.committed if board is not None else None
        super().__init__(hosted, out, display, study=plan, on_progress=on_progress, workdir=workdir)
        self.board = board
        self.ladder_name = ladder_name
        self._token = token
        self._changed = asyncio.Event()
        self._entered: set[str] = set()
        self._read_at = -ROSTER_POLL_S  # monotonic time of the last roster read

    @functools.cached_property
    def server(self) -> ServerConnection:
        return HostedConnection(self.t, self.out, self._token)

    async def run(self) -> Any:
        """As the arena's, but the signals are the server's (``capicua serve`` stops this
        run by cancelling it, or by :attr:`stop`)."""
        if isinstance(self.where, LadderLocation):
            # one runner per ladder in PostgreSQL is the servers' leadership (the process
            # holding the ladder's lock plays it: capicua.server.shared), not a run lock
            return await self._run()
        with locked(self.where):
            return await self._run()

    async def open(self, needed: set[str], disqualified: set[str]) -> bool:
        """As the arena's, after voiding what a killed run left on the server."""
        ready = await super().open(needed, disqualified)
        if ready:
            await self._void_leftovers()
        return ready

    async def _void_leftovers(self) -> None:
        """The ladder's matches a previous run of this server left waiting or running (it
        was killed; the server's journal kept them): cancelled, never rated. A match counts
        once it is in the ladder's results, and a set whose match was voided ends there
        (docs/ladder.md, "When the server stops"). They are the ones the results hold as in
        flight (a set's matches but its last are unlisted: see :meth:`visibility_of`), and
        any listed one with the ladder's tag."""
        lobby = self.server.lobby
        assert self.results is not None
        left = dict.fromkeys(self.results.held())
        for state in (match_pb2.MATCH_STATE_WAITING, match_pb2.MATCH_STATE_RUNNING):
            query = match_pb2.ListMatchesRequest(state=state, tag=tag_of(self.t.name))
            try:
                left.update(dict.fromkeys([m.name async for m in lobby.list_matches(query)]))
            except LobbyError as error:
                raise self.server.error(error) from None
        for name in left:  # one that ended meanwhile refuses: nothing to void
            await self._cancel(name, self._token, "voided: the ladder's server was restarted")
        self.results.release(list(left))
        if left:
            self.display.note(f"voided {len(left)} ladder matches a stopped run left")

    def visibility_of(self, spec: MatchSpec) -> match_pb2.Visibility.ValueType:
        """The last match of a set is listed; the others are not: the set's later matches
        deal the same tiles, and a spectator of an earlier one sees them all at each hand's
        end (anyone may still watch a match by its name; its own bots know it: the fairness
        rule of docs/ladder.md)."""
        last = spec.rotation == len(spec.sides) - 1 and spec.set_key.startswith(RATED_KINDS)
        return match_pb2.VISIBILITY_PUBLIC if last else match_pb2.VISIBILITY_PRIVATE

    def _created(self, spec: MatchSpec, name: str) -> None:
        assert self.results is not None
        self.results.hold(name)
        if self.board is not None and self.visibility_of(spec) == match_pb2.VISIBILITY_PUBLIC:
            self.board.watchable[spec.key] = name  # its pages may follow it live

    def _committed(self, batch: Sequence[Finished]) -> None:
        assert self.results is not None
        self.results.release([f.server_match for f in batch if f.server_match])
        super()._committed(batch)

    def _hand_out(
        self, results: Results, disqualified: set[str]
    ) -> tuple[Iterator[list[MatchSpec]], set[str]]:
        """The endless plan as it comes (IDLE included: :meth:`drive` waits on it), and
        the ladder's own entries to start."""
        plan = self.study.plan
        assert callable(plan), "a ladder's plan reads the results as they grow"
        self.summary = Summary(None, 0, interrupted=self.summary.interrupted)
        return iter(plan(results)), {b.name for b in self.t.bots} - disqualified

    async def refresh(self, *, now: bool = False) -> None:
        """Read the roster again (at most every ROSTER_POLL_S, unless ``now``); new
        entries become the run's bots."""
        if not now and time.monotonic() - self._read_at < ROSTER_POLL_S:
            return
        self._read_at = time.monotonic()
        try:
            got = await self.server.lobby.get_ladder(self.ladder_name)
        except LobbyError as error:
            raise self.server.error(error) from None
        assert self.results is not None
        for entry in self.entries.update(got.entries):
            entry_id = entry.name.rsplit("/", 1)[-1]
            bot_id = entry.bot.removeprefix("bots/")
            self.bots.add(BotSpec(entry_id, "remote", bot_id), bot_id)
            self.results.add_bot(entry_id, entry_label(entry))
            before = entry.predecessor.rsplit("/", 1)[-1] if entry.predecessor else ""
            self.results.add_version(entry_id, bot_id, entry.version, before)
        active = self.entries.active()
        if active != self._entered:  # for `ladder show` and the pages: who has left
            self.results.enter(active)
            self._entered = active

    async def drive(self, todo: Iterator[list[MatchSpec]]) -> None:
        """Hand out sets while there is room (the ladder's concurrency, each entry's
        limit), each played by its own task, until stopped or drained."""
        sets: set[asyncio.Task[None]] = set()
        stopper: asyncio.Future[Any] = asyncio.ensure_future(self.stop.wait())
        try:
            while not self.stop.is_set() and not self.draining:
                if len(sets) >= self.t.concurrency:
                    await asyncio.wait({*sets, stopper}, return_when=asyncio.FIRST_COMPLETED)
                    continue
                await self.refresh()
                unit = next(todo, None)
                if unit is None:
                    break
                if unit is IDLE:
                    await self._idle(sets, stopper)
                    await self.refresh(now=True)
                    continue
                # counted now, not when its task first runs: the next choice must see it
                names = set().union(*(m.bots for m in unit))
                self.entries.playing.update(names)
                task = asyncio.create_task(self._play_set(unit, names))
                sets.add(task)
                task.add_done_callback(sets.discard)
            if sets and not self.stop.is_set():  # drained: the sets in flight finish
                await asyncio.wait({*sets, stopper}, return_when=asyncio.ALL_COMPLETED)
        finally:
            stopper.cancel()
            for task in sets:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*sets, return_exceptions=True)

    async def _idle(self, sets: set[asyncio.Task[None]], stopper: asyncio.Future[Any]) -> None:
        """Nobody can play now: wait for a set to end, the stop, or the next look at the
        roster (joins and connections are the server's news)."""
        self._changed.clear()
        changed = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait({changed, stopper}, timeout=ROSTER_POLL_S)
        finally:
            changed.cancel()

    async def _play_set(self, unit: list[MatchSpec], names: set[str]) -> None:
        """A duplicate set's matches, one after another (``names``: its entries, counted
        as playing by the caller; no longer once it ends)."""
        left = list(unit)
        try:
            while left:
                spec = left[0]
                if self.stop.is_set() or self.bots.disqualified(spec.bots):
                    return
                if not await self._match(spec):
                    return  # a bot is gone: the set ends here, its played matches stay
                left.pop(0)
        except ArenaError as e:
            self._fail(e)
        finally:
            self.entries.playing.subtract(names)
            self._changed.set()
            if self.board is not None and left:
                self.board.not_played(left)


def workdir_of(data: Path, name: str) -> Path:
    """A server's ladder ``name``'s ("ladders/ID") own directory, ``data/ladders/ID``: its
    bots' logs, and its results but with ``--db`` (:func:`directory_of`)."""
    return data / "ladders" / name.removeprefix("ladders/")


def directory_of(data: Path, name: str, db: str | None = None) -> Where:
    """Where a server's ladder ``name`` ("ladders/ID") keeps its results: ``data/ladders/ID``,
    a ladder's results directory, which ``capicua ladder show`` reads like any other; with
    ``db`` (``capicua serve --db URL``), the ladder in that PostgreSQL database
    (``URL#ID``), shared by the server's processes."""
    if db is not None:
        return LadderLocation.parse(f"{db}#{name.removeprefix('ladders/')}")
    return workdir_of(data, name)


async def run_hosted(
    ladders: Sequence[tuple[Ladder, str]],
    *,
    address: str,
    token: str,
    data: Path,
    http: tuple[str, int] | None = None,
    on_url: Callable[[str], None] | None = None,
    db: str | None = None,
) -> None:
    """Play the server's ladders (each with its resource name) until cancelled; with
    ``http`` (host, port), their leaderboard is served on it from this event loop
    (``on_url`` is told its address once it answers); with ``db``, their results are in
    that PostgreSQL database (:func:`directory_of`), their bots' logs still in ``data``."""
    runs, boards = [], []
    for ladder, name in ladders:
        out = directory_of(data, name, db)
        workdir = workdir_of(data, name)
        workdir.mkdir(parents=True, exist_ok=True)
        board = LadderBoard(out, ladder.name, stored=False) if http is not None else None
        run = HostedLadder(
            ladder, name, out, address=address, token=token, board=board, workdir=workdir
        )
        if board is not None:
            board.online = run.entries.online
            board.watch_from = address
            boards.append(board)
        runs.append(run)
    if http is None:
        await asyncio.gather(*(r.run() for r in runs))
        return
    from .web import serving

    async with serving(boards, *http) as url:
        if on_url is not None:
            on_url(url)
        await asyncio.gather(*(r.run() for r in runs))


class HostedControl:
    """The control calls of a server's ladders (an owner's and the admin's, the server
    has checked who may: :class:`capicua.server.ladders.LadderControl`), each one action
    of :mod:`.actions` on the ladder's results, in a thread (SQLite serializes it with the
    runner's writes; the runner reads it before its next choice)."""

    def __init__(self, directories: Mapping[str, Where]) -> None:
        self.directories = directories  # ladder id -> its results (directory or PostgreSQL)
        self._paused = {i: self._read_paused(d) for i, d in directories.items()}

    @staticmethod
    def _read_paused(directory: Where) -> bool:
        if Results.missing(directory) is not None:
            return False
        with actions.opened(directory) as results:
            return control.load(results).paused

    def paused(self, ladder_id: str) -> bool:
        return self._paused.get(ladder_id, False)

    async def _do(self, ladder_id: str, action: Callable[[Results], T]) -> T:
        def act() -> T:
            with actions.opened(self.directories[ladder_id]) as results:
                return action(results)

        return await asyncio.to_thread(act)

    async def block(self, ladder_id: str, entry: str, opponent: str, unblock: bool) -> bool:
        if unblock:
            await self._do(ladder_id, lambda r: actions.unblock(r, entry, opponent))
            return True
        return await self._do(ladder_id, lambda r: actions.block(r, entry, opponent))

    async def challenge(self, ladder_id: str, entry: str, opponent: str, sets: int) -> int:
        return await self._do(ladder_id, lambda r: actions.challenge(r, entry, opponent, sets))

    async def gauntlet(
        self, ladder_id: str, entry: str, opponents: Sequence[str], sets: int
    ) -> int:
        return await self._do(ladder_id, lambda r: actions.gauntlet(r, entry, opponents, sets))

    async def gauntlet_results(self, ladder_id: str, entry: str) -> list[actions.GauntletLine]:
        return await self._do(ladder_id, lambda r: actions.gauntlet_results(r, entry))

    async def pause(self, ladder_id: str, resume: bool) -> None:
        change = actions.resume if resume else actions.pause
        await self._do(ladder_id, change)
        self._paused[ladder_id] = not resume

    async def remove(self, ladder_id: str, entry: str) -> None:
        await self._do(ladder_id, lambda r: actions.remove(r, entry))

    async def start_season(self, ladder_id: str, name: str | None) -> str:
        season = await self._do(ladder_id, lambda r: actions.start_season(r, name))
        return season.name

    async def end_season(self, ladder_id: str, finals_sets: int | None) -> str:
        sets = actions.FINALS_SETS if finals_sets is None else finals_sets
        season = await self._do(ladder_id, lambda r: actions.end_season(r, finals_sets=sets))
        return season.name
