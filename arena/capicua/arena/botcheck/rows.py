"""The rows of ``capicua bot check``: what each sets up, what it expects of the bot, and the
one line that says what the bot did wrong.

Every row of a local check gets a bot process of its own (a new bot registered for it,
``CAPICUA_SERVER`` at a proxy of its own), so rows run side by side and a bot that breaks
in one row is a fresh process in the next. Matches are short (one or two hands, CPU seats
at Easy) and seeded where a rare decision must come up (a redeal offer, a draw, a forced
opening): the seeds are found with the engine, from the deal alone, whatever the bot plays.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capicua.client.lobby import Lobby
from capicua.common.channel import aio_channel, bearer
from capicua.engine.game import Game, MatchState, Phase
from capicua.engine.records import Defer, Draw, Play, RedealChoice, Replay
from capicua.engine.rules import load_preset
from capicua.v1 import match_pb2, play_pb2, play_pb2_grpc, view_pb2
from capicua.wire.codec import replay_from_proto

from .harness import (
    Created,
    LocalServer,
    RowFailed,
    SetupFailed,
    Subject,
    register,
    termination,
)
from .proxy import Faults, Send
from .record import Answered, Recorder, StreamLog, Turn
from .verdict import (
    GOOD_ENDINGS,
    Problem,
    answer_problems,
    decisions,
    error_problems,
    fail,
    first,
    plural,
    record_problems,
    replaced_problems,
    seat_events,
    times,
)

#: The turn timer of the rows that only time the bot: --turn-timer-ms.
DEFAULT_TIMER_MS = 3000
#: The turn timer of the row whose answer the proxy holds past the deadline.
SHORT_TIMER_MS = 1500
#: The turn timer of the restart rows: the server's default, so that a bot backing off up
#: to 10 s keeps its turn (docs/protocol.md, the backoff).
RESTART_TIMER_MS = 30_000
#: While the server is down: at most this many reconnects in the first BACKOFF_WINDOW_S
#: (the lifecycle's backoff, 0.1 s doubling, makes about 5).
BACKOFF_WINDOW_S = 3.0
MAX_ATTEMPTS = 10
#: How long a bot that must stop (STREAM_REPLACED) is watched for reconnects, at most.
REPLACED_WINDOW_S = 2.0
#: How long a seat token's bot may take to exit after its match ended.
SEAT_EXIT_S = 5.0
#: How long after the server is back a bot must have reconnected.
RECONNECT_S = 15.0


@dataclass
class Setup:
    """What every row of one check shares."""

    command: list[str] | None  # the bot's command (local); None for a remote bot
    cwd: Path  # where the bot's command runs
    root: Path  # the check's temporary directory (servers' data, logs)
    logs: Path  # where each row's bot log goes (ROW.log)
    timer_ms: int = DEFAULT_TIMER_MS
    server: LocalServer | None = None  # the shared server of a local check
    # the servers of the rows that stop theirs, by row, started with the shared one
    own_servers: dict[str, LocalServer] = field(default_factory=dict)
    remote_bot: str = ""  # the bot_id of a remote bot
    remote_lobby: Lobby | None = None  # the remote server's lobby
    remote_token: str | None = None  # who creates the remote bot's matches


@dataclass
class Context:
    """One row being run: its setup, its bots and servers, and what it waits for now (named
    when the row runs out of time)."""

    row: str
    setup: Setup
    subjects: list[Subject] = field(default_factory=list)
    servers: list[LocalServer] = field(default_factory=list)
    waiting: str = "the row to start"

    @property
    def local(self) -> bool:
        return self.setup.command is not None

    async def bot(self, faults: Faults | None = None, server: LocalServer | None = None) -> Subject:
        """The bot under check for this row: a new bot on ``server`` (the shared one) and
        its command started behind a proxy; or the remote bot."""
        if not self.local:
            subject = Subject(self.setup.remote_bot, lobby=self.setup.remote_lobby)
            self.subjects.append(subject)
            return subject
        server = server or self.setup.server
        assert server is not None
        bot_id, token = await register(server, self.row)
        return await self.launch(Subject(bot_id, server=server), token, faults)

    async def launch(self, subject: Subject, token: str, faults: Faults | None = None) -> Subject:
        """Start the command for ``subject`` with ``token``."""
        self.subjects.append(subject)
        assert self.setup.command is not None
        self.waiting = "the bot's process to start"
        log = self.setup.logs / f"{self.row}.log"
        await subject.launch(self.setup.command, token, cwd=self.setup.cwd, log=log, faults=faults)
        return subject

    def own_server(self) -> LocalServer:
        """The server of this row alone (``--on-stop suspend``), to stop and restart: started
        before any bot (:func:`own_server`), now the row's to stop."""
        server = self.setup.own_servers.pop(self.row)
        self.servers.append(server)
        return server

    async def create(
        self,
        subject: Subject,
        preset: str,
        count: int,
        mine: Sequence[int],
        *,
        overrides: Sequence[str] = ("max_hands=1",),
        seed: int | None = None,
        timer_ms: int | None = None,
    ) -> Created:
        """A waiting match of ``preset``: the bot in ``mine``, Easy CPUs elsewhere."""
        return await subject.create(
            preset,
            subject.seats(count, mine),
            overrides=overrides,
            seed=seed,
            timer_ms=self.setup.timer_ms if timer_ms is None else timer_ms,
            token=None if subject.local else self.setup.remote_token,
        )

    async def running(
        self,
        faults: Faults | None = None,
        *,
        timer_ms: int | None = None,
        server: LocalServer | None = None,
    ) -> tuple[Subject, Created]:
        """The bot (behind ``faults``) in seat 0 of a two-hand block match against CPUs,
        started: what most lifecycle rows disturb."""
        subject = await self.bot(faults, server)
        created = await self.create(
            subject, "block", 4, [0], overrides=["max_hands=2"], timer_ms=timer_ms
        )
        await self.begin(subject, created)
        return subject, created

    async def play(self, subject: Subject, created: Created) -> match_pb2.Match:
        """Start ``created``, wait for its end, and judge it (RowFailed on a problem)."""
        await self.begin(subject, created)
        match = await self.end(subject, created)
        self.judge(subject, created, match)
        return match

    async def begin(self, subject: Subject, created: Created) -> None:
        self.waiting = f"the bot to connect to {created.name}"
        await subject.start(created)

    async def end(self, subject: Subject, created: Created) -> match_pb2.Match:
        self.waiting = f"{created.name} to end"
        return await subject.finished(created)

    def judge(
        self,
        subject: Subject,
        created: Created,
        match: match_pb2.Match | None,
        *,
        allowed: Sequence[str] = (),
        after_withdrawal_ok: bool = False,
    ) -> None:
        """RowFailed with the earliest problem of its answers, the errors it was sent, its
        streams and the match record (:func:`~.verdict.fail`)."""
        problems: list[Problem] = []
        if subject.local:
            recorder = subject.recorder
            answers = answer_problems(recorder, after_withdrawal_ok=after_withdrawal_ok)
            problems += answers.values()
            problems += error_problems(recorder, allowed, explained=answers.keys())
            problems += replaced_problems(recorder)
        if match is not None:
            problems += record_problems(created, match, subject.recorder if subject.local else None)
        fail(problems)

    def first_problem(self) -> str:
        """The earliest problem its bots' streams show so far (an unwanted answer, streams
        replacing each other), "" for none: what most likely kept a row from finishing."""
        problems: list[Problem] = []
        for subject in self.subjects:
            if subject.local:
                problems += answer_problems(subject.recorder).values()
                problems += replaced_problems(subject.recorder)
        return first(problems)

    async def replay(self, created: Created) -> Replay:
        reply = await created.lobby.get_replay(created.name)
        return replay_from_proto(reply.replay)

    async def close(self) -> None:
        """Stop what the row started: its bots (their processes, proxies and matches),
        then its own servers."""
        for subject in self.subjects:
            await subject.close()
        for server in self.servers:
            with contextlib.suppress(Exception):
                await server.close()


