"""The one Play load client of the benchmarks: bots that answer at once, over real gRPC.

:class:`Load` registers one bot per seat of a preset (``block``: four), opens each bot's
Play stream on its own connection, and answers every ``DecisionRequest`` as soon as it is
read with a uniformly random legal action. It creates matches through the lobby with every
seat reserved for its bots and a one-hour turn timer, starts them, and follows them to
their end. It counts what a benchmark needs, which a phase snapshots and resets:

* ``decisions`` answered and matches ``finished`` (normally; a match that ends otherwise,
  except by our own cancel, is an error);
* ``rtts``: per answer after the first of a match, the time from writing the previous
  answer to reading this match's next ``DecisionRequest`` (which usually goes to the next
  seat's bot, on another stream), and ``sizes``, that request's size in bytes;
* ``errors``, with the first ``error_notes``: in-stream errors, failed calls, broken
  streams, matches that end abnormally or never report their end.

:func:`fill`, :func:`replacing` and :func:`wait_until` drive it: start so many matches,
replace each finished match at once by a new one (cancelling the rest at the end), wait for
a condition without hanging on a stalled server. The answering loop does nothing but read,
choose and write, so that the client costs the measured round trip as little as it can.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from capicua.bench.common import BenchError
from capicua.client import Lobby, LobbyError
from capicua.client.lobby import error_info
from capicua.common.channel import aio_channel, bearer
from capicua.engine.rules import load_preset
from capicua.v1 import game_pb2, match_pb2, play_pb2, play_pb2_grpc

PRESET = "block"
TIMER_MS = 3_600_000  # the longest turn timer: nobody times out during a benchmark
CALL_TIMEOUT = 60.0  # any unary call (a lobby under 512 matches of load may be slow)
DRAIN_TIMEOUT = 60.0  # cancelled matches reporting their end
STALL_TIMEOUT = 60.0  # no decision at all for this long: the run is broken
CLIENT = "capicua-bench"  # the Hello's client name
# the bots ask for what any bot should: one message per decision (their own events ride in
# the request), not a batch of events per seat and then the request
HELLO = play_pb2.Hello(client=CLIENT, capabilities=[play_pb2.CAPABILITY_INCREMENTAL_DECISIONS])
NORMAL_ENDS = {game_pb2.TERMINATION_NORMAL, game_pb2.TERMINATION_HAND_LIMIT}


class MatchRun:
    """One match as the load client sees it."""

    __slots__ = ("name", "host_token", "answered", "ended", "cancelled", "decisions")

    def __init__(self, name: str, host_token: str) -> None:
        self.name = name
        self.host_token = host_token
        self.answered: float | None = None  # perf_counter just before the last answer
        self.ended = False
        self.cancelled = False  # we cancel it: stop answering
        self.decisions = 0


class Load:
    """The bots' Play streams, the lobby, and the matches in flight."""

    def __init__(
        self,
        address: str,
        seed: int = 0,
        *,
        preset: str = PRESET,
        description: str = "capicua bench server",
    ) -> None:
        self.address = address
        self.preset = preset
        self.seats = load_preset(preset).seats  # one bot per seat
        self.description = description
        self.rng = random.Random(seed)
        self.lobby = Lobby(address, timeout=CALL_TIMEOUT)
        self.bot_ids: list[str] = []
        self.runs: dict[str, MatchRun] = {}
        self.cancelling: set[str] = set()  # matches we cancel: their answers may race it
        self.channels: list[Any] = []
        self.creator_token = ""  # the first bot's: it creates the matches
        self.readers: list[asyncio.Task[None]] = []
        self.welcomed: list[asyncio.Event] = []
        # counters (a phase snapshots them)
        self.decisions = 0
        self.finished = 0
        self.errors = 0
        self.error_notes: list[str] = []
        self.rtts: list[float] = []
        self.sizes: list[int] = []
        self.finished_decisions: list[int] = []  # decisions of each normally finished match
        self.ended = asyncio.Event()  # set whenever a match ends
        self.on_end: Callable[[MatchRun], None] | None = None

    def error(self, note: str) -> None:
        self.errors += 1
        if len(self.error_notes) < 20:
            self.error_notes.append(note)

    async def connect(self) -> None:
        """Register one bot per seat and open each one's Play stream (own connection). The
        first bot creates the matches (with its token); the others let it reserve them."""
        tag = f"{os.getpid()}-{time.monotonic_ns() % 1_000_000}"
        for seat in range(self.seats):
            bot_id = f"bench-{tag}-{seat}"
            response = await self.lobby.register_bot(
                play_pb2.RegisterBotRequest(
                    bot_id=bot_id,
                    description=self.description,
                    reservable_by=[f"bots/{self.bot_ids[0]}"] if self.bot_ids else [],
                )
            )
            if not self.bot_ids:
                self.creator_token = response.token
            self.bot_ids.append(bot_id)
            welcomed = asyncio.Event()
            self.welcomed.append(welcomed)
            channel = aio_channel(self.address)
            self.channels.append(channel)
            self.readers.append(
                asyncio.create_task(self._player(channel, response.token, welcomed))
            )
        waits = [asyncio.ensure_future(w.wait()) for w in self.welcomed]
        done, pending = await asyncio.wait(waits, timeout=CALL_TIMEOUT)
        for w in pending:
            w.cancel()
        if pending:
            raise BenchError(f"{self.address}: the bots' Play streams got no Welcome")

    async def close(self) -> None:
        for task in self.readers:
            task.cancel()
        for task in self.readers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for channel in self.channels:
            await channel.close(grace=None)
        await self.lobby.close()

    async def _player(self, channel: Any, token: str, welcomed: asyncio.Event) -> None:
        """One bot: answer every decision at once with a random legal action."""
        stub = play_pb2_grpc.PlayServiceStub(channel)
        call = stub.Play(metadata=bearer(token))
        runs, rng, clock = self.runs, self.rng, time.perf_counter
        try:
            await call.write(play_pb2.PlayRequest(hello=HELLO))
            while True:
                message = await call.read()
                now = clock()
                if message is grpc.aio.EOF:
                    self.error("a Play stream ended")
                    return
                kind = message.WhichOneof("message")
                if kind == "decision":
                    request = message.decision
                    run = runs.get(request.match)
                    if run is None:
                        if request.match not in self.cancelling:
                            self.error(f"a decision for an unknown match {request.match}")
                        continue
                    if run.cancelled:
                        continue
                    if run.answered is not None:
                        self.rtts.append(now - run.answered)
                        self.sizes.append(message.ByteSize())
                    reply = play_pb2.ActionReply(
                        match=request.match,
                        turn_id=request.turn_id,
                        action_id=rng.randrange(len(request.legal_actions)),
                    )
                    self.decisions += 1
                    run.decisions += 1
                    run.answered = clock()
                    await call.write(play_pb2.PlayRequest(action=reply))
                elif kind == "match_ended":
                    self._ended(message.match_ended)
                elif kind == "welcome":
                    welcomed.set()
                elif kind == "error":
                    reason, metadata = error_info(message.error)
                    if metadata.get("match", "") not in self.cancelling:
                        self.error(f"in-stream error {reason}: {message.error.message}")
                elif kind == "stopping":
                    self.error("the server is stopping")
        except asyncio.CancelledError:
            call.cancel()
            raise
        except grpc.aio.AioRpcError as e:
            self.error(f"Play stream failed: {e.code().name}: {e.details()}")

    def _ended(self, ended: play_pb2.MatchEnded) -> None:
        run = self.runs.get(ended.match)
        if run is None or run.ended:
            return  # every seat hears of it: count it once
        run.ended = True
        del self.runs[ended.match]
        termination = ended.outcome.termination
        if termination in NORMAL_ENDS:
            self.finished += 1
            self.finished_decisions.append(run.decisions)
        elif termination != game_pb2.TERMINATION_CANCELLED:
            self.error(f"{run.name} ended {game_pb2.Termination.Name(termination)}")
        self.ended.set()
        if self.on_end is not None:
            self.on_end(run)

    async def new_match(self) -> None:
        """Create a match with a seat reserved for each bot, and start it."""
        seats = [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id=b) for b in self.bot_ids]
        request = match_pb2.CreateMatchRequest(
            preset=self.preset,
            seats=seats,
            settings=match_pb2.MatchSettings(
                turn_timer_ms=TIMER_MS,
                visibility=match_pb2.VISIBILITY_PRIVATE,
                tags=["bench"],
            ),
        )
        try:
            created = await self.lobby.create_match(request, token=self.creator_token)
            name = created.match.name
            self.runs[name] = MatchRun(name, created.host_token)
            await self.lobby.start_match(name, token=created.host_token)
        except LobbyError as e:
            self.error(f"create/start failed: {e}")

    async def cancel_all(self) -> None:
        """Cancel every match in flight and wait until each has reported its end."""
        sem = asyncio.Semaphore(64)

        async def cancel(run: MatchRun) -> None:
            async with sem:
                try:
                    await self.lobby.cancel_match(
                        run.name, "benchmark phase over", token=run.host_token
                    )
                except LobbyError as e:
                    # it may have finished on its own meanwhile
                    if e.code != grpc.StatusCode.FAILED_PRECONDITION:
                        self.error(f"cancel failed: {e}")

        runs = list(self.runs.values())
        for run in runs:
            run.cancelled = True
            self.cancelling.add(run.name)
        await asyncio.gather(*(cancel(r) for r in runs))
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while self.runs and time.monotonic() < deadline:
            self.ended.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ended.wait(), 1.0)
        if self.runs:
            self.error(f"{len(self.runs)} cancelled matches never reported their end")
            self.runs.clear()


