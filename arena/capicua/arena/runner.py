"""``capicua arena run``: play a tournament on a gRPC server.

The arena is a lobby client. It starts (unless the file names a server) an embedded
``capicua serve`` on a free loopback port, registers every bot, starts one process per bot
(``builtin:``, ``python:``, ``cmd:``, ``stdio:``; a ``remote:`` bot connects by itself) with
the server's address and its token in ``CAPICUA_SERVER`` / ``CAPICUA_TOKEN``, and then plays
the schedule with ``concurrency`` matches in flight: create the match with every seat
reserved for its bot, wait until every seat's bot is connected, start it, follow it to its
end, fetch the replay, write it, commit the match. The server is the only authority: the
arena never sees a hand before the replay.

A run is made of separate units, as fastchess's tournament is: the bookkeeping every
backend shares (:class:`~capicua.arena.run.TournamentRun`: the results, what is left of the
schedule, the summary, interrupts), the server and the lobby calls
(:mod:`~capicua.arena.connection`), the bots' processes
(:class:`~capicua.arena.supervisor.BotSupervisor`: a bot process that exits is a crash,
restarted with backoff, and after ``max_crashes`` crashes the bot is disqualified and its
remaining matches are skipped), where the facts go (a
:class:`~capicua.arena.recorder.Recorder`), what the person watching sees (a
:class:`~capicua.arena.output.Display`), and here the match loop that ties them together.
Ctrl-C (or SIGTERM) cancels the matches in flight on the server, records them as abandoned,
stops every process and exits; running the same command again resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from capicua.client.lobby import LobbyError, ServerUnavailable
from capicua.common.errors import CapicuaError
from capicua.v1 import match_pb2

from .connection import ServerConnection
from .errors import ArenaError
from .facts import MatchFacts, replay_facts
from .recorder import Finished
from .run import TournamentRun
from .schedule import MatchSpec
from .store import COUNTED, now, termination_name
from .supervisor import BotHost, BotSupervisor, log_tail

#: How long a match waits for its bots to be connected before it is put back in the queue.
CONNECT_TIMEOUT_S = 60.0

_POLICIES = {
    "forfeit": match_pb2.TIMEOUT_POLICY_FORFEIT,
    "auto-play": match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
}
#: Failure kind recorded for the forfeiting bot of a match that ended this way.
_FORFEIT_FAILURES = {"timeout": "timeout", "disconnect": "disconnect", "illegal_actions": "illegal"}


class Arena(TournamentRun):
    """A tournament's matches played on a server (embedded, or the one the tournament
    names), by bot processes it starts: the match loop."""

    #: A match whose bots are not all connected this many seconds after its creation is
    #: put back in the queue.
    connect_timeout: float = CONNECT_TIMEOUT_S

    # Made on first use, so that an Arena takes TournamentRun's arguments as they are.

    @functools.cached_property
    def server(self) -> ServerConnection:
        """The server the matches are played on."""
        return ServerConnection(self.t, self.out)

    #: What keeps the bots' processes (a server's ladder counts a missed start otherwise).
    supervisor: type[BotSupervisor] = BotSupervisor

    @functools.cached_property
    def bots(self) -> BotSupervisor:
        """The bots' processes."""
        return self.supervisor(
            self.t,
            self.out / "logs",
            on_failure=self._record_failure,
            on_disqualified=self._disqualified_note,
        )

    @functools.cached_property
    def slots(self) -> asyncio.Semaphore:
        """Matches in flight at most, however many drive() calls share this arena (a dask
        worker plays several units at once)."""
        return asyncio.Semaphore(self.t.concurrency)

    async def open(self, needed: set[str], disqualified: set[str]) -> bool:
        """Connect (starting the embedded server), start the ``needed`` bots and check each
        with one hand; False if interrupted meanwhile."""
        await self.server.open()
        self.bots.serve(self.server.address, plaintext=self.server.tls is None)
        for spec in self.t.bots:
            if self.stop.is_set():  # interrupted while the server started: start no more
                return False
            host = self.bots.add(
                spec, self.server.bot_id(spec.name), disqualified=spec.name in disqualified
            )
            if spec.name in needed:
                await self._start_bot(host)
        return await self._preflight(needed)

    async def _start_bot(self, host: BotHost) -> None:
        if host.spec.kind == "remote" or host.disqualified:
            return
        await self.server.register(host)
        await self.bots.start(host)

    async def shutdown(self) -> None:
        """Stop the bots and the embedded server; the display ends."""
        await self.bots.stop()
        await self.server.close()
        await super().shutdown()

    async def drive(self, todo: Iterator[list[MatchSpec]]) -> None:
        """Play what ``todo`` hands out with the tournament's concurrency until done,
        drained, or stopped (an interrupt or a fatal error cuts the matches in flight)."""
        matches = itertools.chain.from_iterable(todo)  # a set is pulled as its turn comes
        again: deque[MatchSpec] = deque()  # matches whose bots did not all connect
        workers = [
            asyncio.create_task(self._worker(matches, again)) for _ in range(self.t.concurrency)
        ]
        stopper: asyncio.Future[Any] = asyncio.ensure_future(self.stop.wait())
        done: asyncio.Future[Any] = asyncio.gather(*workers)
        await asyncio.wait([done, stopper], return_when=asyncio.FIRST_COMPLETED)
        if not done.done():  # interrupted or a fatal error: cut the matches in flight
            for w in workers:
                w.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await done
        stopper.cancel()

    # -- the check before the first match ----------------------------------------------

    async def _preflight(self, names: set[str]) -> bool:
        """Every bot that will play (but ``remote:`` ones, which connect when they like)
        plays one hand against itself first, so a bot that can never play is found now,
        with its cause, and not after its matches were forfeited. Returns False if
        interrupted; raises ArenaError naming every bot that failed."""
        hosts = [self.bots[n] for n in sorted(names) if self.bots[n].spec.kind != "remote"]
        if not hosts:
            return True
        checks: asyncio.Future[list[str | None]] = asyncio.gather(*(self._probe(h) for h in hosts))
        stopper: asyncio.Future[Any] = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait([checks, stopper], return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not checks.done():
            checks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await checks
            return False
        failures = [f for f in checks.result() if f]
        if failures:
            raise ArenaError(
                "cannot start the tournament: "
                + "; ".join(failures)
                + " (nothing was played; fix the bot and run the same command again)"
            )
        return True

    async def _create(
        self,
        preset: str,
        overrides: list[str],
        bot_ids: list[str],
        *,
        seed: int,
        tag: str,
        visibility: match_pb2.Visibility.ValueType = match_pb2.VISIBILITY_PUBLIC,
    ) -> match_pb2.CreateMatchResponse:
        """A match (public unless ``visibility`` says otherwise) of the tournament's timing
        with a reserved bot on every seat."""
        request = match_pb2.CreateMatchRequest(
            request_id=str(uuid.uuid4()),  # a retry of this call would send it again
            preset=preset,
            overrides=overrides,
            seats=[
                match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id=bot_id)
                for bot_id in bot_ids
            ],
            settings=match_pb2.MatchSettings(
                turn_timer_ms=self.t.time_limit_ms,
                # under auto-play a late bot still plays (the server takes its turns)
                on_timeout=_POLICIES[self.t.on_timeout],
                visibility=visibility,
                tags=[tag_of(tag)],
            ),
            seed=seed,
        )
        return await self.server.create_match(request)

    async def _probe(self, host: BotHost) -> str | None:
        """One hand of the tournament's rules with every seat ``host``'s: None if it played
        it by the rules, else why not (with the last lines of its log)."""
        t = self.t
        created = await self._create(
            t.preset,
            [*t.overrides, "max_hands=1"],
            [host.bot_id] * t.ruleset.seats,
            seed=1,
            tag=f"{t.name}-preflight",
        )
        name, host_token = created.match.name, created.host_token
        cause = await self._probe_match(host, name, host_token)
        if cause is None:
            return None
        await self._cancel(name, host_token, "preflight failed")
        log = self.bots.log(host.name)
        tail = log_tail(log)
        where = f"; {log}: {tail}" if tail else ""
        return f"bot {host.name} ({host.spec.label}) {cause}{where}"

    async def _probe_match(self, host: BotHost, name: str, host_token: str) -> str | None:
        try:
            async with asyncio.timeout(self.connect_timeout):
                if await self._connected(name, lambda: host.gone) is None:
                    return "exited before it connected"
        except TimeoutError:
            return f"did not connect within {self.connect_timeout:.0f} s"
        await self.server.start_match(name, host_token)
        # a hand is a few dozen decisions: allow each its whole time limit, and then some
        budget = 10.0 + 60 * self.t.time_limit_ms / 1000
        try:
            await asyncio.wait_for(self._follow(name), budget)
        except TimeoutError:
            return f"did not finish a one-hand test match in {budget:.0f} s"
        out = (await self.server.get_match(name)).outcome
        termination = termination_name(out.termination)
        if termination not in COUNTED:
            return f"lost its one-hand test match by {termination} ({out.reason})"
        return None

    # -- matches ---------------------------------------------------------------------------

    async def _worker(self, todo: Iterator[MatchSpec], again: deque[MatchSpec]) -> None:
        while not self.stop.is_set() and not self.draining:
            spec = again.popleft() if again else next(todo, None)
            if spec is None:
                return
            if self.bots.disqualified(spec.bots):
                self._skipped(spec)
                continue
            try:
                async with self.slots:
                    played = await self._match(spec)
            except ArenaError as e:
                self._fail(e)
                return
            if not played:
                again.append(spec)  # a bot was not there: try again later

    async def _match(self, spec: MatchSpec) -> bool:
        """Play one match to its end and commit it; False if its bots never all connected."""
        if self._first_create is None:
            self._first_create = time.monotonic()
        server, lobby = self.server, self.server.lobby
        created = await self._create(
            spec.preset or self.t.preset,
            list(spec.overrides if spec.preset else self.t.overrides),
            [self.bots[b].bot_id for b in spec.seats],
            seed=spec.seed,
            tag=self.t.name,
            visibility=self.visibility_of(spec),
        )
        name, host_token = created.match.name, created.host_token
        self._created(spec, name)
        try:
            if not await self._wait_connected(name, spec):
                await self._cancel(name, host_token, "its bots did not connect")
                return False
            started, t0 = now(), time.monotonic()
            await server.start_match(name, host_token)
            await self._follow(name)
            replay = (await server.ask(lobby.get_replay(name))).replay
        except asyncio.CancelledError:
            await asyncio.shield(self._abandon(spec, name, host_token))
            raise
        late = await self._late_seats(name) if self.t.on_timeout == "auto-play" else {}
        kept = replay if self.study_replays else None
        finished = Finished(
            spec, self._facts(spec, replay), kept, name, started, time.monotonic() - t0
        )
        self._recorder.matches([finished])
        out = replay.outcome
        termination = termination_name(out.termination)
        if out.HasField("forfeited") and termination in _FORFEIT_FAILURES:
            self._record_failure(
                spec.sides[out.forfeited], _FORFEIT_FAILURES[termination], out.reason, spec.key
            )
        for bot in dict.fromkeys(spec.seats[seat] for seat in late):  # one row per bot
            seats = [seat for seat in late if spec.seats[seat] == bot]
            timeouts = sum(late[seat][0] for seat in seats)
            auto_played = sum(late[seat][1] for seat in seats)
            self._record_failure(
                bot,
                "timeout",
                f"missed {timeouts} deadline(s) (late, disconnected or illegal answers) at "
                f"seat(s) {', '.join(map(str, seats))}; the server played {auto_played} of "
                "its turns (auto-play)",
                spec.key,
            )
        self._committed([finished])
        return True

    def visibility_of(self, spec: MatchSpec) -> match_pb2.Visibility.ValueType:
        """How a match is listed on the server: every tournament match is public."""
        return match_pb2.VISIBILITY_PUBLIC

    def _created(self, spec: MatchSpec, name: str) -> None:
        """``spec`` was created on the server as match ``name`` (a subclass may note it)."""

    @property
    def study_replays(self) -> bool:
        """Whether the replays are kept (a dask worker's arena sends them all to the head,
        which keeps them or not: its study is the one that says)."""
        return self._study is None or self._study.replays

    def _facts(self, spec: MatchSpec, replay: Any) -> MatchFacts:
        """The match's facts, from the engine's re-simulation of the server's replay."""
        try:
            return replay_facts(replay)
        except CapicuaError as e:  # the engine disagrees with the server: a bug to report
            raise ArenaError(
                f"{spec.key}: the engine does not agree with the server's replay: {e}"
            ) from None

    async def _late_seats(self, name: str) -> dict[int, tuple[int, int]]:
        """Seat -> (timeouts, turns auto-played) of a finished match's late seats: under
        auto-play a late bot does not end the match, so only the match record shows it."""
        match = await self.server.get_match(name)
        return {s.seat: (s.timeouts, s.auto_played) for s in match.seats if s.timeouts}

    async def _wait_connected(self, name: str, spec: MatchSpec) -> bool:
        try:
            async with asyncio.timeout(self.connect_timeout):
                record = await self._connected(name, lambda: self.bots.disqualified(spec.bots))
                return record is not None
        except TimeoutError:
            pass
        match = await self.server.get_match(name)
        missing = sorted({spec.seats[s.seat] for s in match.seats if not s.connected})
        for bot in missing:
            self._record_failure(
                bot, "start", f"not connected {self.connect_timeout:.0f} s after match creation"
            )
            await self.bots.not_connected(bot)
        return False

    async def _follow(self, name: str) -> None:
        """Wait for the match to end (a spectator stream; GetMatch if the stream breaks)."""
        try:
            async for message in self.server.lobby.watch_match(name):
                if message.HasField("match_ended"):
                    return
        except ServerUnavailable as e:
            raise self.server.error(e) from None
        except LobbyError:
            pass  # e.g. SLOW_CONSUMER: the match goes on; ask how it ends
        while True:  # the stream ended without match_ended: poll
            match = await self.server.get_match(name)
            if match.state == match_pb2.MATCH_STATE_FINISHED:
                return
            await asyncio.sleep(0.2)

    async def _connected(self, name: str, gone: Callable[[], bool]) -> match_pb2.Match | None:
        """The match's record once every seat's bot is connected, pushed by the server
        (WatchMatch's match updates, no polling); None as soon as ``gone()`` says a bot
        will not come (its process ended, it was disqualified)."""
        stream = self.server.lobby.watch_match(name, match_updates=True)
        step: asyncio.Future[match_pb2.WatchMatchResponse] | None = None
        try:
            while not gone():
                if step is None:
                    step = asyncio.ensure_future(anext(stream))
                changed: asyncio.Future[Any] = asyncio.ensure_future(self.bots.wait_changed())
                waits: set[asyncio.Future[Any]] = {step, changed}
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                if not step.done():
                    continue
                message = step.result()
                step = None
                if message.HasField("match") and all(s.connected for s in message.match.seats):
                    return message.match
                if message.HasField("match_ended"):
                    raise ArenaError(f"{name} ended before its bots connected")
            return None
        except LobbyError as e:
            raise self.server.error(e) from None
        finally:
            if step is not None:  # the stream's pending read ends first, then the stream
                step.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration, LobbyError):
                    await step
            await stream.aclose()

    async def _cancel(self, name: str, host_token: str, reason: str) -> None:
        with contextlib.suppress(ArenaError):
            await self.server.ask(self.server.lobby.cancel_match(name, reason, token=host_token))

    async def _abandon(self, spec: MatchSpec, name: str, host_token: str) -> None:
        await self._cancel(name, host_token, "the arena was interrupted")
        self._abandoned(spec.key, "interrupted")


def tag_of(name: str) -> str:
    """The server tag of a tournament's matches: ``arena:NAME`` in the allowed characters."""
    safe = "".join(c if c.isalnum() or c in "_.-" else "-" for c in name)
    return f"arena:{safe}"[:64]