RowFunction = Callable[[Context], Awaitable[str]]


@dataclass(frozen=True)
class Row:
    """One row: ``run`` returns what the bot did right (the pass detail) or raises
    RowFailed saying what it did wrong."""

    name: str
    summary: str  # what it checks, for --help and the docs
    run: RowFunction
    local_only: bool = False  # needs the proxy, a process of the bot's or a restart
    own_server: bool = False  # stops a server of its own (Context.own_server)


def own_server(setup: Setup, row: str) -> LocalServer:
    """A new server for ``row`` alone, with ``--on-stop suspend`` (not started)."""
    name = f"server-{row}"
    return LocalServer(setup.root / name, setup.logs / f"{name}.log", suspend=True)


# -- seeds ---------------------------------------------------------------------------------


@functools.cache
def seed_where(
    preset: str, overrides: tuple[str, ...], mine: frozenset[int], test: str, tries: int = 3000
) -> int:
    """The first seed whose deal makes ``test`` (a name in :data:`_TESTS`) true for the
    bot's seats ``mine``, whatever it plays: found with the engine, as the server deals."""
    game = Game(load_preset(preset, list(overrides)))
    auto = [seat not in mine for seat in range(game.ruleset.seats)]
    for seed in range(tries):
        if _TESTS[test](game.new_match(seed, auto_forced=auto), mine):
            return seed
    raise RowFailed(f"no {preset} seed in {tries} makes {test} happen (an engine change?)")