async def fill(load: Load, concurrency: int) -> None:
    """Create and start ``concurrency`` matches (at most 32 lobby calls at once)."""
    sem = asyncio.Semaphore(32)

    async def one() -> None:
        async with sem:
            await load.new_match()

    await asyncio.gather(*(one() for _ in range(concurrency)))


async def wait_until(load: Load, done: Callable[[], bool]) -> None:
    """Poll ``done``; give up (as an error) when no decision comes for a long time."""
    seen, stalled = load.decisions, time.monotonic()
    while not done():
        await asyncio.sleep(0.02)
        if load.decisions != seen:
            seen, stalled = load.decisions, time.monotonic()
        elif time.monotonic() - stalled > STALL_TIMEOUT:
            load.error(f"no decision for {STALL_TIMEOUT:g} s")
            return


@contextlib.asynccontextmanager
async def replacing(load: Load) -> AsyncIterator[None]:
    """While inside, every match that ends is replaced at once by a new one; on exit the
    matches left are cancelled."""
    keep_going = True
    spawned: set[asyncio.Task[None]] = set()

    def replace(_: MatchRun) -> None:
        if keep_going:
            task = asyncio.create_task(load.new_match())
            spawned.add(task)
            task.add_done_callback(spawned.discard)

    load.on_end = replace
    try:
        yield
    finally:
        keep_going = False
        load.on_end = None
        if spawned:
            await asyncio.gather(*spawned, return_exceptions=True)
        await load.cancel_all()