def _redeal_then_defer(state: MatchState, mine: frozenset[int]) -> bool:
    """The bot's seat is offered a redeal, and whatever it answers, one of its seats is
    then offered the opening (it may DEFER)."""
    return (
        state.phase is Phase.REDEAL
        and state.current_seat in mine
        and all(_offered_opening(_after(state, code), mine) for code in state.legal_actions())
    )


def _offered_opening(state: MatchState, mine: frozenset[int]) -> bool:
    if state.phase is Phase.REDEAL:  # another seat of the bot's is offered a redeal too
        return _redeal_then_defer(state, mine)
    return state.phase is Phase.PLAY and state.current_seat in mine and state.can_defer


def _after(state: MatchState, code: int) -> MatchState:
    after = state.clone()
    after.apply(code)
    return after


def _draws_first(state: MatchState, mine: frozenset[int]) -> bool:
    """The bot's seat has drawn from the stock before its first decision."""
    return state.current_seat in mine and any(
        isinstance(e, Draw) and e.seat in mine for e in state.log.events()
    )


def _forced_first(state: MatchState, mine: frozenset[int]) -> bool:
    """The bot's first decision has a single legal action (the forced opening)."""
    return state.current_seat in mine and len(state.legal_actions()) == 1


_TESTS: dict[str, Callable[[MatchState, frozenset[int]], bool]] = {
    "a redeal offer, then the opening": _redeal_then_defer,
    "a draw before the first decision": _draws_first,
    "a forced first decision": _forced_first,
}


# -- decision kinds -------------------------------------------------------------------------


def _answered(subject: Subject, replay: Replay, seats: Sequence[int]) -> str:
    """How many decisions the bot answered: as the proxy saw them, else the replay's."""
    if subject.local:
        return f"answered {plural(len(subject.recorder.answers), 'request')} legally and in time"
    return f"answered {plural(decisions(replay, seats), 'request')} in time"


def _offered(subject: Subject, test: Callable[[play_pb2.DecisionRequest], bool]) -> bool:
    """Whether the proxy delivered a request for which ``test`` holds."""
    return any(test(d.message.decision) for d in subject.recorder.of_kind("decision"))


def _both_ends(request: play_pb2.DecisionRequest) -> bool:
    """A tile it may play on either end."""
    ends: dict[str, set[int]] = {}
    for a in request.legal_actions:
        if a.kind == view_pb2.ACTION_KIND_PLAY:
            ends.setdefault(a.tile, set()).add(a.end)
    return any(len(e) > 1 for e in ends.values())


async def plays(ctx: Context) -> str:
    subject = await ctx.bot()
    created = await ctx.create(subject, "block", 4, [0], overrides=["max_hands=2"])
    await ctx.play(subject, created)
    replay = await ctx.replay(created)
    ends = {e.end for e in seat_events(replay, [0], Play) if isinstance(e, Play)}
    notes = [_answered(subject, replay, [0])]
    if subject.local and _offered(subject, _both_ends):
        notes.append("chose an end when a tile fit both")
    notes.append(f"played on {'both ends' if len(ends) > 1 else 'one end only'}")
    return "; ".join(notes)


async def defer_redeal(ctx: Context) -> str:
    mine = [0, 2]
    overrides = ("max_hands=1",)
    seed = seed_where("cuban", overrides, frozenset(mine), "a redeal offer, then the opening")
    subject = await ctx.bot()
    created = await ctx.create(subject, "cuban", 4, mine, overrides=overrides, seed=seed)
    await ctx.play(subject, created)
    replay = await ctx.replay(created)
    redeals = [e for e in seat_events(replay, mine, RedealChoice) if isinstance(e, RedealChoice)]
    if not redeals:  # the seed was chosen for it: the server's deal is not the engine's
        return f"was not offered a redeal in {created.name} (seed {seed}): nothing to check"
    choice = "redeal" if any(e.redeal for e in redeals) else "keep"
    opening = "deferred" if seat_events(replay, mine, Defer) else "opened itself"
    offered = ""
    if subject.local and not _offered(
        subject, lambda d: any(a.kind == view_pb2.ACTION_KIND_DEFER for a in d.legal_actions)
    ):
        offered = " (DEFER was not among its actions)"
    return f"answered a redeal offer ({choice}) and an offered opening ({opening}){offered}"


async def draw(ctx: Context) -> str:
    overrides = ("seats=2", "sides=individual", "max_hands=1")
    seed = seed_where("draw", overrides, frozenset([0]), "a draw before the first decision")
    subject = await ctx.bot()
    created = await ctx.create(subject, "draw", 2, [0], overrides=overrides, seed=seed)
    await ctx.play(subject, created)
    replay = await ctx.replay(created)
    drawn = len(seat_events(replay, [0], Draw))
    return f"{_answered(subject, replay, [0])}; its seat drew {plural(drawn, 'tile')}"


class AskForced(Faults):
    """Tell the server ``ask_forced`` as the row wants it, whatever the bot said (and say it
    first, for a bot that sends no Hello)."""

    def __init__(self, ask: bool) -> None:
        self.ask = ask

    def first_hello(self) -> play_pb2.Hello:
        return play_pb2.Hello(ask_forced=self.ask, client="capicua bot check")

    def hello(self, hello: play_pb2.Hello) -> play_pb2.Hello:
        changed = play_pb2.Hello()
        changed.CopyFrom(hello)
        changed.ask_forced = self.ask
        return changed


def _asked_itself(subject: Subject) -> str:
    hellos = [h for s in subject.recorder.streams for h in s.hellos]
    if not hellos:
        return "it sent no Hello"
    return f"it asked ask_forced={str(hellos[0].ask_forced).lower()}"


async def forced_asked(ctx: Context) -> str:
    overrides = ("max_hands=1",)
    seed = seed_where("block", overrides, frozenset([0]), "a forced first decision")
    subject = await ctx.bot(AskForced(True))
    created = await ctx.create(subject, "block", 4, [0], overrides=overrides, seed=seed)
    await ctx.play(subject, created)
    singles = [
        d
        for d in subject.recorder.of_kind("decision")
        if len(d.message.decision.legal_actions) == 1
    ]
    return (
        f"answered {plural(len(singles), 'single-action request')} with ask_forced on "
        f"({_asked_itself(subject)})"
    )


async def forced_unasked(ctx: Context) -> str:
    subject = await ctx.bot(AskForced(False))
    created = await ctx.create(subject, "block", 4, [0], overrides=["max_hands=2"])
    await ctx.play(subject, created)
    return (
        f"played with ask_forced off, the server applying its forced moves "
        f"({_asked_itself(subject)})"
    )


async def seats(ctx: Context) -> str:
    subject = await ctx.bot()
    both = await ctx.create(subject, "block", 4, [0, 2])
    other = await ctx.create(subject, "block", 4, [1])
    await asyncio.gather(ctx.begin(subject, both), ctx.begin(subject, other))
    ctx.waiting = f"{both.name} and {other.name} to end"
    records = await asyncio.gather(subject.finished(both), subject.finished(other))
    ctx.judge(subject, both, records[0])
    ctx.judge(subject, other, records[1])
    return f"played seats 0 and 2 of {both.name} and seat 1 of {other.name} at once"


async def matches(ctx: Context) -> str:
    subject = await ctx.bot()
    count = 3
    for _ in range(count):
        created = await ctx.create(subject, "block", 4, [0])
        await ctx.play(subject, created)
    if subject.local:
        streams = len(subject.recorder.streams)
        if streams > 1:
            raise RowFailed(
                f"opened {streams} Play streams for {count} matches in a row: a bot token's "
                "stream stays open after MatchEnded (keep it)"
            )
        return f"played {count} matches in a row on one stream"
    return f"played {count} matches in a row"


# -- the lifecycle ---------------------------------------------------------------------------


class OneAnswer(Faults):
    """Acts on the first answer the bot sends (``pick`` chooses which), once."""

    def __init__(self) -> None:
        self.turn: Turn | None = None

    def pick(self, answered: Answered) -> bool:
        return True

    def answer(self, answered: Answered, send: Send) -> None:
        if self.turn is None and self.pick(answered):
            self.turn = answered.turn
            self.act(answered, send)
        else:
            send(answered.reply)

    def act(self, answered: Answered, send: Send) -> None:
        send(answered.reply)


class Illegal(OneAnswer):
    """The bot's first answer reaches the server as an action id no request has."""

    def act(self, answered: Answered, send: Send) -> None:
        bad = play_pb2.ActionReply()
        bad.CopyFrom(answered.reply)
        bad.action_id = 9999
        send(bad)


async def illegal(ctx: Context) -> str:
    faults = Illegal()
    subject, created = await ctx.running(faults)
    ctx.waiting = "the server's ILLEGAL_ACTION and the request sent again"
    rec = subject.recorder
    await subject.race(
        rec.until(lambda: faults.turn is not None and len(rec.requests.get(faults.turn, [])) > 1),
        "before its answer was refused",
    )
    assert faults.turn is not None
    subject.episode = "ILLEGAL_ACTION"
    turn = faults.turn
    again = rec.requests[turn][-1].at
    where = f"turn {turn[1]} of {turn[0]}"
    ctx.waiting = f"an answer to the re-sent request ({where})"
    await subject.race(
        rec.until(lambda: rec.answers_to(turn, again) or turn in rec.withdrawals),
        "after ILLEGAL_ACTION",
    )
    if not rec.answers_to(turn, again):
        raise RowFailed(f"never answered the re-sent request ({where}) after ILLEGAL_ACTION")
    match = await ctx.end(subject, created)
    ctx.judge(subject, created, match, allowed=["ILLEGAL_ACTION"])
    return f"answered the re-sent request ({where}) after ILLEGAL_ACTION and finished the match"


class Stale(OneAnswer):
    """After the bot's first answer to a real choice, a second, different answer to the
    same turn: the server refuses it (STALE_TURN) on the bot's stream."""

    def pick(self, answered: Answered) -> bool:
        return (
            answered.request is not None
            and len(answered.request.message.decision.legal_actions) > 1
        )

    def act(self, answered: Answered, send: Send) -> None:
        send(answered.reply)
        assert answered.request is not None
        other = play_pb2.ActionReply()
        other.CopyFrom(answered.reply)
        legal = len(answered.request.message.decision.legal_actions)
        other.action_id = (answered.reply.action_id + 1) % legal
        send(other)


async def stale(ctx: Context) -> str:
    faults = Stale()
    subject, created = await ctx.running(faults)
    rec = subject.recorder
    ctx.waiting = "the server's STALE_TURN"
    await subject.race(rec.until(lambda: rec.errors), "before STALE_TURN")
    subject.episode = "STALE_TURN"
    refused = rec.errors[0].at
    match = await ctx.end(subject, created)
    later = [a for a in rec.answers if a.at > refused]
    ctx.judge(subject, created, match, allowed=["STALE_TURN"])
    return (
        f"kept playing after STALE_TURN ({plural(len(later), 'more answer')}) and finished "
        "the match"
    )


class Hold(OneAnswer):
    """The bot's first answer is held back (``release`` sends it late) or dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.held: tuple[play_pb2.ActionReply, Send] | None = None

    def act(self, answered: Answered, send: Send) -> None:
        self.held = (answered.reply, send)

    def release(self) -> None:
        if self.held is not None:
            reply, send = self.held
            send(reply)


async def withdrawn_timeout(ctx: Context) -> str:
    faults = Hold()
    subject, created = await ctx.running(faults, timer_ms=SHORT_TIMER_MS)
    rec = subject.recorder
    ctx.waiting = "the server to withdraw the held answer's turn (timed out)"
    await subject.race(
        rec.until(lambda: faults.turn is not None and faults.turn in rec.withdrawals),
        "before its turn timed out",
    )
    subject.episode = "its turn was withdrawn (timed out)"
    # the late answer: refused (STALE_TURN; UNKNOWN_MATCH once over), it ends the auto-play,
    # if the server has not played the rest of the match meanwhile (CPUs play at once)
    faults.release()
    match = await ctx.end(subject, created)
    held = faults.turn
    assert held is not None
    for turn, item in rec.withdrawals.items():
        reason = item.message.decision_withdrawn.reason
        if turn != held and reason == play_pb2.WITHDRAWAL_REASON_TIMED_OUT:
            raise RowFailed(
                f"let turn {turn[1]} of {turn[0]} time out after turn {held[1]} was withdrawn "
                "(timed out) and its late answer refused"
            )
    ending = termination(match)
    if ending not in GOOD_ENDINGS:
        raise RowFailed(f"{created.name} ended {ending}: {match.outcome.reason}")
    # and on to the next match as if nothing happened: a deterministic "keeps playing"
    following = await ctx.create(subject, "block", 4, [0])
    await ctx.begin(subject, following)
    record = await ctx.end(subject, following)
    allowed = ["STALE_TURN", "UNKNOWN_MATCH"]
    ctx.judge(subject, following, record, allowed=allowed, after_withdrawal_ok=True)
    return (
        f"kept playing after turn {held[1]} was withdrawn (timed out) and its late answer "
        f"refused (the server played {match.seats[0].auto_played} of its turns), then "
        "played the next match"
    )


async def withdrawn_cancel(ctx: Context) -> str:
    faults = Hold()  # never released: the server waits for that answer until the cancel
    subject, created = await ctx.running(faults)
    rec = subject.recorder
    ctx.waiting = "the bot's first answer"
    await subject.race(rec.until(lambda: faults.turn is not None), "before its first answer")
    await created.lobby.cancel_match(created.name, "capicua bot check", token=created.host_token)
    subject.episode = f"its turn was withdrawn ({created.name} cancelled)"
    ctx.waiting = f"the withdrawal and MatchEnded of {created.name}"
    await subject.race(
        rec.until(lambda: created.name in rec.match_ended), f"after {created.name} was cancelled"
    )
    following = await ctx.create(subject, "block", 4, [0])
    await ctx.play(subject, following)  # judges every answer: none may follow the withdrawal
    return f"dropped the withdrawn turn of cancelled {created.name} and played the next match"


async def seat_token(ctx: Context) -> str:
    server = ctx.setup.server
    assert server is not None
    host = Subject("", server=server)
    seats = [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN)] + host.seats(4, [])[1:]
    created = await host.create(
        "block", seats, overrides=["max_hands=1"], timer_ms=ctx.setup.timer_ms
    )
    joined = await server.lobby.join_match(
        match_pb2.JoinMatchRequest(name=created.name, display_name="bot check"), token=""
    )
    subject = await ctx.launch(host, joined.seat_token)
    await ctx.begin(subject, created)
    rec = subject.recorder
    ctx.waiting = f"{created.name} to end"
    # not raced with the process: a bot that stops after its MatchEnded is right here, and
    # the proxy records the MatchEnded before the bot can read it
    await rec.until(lambda: created.name in rec.match_ended or subject.exited is not None)
    if created.name not in rec.match_ended:
        failure = subject.exit_failure(f"while playing {created.name}")
        assert failure is not None
        raise failure
    ended = rec.match_ended[created.name].at
    ctx.judge(subject, created, await created.lobby.get_match(created.name))
    ctx.waiting = "the bot to exit after its seat token's match ended"
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(rec.until(lambda: subject.exited is not None), SEAT_EXIT_S)
    attempts = subject.recorder.attempts(since=ended)
    if attempts:
        raise RowFailed(
            f"reconnected {times(len(attempts))} after its seat token's match ended (the "
            "stream ends OK after MatchEnded: stop)"
        )
    code = subject.exited
    if code is None:
        raise RowFailed(
            f"still running {SEAT_EXIT_S:g} s after its seat token's match ended (the stream "
            "ends OK after MatchEnded: stop, exit 0)"
        )
    if code != 0:
        raise RowFailed(
            f"exited with code {code} after its seat token's match ended (expected 0)"
            + subject.tail()
        )
    return "stopped with exit code 0 after its seat token's match ended"


async def replaced(ctx: Context) -> str:
    subject, created = await ctx.running()
    rec = subject.recorder
    ctx.waiting = "the bot's first answer"
    await subject.race(rec.until(lambda: rec.answers), "before its first answer")
    assert subject.server is not None
    channel = aio_channel(subject.server.address)
    try:
        return await _replace(ctx, subject, channel)
    finally:
        await channel.close()


async def _replace(ctx: Context, subject: Subject, channel: Any) -> str:
    """Open a newer stream with the bot's token, straight to the server; the bot must stop."""
    rec = subject.recorder
    stub = play_pb2_grpc.PlayServiceStub(channel)
    call = stub.Play(metadata=bearer(subject.token))
    try:
        ctx.waiting = "the newer stream's Welcome"
        await call.read()
        ctx.waiting = "the bot's stream to end (ABORTED / STREAM_REPLACED)"
        first = rec.streams[-1]  # the bot's stream when the newer one opened
        await rec.until(lambda: first.closed is not None)
        assert first.closed is not None
        since = first.closed
        ctx.waiting = "the bot to stop after STREAM_REPLACED"
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(rec.until(lambda: subject.exited is not None), REPLACED_WINDOW_S)
    finally:
        call.cancel()
    attempts = rec.attempts(since=since)
    how = f"{first.status}{' / ' + first.reason if first.reason else ''}"
    if attempts:
        span = max(s.opened for s in attempts) - since
        raise RowFailed(
            f"reconnected {times(len(attempts))} in {span:.1f} s after its stream ended {how} "
            "(another client holds the token: stop, never reconnect)"
        )
    code = subject.exited
    if code is None:
        return f"did not reconnect in {REPLACED_WINDOW_S:g} s after its stream ended {how}"
    return f"stopped (exit code {code}) without reconnecting after its stream ended {how}"


class HoldOpen(OneAnswer):
    """The bot's second answer is held back for good: its request stays open on the server
    (under the restart rows' 30 s timer) until the row stops the server."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def pick(self, answered: Answered) -> bool:
        self.seen += 1
        return self.seen == 2

    def act(self, answered: Answered, send: Send) -> None:
        pass  # never sent: the server still waits for it when it stops


async def _restart(ctx: Context, *, kill: bool) -> str:
    """With a request of the bot's open (its answer held back), stop (or kill) the row's own
    server mid-match and restart it; the bot must come back, answer the request asked again
    under a new turn_id (never the old one) and finish the match."""
    server = ctx.own_server()
    faults = HoldOpen()
    subject, created = await ctx.running(faults, timer_ms=RESTART_TIMER_MS, server=server)
    rec = subject.recorder
    ctx.waiting = "the bot's second answer (held back: its request stays open)"
    await subject.race(rec.until(lambda: faults.turn is not None), "before the server stopped")
    held = faults.turn
    assert held is not None
    stream, withdrawn = await _stop(ctx, subject, server, held, kill=kill)
    how = "was killed" if kill else "stopped"
    ended = f"{stream.status}{' / ' + stream.reason if stream.reason else ''}"
    attempts, back = await _come_back(ctx, subject, server, stream, how=how, ended=ended)
    match = await ctx.end(subject, created)
    again = _asked_again(rec, held, back)
    ctx.judge(subject, created, match)
    return (
        f"turn {held[1]} of {held[0]} was open (its answer held back) when the server {how}: "
        f"{withdrawn}asked again as turn {again} after the restart; reconnected (stream ended "
        f"{ended}; {plural(attempts, 'attempt')} in {BACKOFF_WINDOW_S:g} s) and finished "
        "the match"
    )


async def _stop(
    ctx: Context, subject: Subject, server: LocalServer, held: Turn, *, kill: bool
) -> tuple[StreamLog, str]:
    """Stop (SIGTERM) or kill the server, then restart it; the bot's stream, and how the
    held turn was withdrawn. Stopped, the server withdraws the turn (server stopping), and
    the proxy keeps the bot's stream open until the server is back, so that an answer to
    the withdrawn turn on that stream is seen."""
    rec, proxy = subject.recorder, subject.proxy
    assert proxy is not None
    stream = rec.streams[rec.answers[-1].stream]  # the held answer's
    proxy.down = True  # from now on the bot finds no server, until the window is over
    if not kill:
        proxy.hold_ends = asyncio.Event()
    ctx.waiting = f"the server to stop ({'SIGKILL' if kill else 'SIGTERM'})"
    await server.stop(kill=kill)
    subject.episode = f"the server {'was killed' if kill else 'stopped'}"
    await rec.until(lambda: stream.closed is not None)
    withdrawn = _withdrawn_for_stop(rec, held, kill)
    ctx.waiting = "the server to restart"
    await server.restart()
    if proxy.hold_ends is not None:
        proxy.hold_ends.set()
    await rec.until(lambda: stream.told is not None)
    return stream, withdrawn


async def _come_back(
    ctx: Context,
    subject: Subject,
    server: LocalServer,
    stream: StreamLog,
    *,
    how: str,
    ended: str,
) -> tuple[int, float]:
    """From the end of the bot's ``stream``, the proxy refuses it BACKOFF_WINDOW_S (the
    server is down, for the bot), then forwards to the restarted server; the bot must have
    backed off meanwhile and reconnect. How often it tried in the window, and when the
    server was back for it. ``how`` the server went (``stopped``) and how that ``ended``
    the stream (``UNAVAILABLE``), for the verdict."""
    rec, proxy = subject.recorder, subject.proxy
    assert proxy is not None and stream.told is not None
    down = stream.told
    await subject.race(
        asyncio.sleep(max(0.0, down + BACKOFF_WINDOW_S - time.monotonic())),
        f"after the server {how} (its stream ended {ended}; it should reconnect)",
    )
    await proxy.retarget(server.address)
    proxy.down = False
    back = time.monotonic()
    attempts = [s for s in rec.attempts(since=down) if s.opened < down + BACKOFF_WINDOW_S]
    if len(attempts) > MAX_ATTEMPTS:
        raise RowFailed(
            f"reconnected {times(len(attempts))} in {BACKOFF_WINDOW_S:g} s while the server "
            f"was down (back off: 0.1 s, doubling up to 10 s)"
        )
    ctx.waiting = "the bot to reconnect"
    try:
        await asyncio.wait_for(
            subject.race(
                rec.until(lambda: any(s.principal and s.opened >= back for s in rec.streams)),
                f"after the server {how} (its stream ended {ended})",
            ),
            RECONNECT_S,
        )
    except TimeoutError:
        raise RowFailed(
            f"did not reconnect within {RECONNECT_S:g} s after the server came back (its "
            f"stream ended {ended})"
        ) from None
    return len(attempts), back


def _withdrawn_for_stop(rec: Recorder, held: Turn, kill: bool) -> str:
    """How the server ended the held turn when it stopped, for the detail: withdrawn (server
    stopping) when stopped, nothing when killed. SetupFailed if the stop did not withdraw
    it: the row did not make its situation."""
    if kill:
        return ""
    item = rec.withdrawals.get(held)
    reason = item.message.decision_withdrawn.reason if item is not None else None
    if reason != play_pb2.WITHDRAWAL_REASON_SERVER_STOPPING:
        raise SetupFailed(
            f"the server stopped without withdrawing turn {held[1]} of {held[0]} (server "
            "stopping), which was open"
        )
    return "withdrawn (server stopping), "


def _asked_again(rec: Recorder, held: Turn, back: float) -> int:
    """The turn_id under which the held turn's decision was asked after the restart (its
    match's first request since ``back``). SetupFailed if there is none, or it is the old
    turn_id: the row did not make its situation."""
    match, turn_id = held
    later = [d for d in rec.of_kind("decision", match) if d.at >= back]
    if not later or later[0].turn[1] == turn_id:
        raise SetupFailed(
            f"after the restart the server did not ask turn {turn_id} of {match} again under "
            "a new turn_id"
        )
    return later[0].turn[1]


async def stopping(ctx: Context) -> str:
    return await _restart(ctx, kill=False)


async def killed(ctx: Context) -> str:
    return await _restart(ctx, kill=True)


ROWS: tuple[Row, ...] = (
    Row("plays", "a block match: every answer legal and in time, plays on both ends", plays),
    Row("defer-redeal", "cuban: a redeal offer and an offered opening (DEFER)", defer_redeal),
    Row("draw", "the draw game for two: answering after drawing from the stock", draw),
    Row(
        "forced-asked",
        "ask_forced turned on: single-action requests answered",
        forced_asked,
        local_only=True,
    ),
    Row(
        "forced-unasked",
        "ask_forced turned off: the server plays forced moves",
        forced_unasked,
        local_only=True,
    ),
    Row("seats", "two seats of one match and a second match at once, one stream", seats),
    Row("matches", "three matches in a row on one bot-token stream", matches),
    Row(
        "illegal",
        "an answer refused ILLEGAL_ACTION: answer the request sent again",
        illegal,
        local_only=True,
    ),
    Row("stale", "a STALE_TURN error in the stream: carry on", stale, local_only=True),
    Row(
        "withdrawn-timeout",
        "a turn withdrawn (timed out): keep playing",
        withdrawn_timeout,
        local_only=True,
    ),
    Row(
        "withdrawn-cancel",
        "a turn withdrawn (match cancelled): do not answer it",
        withdrawn_cancel,
        local_only=True,
    ),
    Row(
        "seat-token",
        "a seat token: stop, exit 0, after MatchEnded",
        seat_token,
        local_only=True,
    ),
    Row(
        "replaced",
        "a newer stream with the token (STREAM_REPLACED): stop, never reconnect",
        replaced,
        local_only=True,
    ),
    Row(
        "stopping",
        "the server stops (suspend) with a request open: drop it, reconnect with backoff, "
        "answer it asked again, finish",
        stopping,
        local_only=True,
        own_server=True,
    ),
    Row(
        "killed",
        "the server is killed with a request open: reconnect with backoff, answer it asked "
        "again, finish",
        killed,
        local_only=True,
        own_server=True,
    ),
)
