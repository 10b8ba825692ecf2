"""Matches: the registry, and the one task that drives each running match.

A :class:`Match` owns one :class:`~capicua.engine.game.MatchState`, the single authority on
its rules. Only the match's runner task (:meth:`Match.run`) changes that state: it asks the
seat to act (a remote client over its Play stream, or a built-in bot in the process pool),
applies the answer, and fans the consequences out as per-seat messages. Everything else
(lobby calls, Play streams) only reads the state or hands the runner an answer.

A match's other jobs live beside it, one module each: its seats and how they are taken
(:mod:`capicua.server.seats`), how the seat to act is asked for each decision, under the
turn timer and the timeout policy (:mod:`capicua.server.asking`), its turns and the
checking of answers (:mod:`capicua.server.turns`), its messages to seats and spectators
(:mod:`capicua.server.fanout`), and its replay and stored record
(:mod:`capicua.server.record`). This module is the loop that ties them together.

Turns: a remote seat gets a DecisionRequest with its full view (for a stream that asked
for CAPABILITY_INCREMENTAL_DECISIONS: the view's changing part and the events it was not
sent yet), the legal actions (ids = positions) and a deadline. An unknown action id is
answered in-stream with FAILED_PRECONDITION / ILLEGAL_ACTION and the request is sent again
(same turn_id, same deadline, the full view); the third illegal answer to one request
counts as a timeout. When the deadline passes, the match's policy applies: AUTO_PLAY plays
the seat with the Easy bot and keeps doing so at once on its later turns until the client
answers again (any answer, or a new stream, clears it); FORFEIT ends the match with the
seat's side forfeiting (TERMINATION_TIMEOUT, or TERMINATION_DISCONNECT when the seat had
no stream, or TERMINATION_ILLEGAL_ACTIONS after three illegal answers).

A request that ends without the client's accepted answer is withdrawn: the moment the
runner stops waiting for it (the deadline, the third illegal answer, the auto-play's move,
the match stopping), its principal alone is sent DecisionWithdrawn, before anything else
about the match. Its request carried ``time_left_ms``, and MatchStarted the timer as applied
(:attr:`Match.turn_timer`), so that a client needs no clock of its own to budget.

The server's own failures are never hidden behind a move: a built-in bot that fails (a CPU
seat, or the auto-play of a late seat) is logged with its traceback and ends the match
TERMINATION_CANCELLED, its reason naming the bot, the turn and the error; a replay that
cannot be built is logged, and GetReplay answers INTERNAL / REPLAY_FAILED for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog
from google.protobuf import timestamp_pb2

from capicua.engine.game import Game, MatchState
from capicua.engine.records import Outcome
from capicua.engine.rules import Ruleset
from capicua.server import errors
from capicua.server.addresses import AddressGroups
from capicua.server.asking import REASON_CHARS, Asker, CpuFailed, StopSignal, described
from capicua.server.auth import Principal, Tokens, match_over
from capicua.server.cpu import CpuPool
from capicua.server.fanout import Fanout, Streams, Watcher
from capicua.server.faults import Faults
from capicua.server.journal import DamagedMatch, JournalDamage, LiveMatch
from capicua.server.record import Record, seats_from_json, seats_to_json
from capicua.server.seats import LEVEL_NAMES, Seat, Seating
from capicua.server.settings import settled
from capicua.server.store import Store
from capicua.server.turns import RESUME_TURN_GAP, Turns
from capicua.v1 import game_pb2, match_pb2, play_pb2, rules_pb2, view_pb2
from capicua.wire import codec

log = structlog.get_logger("capicua.server.match")

WAITING = match_pb2.MATCH_STATE_WAITING
RUNNING = match_pb2.MATCH_STATE_RUNNING
FINISHED = match_pb2.MATCH_STATE_FINISHED


def _unresumable(error: BaseException) -> str:
    """The reason of a journaled match that could not be rebuilt after a restart."""
    why = f"damaged journal: {error}" if isinstance(error, JournalDamage) else described(error)
    return f"the server restarted and could not resume it: {why}"[:REASON_CHARS]


def _journaled_principal(match_id: str, seat: int) -> Principal:
    """Whom a journaled token names: the host (seat -1) or one seat of the match."""
    return Principal.host(match_id) if seat < 0 else Principal.seat_of(match_id, seat)


def _check_seat_tokens(live: LiveMatch, seats: Sequence[Seat]) -> None:
    """Every seat played with a seat token has its one token journaled, and every seat token
    journaled names such a seat: a seat whose token is lost could never be played again,
    and a token that is not its own would let a stranger play it."""
    for s in seats:
        if s.principal not in (None, f"bots/{s.bot_id}", f"{live.match.name}/seats/{s.index}"):
            raise JournalDamage(f"seat {s.index} is played by {s.principal[:80]!r}")
    holders = {s.index for s in seats if s.principal == f"{live.match.name}/seats/{s.index}"}
    journaled = sorted(seat for _, seat in live.tokens if seat >= 0)  # one token a seat
    if journaled != sorted(holders):
        raise JournalDamage(
            f"seat tokens journaled for seats {journaled}, held by seats {sorted(holders)}"
        )


def _cancelled_before_start(sides: int, reason: str) -> game_pb2.Outcome:
    """The outcome of a match cancelled before its first hand: no scores, no ranking."""
    return codec.outcome_to_proto(Outcome.cancelled((0,) * sides, reason))


@dataclass
class Services:
    """What matches share: the streams, the CPU pool, the store and the tokens."""

    streams: Streams
    pool: CpuPool
    store: Store
    default_timer_ms: int = 30_000
    tokens: Tokens | None = None  # None: tokens are not the matches' business (tests)
    faults: Faults | None = None  # a test's bugs (capicua.server.faults); None in use


def _timestamp(ns: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(ns)
    return ts


class Match:
    """One match: its seats and settings, and once started its engine state and runner."""

    def __init__(
        self,
        services: Services,
        *,
        match_id: str,
        ruleset: Ruleset,
        game: Game,
        seats: list[Seat],
        settings: match_pb2.MatchSettings,
        seed: int,
        creator: str = "",
        seed_chosen: bool = False,
    ) -> None:
        self.services = services
        self.id = match_id
        # who created it, for the per-creator limits: "admin", "bots/x" or "address:ip"
        self.creator = creator
        self.name = f"matches/{match_id}"
        self.ruleset = ruleset
        self.ruleset_pb: rules_pb2.Ruleset = codec.ruleset_to_proto(ruleset)
        self.game = game
        self.settings = settings
        self.seed = seed
        # its creator chose the seed (and can compute every deal): open seats need consent
        self.seed_chosen = seed_chosen
        self.create_ns = time.time_ns()
        self.status: match_pb2.MatchState.ValueType = WAITING
        self.state: MatchState | None = None
        self.outcome_pb: game_pb2.Outcome | None = None
        self.final_view: view_pb2.View | None = None  # once finished and released
        self.log = log.bind(match=match_id)
        self.seating = Seating(self.name, seats)
        self.turns = Turns(self.name, seats)
        self.fanout = Fanout(self.name, seats, services.streams, self.turn_timer)
        self.record = Record(services.store, self.log, match_id, faults=services.faults)
        self.finished = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.on_finished: Callable[[Match], None] | None = None
        self.on_joined: Callable[[Match, str], None] | None = None  # (match, new owner)
        self._closing = False
        self.stop = StopSignal()
        self.asker = Asker(
            services,
            name=self.name,
            seed=seed,
            ruleset=ruleset,
            timer=self.turn_timer,
            parts=(self.fanout, self.turns, self.record),
            log=self.log,
            stop=self.stop,
        )

    # -- what everyone may see ------------------------------------------------------------

    @property
    def seats(self) -> list[Seat]:
        return self.seating.seats

    @property
    def public(self) -> bool:
        return self.settings.visibility != match_pb2.VISIBILITY_PRIVATE

    @property
    def timer_ms(self) -> int:
        return self.settings.turn_timer_ms or self.services.default_timer_ms

    @property
    def turn_timer(self) -> play_pb2.TurnTimer:
        """The turn timer as the runner applies it (:class:`~capicua.server.asking.Asker`:
        FORFEIT, or else AUTO_PLAY), for MatchStarted."""
        forfeit = self.settings.on_timeout == match_pb2.TIMEOUT_POLICY_FORFEIT
        policy = play_pb2.ON_TIMEOUT_FORFEIT if forfeit else play_pb2.ON_TIMEOUT_AUTO_PLAY
        return play_pb2.TurnTimer(limit_ms=self.timer_ms, on_timeout=policy)

    @property
    def players(self) -> list[str]:
        return self.seating.players

    def seats_of(self, principal: str) -> list[Seat]:
        return self.seating.of(principal)

    def to_proto(self) -> match_pb2.Match:
        if self.record.final is not None:
            final = match_pb2.Match()
            final.CopyFrom(self.record.final)
            return final
        m = match_pb2.Match(
            name=self.name,
            state=self.status,
            settings=self.settings,
            create_time=_timestamp(self.create_ns),
            seed_chosen=self.seed_chosen,
        )
        m.ruleset.CopyFrom(self.ruleset_pb)
        streams = self.services.streams
        m.seats.extend(s.status(streams) for s in self.seats)
        if self.state is not None:
            m.hand = self.state.hand
            m.scores.extend(self.state.scores)
        else:
            m.scores.extend([0] * self.ruleset.num_sides)
        if self.outcome_pb is not None:
            m.outcome.CopyFrom(self.outcome_pb)
        return m

    def public_view(self) -> view_pb2.View | None:
        if self.state is None:
            return self.final_view
        return self.fanout.public_view(self.state)

    def watch(self, watcher: Watcher) -> None:
        self.fanout.watchers.add(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        self.fanout.watchers.discard(watcher)

    def seats_changed(self) -> None:
        """A seat was taken, a seat's stream came or went, or the match started: the
        spectators that follow its record are told."""
        self.fanout.record_changed(self.to_proto)

    # -- joining and starting -------------------------------------------------------------

    def join(
        self,
        principal: str | None,
        *,
        bot_id: str,
        player: str,
        seat: int | None,
        accept_chosen_seed: bool = False,
    ) -> Seat:
        """Seat a bot or a one-seat client (:meth:`Seating.take`) while the match waits; an
        open seat of a match whose creator chose the seed only with ``accept_chosen_seed``."""
        if self.status != WAITING or self._closing:
            raise errors.precondition(
                errors.MATCH_STARTED, f"name: {self.name} has already started", match=self.name
            )
        chosen = self.seating.take(
            principal,
            bot_id=bot_id,
            player=player,
            seat=seat,
            open_allowed=accept_chosen_seed or not self.seed_chosen,
        )
        self.record.seated(self.seats)
        self.log.info("seat_joined", seat=chosen.index, player=player)
        if self.on_joined is not None:
            assert chosen.principal is not None
            self.on_joined(self, chosen.principal)
        self.seats_changed()
        return chosen

    def start(self) -> None:
        """Fill open seats with CPUs, deal, and start the runner task."""
        if self._closing or self.status == FINISHED:
            raise errors.precondition(
                errors.MATCH_FINISHED, f"name: {self.name} is over", match=self.name
            )
        if self.status != WAITING:
            raise errors.precondition(
                errors.MATCH_STARTED, f"name: {self.name} has already started", match=self.name
            )
        self.seating.fill()
        streams = self.services.streams
        auto = [s.principal is None or not streams.ask_forced(s.principal) for s in self.seats]
        self.record.seated(self.seats, auto)
        self._run_from(self.game.new_match(self.seed, auto_forced=auto))
        self.log.info("match_started", players=self.players, rules=self.ruleset.name)
        self.seats_changed()

    def _run_from(self, state: MatchState) -> None:
        self.state = state
        self.status = RUNNING
        self.task = asyncio.create_task(self.run(), name=f"match-{self.id}")

    # -- the journal ----------------------------------------------------------------------

    def journal(self, host_digest: str) -> None:
        """Write the new match to the journal, with its host token's digest."""
        live = LiveMatch(
            self.id,
            self.create_ns,
            self.public,
            self.seed,
            self.to_proto(),
            seats_to_json(self.seats),
            None,
            [],
            [],
            self.creator,
        )
        self.record.created(live, host_digest)

    def resume_from(self, auto_forced: str | None, actions: Sequence[int]) -> None:
        """After a restart: the match as journaled. Not started: it waits again. Started:
        the engine re-simulates it from its seed and actions, and the runner goes on (the
        seat to act is asked again). Raises ValueError when the journal does not replay."""
        if auto_forced is None:
            if actions:
                raise ValueError(f"{len(actions)} actions journaled before the start")
            return
        state = self.game.new_match(self.seed, auto_forced=[c == "1" for c in auto_forced])
        asked: dict[str, int] = {}  # principal -> the journaled decisions it was asked for
        for n, code in enumerate(actions):
            if state.is_terminal() or code not in state.legal_actions():
                raise ValueError(f"journaled action {n + 1} ({code}) is not legal there")
            actor = state.current_seat
            principal = None if actor is None else self.seats[actor].principal
            if principal is not None:
                asked[principal] = asked.get(principal, 0) + 1
            state.apply(code)
        self.record.applied_count = len(actions)
        # Turn ids after a restart leave a gap: no id names two different requests, even
        # for the decisions asked but not yet journaled when the server stopped.
        self.turns.last = len(actions) + RESUME_TURN_GAP
        self.turns.resumed(asked)
        self._run_from(state)
        self.log.info("match_resumed", actions=len(actions), hand=state.hand)

    # -- the runner -----------------------------------------------------------------------

    async def run(self) -> None:
        """Drive the match to its end (the only code that changes ``self.state``)."""
        state = self.state
        assert state is not None
        try:
            self.fanout.started(state, self.ruleset_pb, self.players)
            while not state.is_terminal():
                if self.stop.suspending:
                    break
                if self.stop.reason is not None:
                    state.cancel(self.stop.reason)
                    break
                seat_no = state.current_seat
                assert seat_no is not None
                seat = self.seats[seat_no]
                # The engine's codes only: a remote seat's legal actions are built from
                # them (views.legal_entries), typed actions only for a built-in bot.
                codes = state.legal_actions()
                turn = self.turns.begin()
                if seat.principal is None:
                    level = LEVEL_NAMES[seat.cpu_level]  # CreateMatch refuses other levels
                    index = await self.asker.cpu_choice(state, level, turn, seat_no)
                else:
                    index = await self.asker.remote_choice(state, seat, turn, codes)
                if index is None:
                    continue  # stopped, or the seat's side forfeited
                state.apply(codes[index])
                self.record.applied(codes[index])
                if self.fanout.flush(state):
                    # Let the Play streams start writing the event batches now: the next
                    # request is built while they are on their way. (None sent, as to
                    # incremental seats: the request goes out one turn of the loop sooner.)
                    await asyncio.sleep(0)
        except CpuFailed as e:
            if not state.is_terminal():
                state.cancel(f"internal server error: {e}")
        except Exception as e:
            self.log.exception("match_failed")
            if not state.is_terminal():
                state.cancel(f"internal server error ({type(e).__name__})")
        finally:
            if self.stop.suspending and not state.is_terminal():
                # not over: the journal holds it, and the next start resumes it
                self.fanout.hang_up()
                self.log.info("match_suspended", turns=self.turns.last)
            else:
                if not state.is_terminal():  # the task itself was cancelled
                    state.cancel(self.stop.reason or "server stopped")
                await self._finish()

    async def _finish(self) -> None:
        """Record the finished match (with its replay) and tell everyone."""
        state = self.state
        assert state is not None and state.outcome is not None
        self.asker.reveal_held_counts(self.seats)
        self.outcome_pb = codec.outcome_to_proto(state.outcome)
        try:  # a bug here must still end the match for everyone
            self.fanout.flush(state)
        except Exception:
            self.log.exception("flush_failed")
        self.record.build_replay(state, self.players, self.id, list(self.settings.tags))
        await self._closed()
        self.fanout.ended(state, self.outcome_pb)
        self.log.info(
            "match_finished",
            termination=state.outcome.termination.value,
            winner=state.outcome.winner,
            reason=state.outcome.reason,
            hands=state.log.hands_dealt,
            turns=self.turns.last,
        )
        self._release()

    def _release(self) -> None:
        """Drop what a finished match no longer needs: the engine state and the views'
        caches (most of its memory), and the replay once it is stored (GetReplay reads the
        store). Kept: the record, the final public view for a late spectator, and the
        turns' answers, so that a late reply is told STALE_TURN rather than UNKNOWN_TURN."""
        self.final_view = self.fanout.public_view(self.state)
        self.state = None
        self.fanout.views = None
        self.record.release()
        self.turns.settle_all()

    async def _closed(self) -> None:
        """Store the final record before anyone is told the match ended, then mark it."""
        await self.record.close(self.to_proto(), create_ns=self.create_ns, public=self.public)
        if self.services.tokens is not None:  # its host and seat tokens have done their job
            self.services.tokens.revoke_match(self.id, len(self.seats))
        self.status = FINISHED
        self.finished.set()
        if self.on_finished is not None:
            self.on_finished(self)

    # -- stopping -------------------------------------------------------------------------

    async def cancel(self, reason: str) -> None:
        """End the match with TERMINATION_CANCELLED (recorded with its replay if it ran)."""
        if self.status == FINISHED or self._closing and self.status == WAITING:
            raise errors.precondition(
                errors.MATCH_FINISHED, f"name: {self.name} is over", match=self.name
            )
        if self.stop.suspending:  # the server is stopping and leaves it to the journal
            raise errors.shutting_down(match=self.name)
        self._closing = True
        if self.status == WAITING:
            self.outcome_pb = _cancelled_before_start(self.ruleset.num_sides, reason)
            await self._closed()
            self.fanout.close_watchers(self.outcome_pb)
            self.log.info("match_finished", termination="cancelled", reason=reason, hands=0)
            return
        self.request_stop(reason)
        await self.finished.wait()

    def suspend(self) -> None:
        """Stop driving a running match without ending it: a graceful stop with
        ``--on-stop suspend`` leaves it to its journal, and the next start on the same
        data resumes it (the seat to act is asked again)."""
        self.stop.suspending = True
        self.request_stop("the server is stopping; the match resumes when it restarts")

    def request_stop(self, reason: str) -> None:
        self.stop.request(reason)

    # -- answers from Play streams --------------------------------------------------------

    def resume(self, principal: str) -> list[play_pb2.PlayResponse]:
        """What a (re)connecting stream of ``principal`` needs: MatchStarted for each of its
        seats (with the view now) and the pending request, if it is one of them."""
        if self.status != RUNNING or self.state is None or self.fanout.views is None:
            return []
        out = []
        for s in self.seats_of(principal):
            s.autoplay = False
            out.append(self.fanout.resumed(self.state, s))
        request = self.turns.pending_for(principal)
        if request is not None:
            out.append(request)
        return out

    def answer(self, principal: str, reply: play_pb2.ActionReply) -> list[play_pb2.PlayResponse]:
        """Handle an ActionReply from ``principal`` (:meth:`Turns.answer`)."""
        return self.turns.answer(principal, reply)


class Registry:
    """Every match the server holds in memory: waiting, running, and recently finished."""

    def __init__(
        self,
        services: Services,
        *,
        keep_finished: int = 1000,
        origin_of: Callable[[str], str] = lambda creator: "",
        groups: AddressGroups | None = None,
    ) -> None:
        self.services = services
        # the client address whose group's limit a creator's matches count against ("":
        # none); creators and origins are addresses as the callers had them, grouped here
        self.origin_of = origin_of
        self.groups = groups or AddressGroups()
        self.matches: dict[str, Match] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        # Indexes, so that CreateMatch's limits do not scan every match held in memory
        # (with 512 matches running, plus the last 1,000 finished): the unfinished matches
        # in creation order, and for each principal the unfinished matches with a seat it
        # owns. A seat's owner is set when the match is created (a seat reserved for a bot)
        # or when it is joined, and never changes afterwards; finishing drops the match.
        self._unfinished: dict[str, Match] = {}
        self._owned: dict[str, dict[str, Match]] = {}
        # creator (an address by its group) -> its unfinished matches' ids
        self._created: dict[str, set[str]] = {}
        self._from: dict[str, set[str]] = {}  # origin's group -> its unfinished matches' ids
        self._keep_finished = keep_finished
        self._games: dict[Ruleset, Game] = {}

    def game(self, ruleset: Ruleset) -> Game:
        game = self._games.get(ruleset)
        if game is None:
            if len(self._games) > 256:
                self._games.clear()
            game = self._games[ruleset] = Game(ruleset)
        return game

    def create(
        self,
        ruleset: Ruleset,
        seats: list[Seat],
        settings: match_pb2.MatchSettings,
        seed: int | None,
        creator: str = "",
    ) -> Match:
        """A new waiting match; ``seed`` None: one drawn at random, shown to nobody before
        the match is over (else the creator's: :attr:`Match.seed_chosen`)."""
        match_id = secrets.token_hex(8)
        while match_id in self.matches:  # pragma: no cover - 64 random bits
            match_id = secrets.token_hex(8)
        match = Match(
            self.services,
            match_id=match_id,
            ruleset=ruleset,
            game=self.game(ruleset),
            seats=seats,
            settings=settings,
            seed=secrets.randbits(63) if seed is None else seed,
            creator=creator,
            seed_chosen=seed is not None,
        )
        self._adopt(match)
        return match

    def _adopt(self, match: Match) -> None:
        self.matches[match.id] = match
        self._unfinished[match.id] = match
        if match.creator:
            self._created.setdefault(self.groups.of(match.creator), set()).add(match.id)
            origin = self.origin_of(match.creator)
            if origin:
                self._from.setdefault(self.groups.of(origin), set()).add(match.id)
        for seat in match.seats:
            if seat.owner is not None:
                self._on_joined(match, seat.owner)
        match.on_finished = self._on_finished
        match.on_joined = self._on_joined

    async def restore(self, live: LiveMatch | DamagedMatch) -> Match | None:
        """An unfinished match of the journal, held again: waiting, or running on from its
        last journaled action, its host and seat tokens working again. One that cannot be
        rebuilt (its rows damaged, its actions not replaying) is recorded as finished
        (CANCELLED, the reason saying why), never left unknown, and its tokens are told
        so; then None. Never raises: one match must not keep the server from starting."""
        tokens = self.services.tokens
        if tokens is not None:
            for digest, seat in live.tokens:
                tokens.add_digest(digest, _journaled_principal(live.match_id, seat))
        if isinstance(live, DamagedMatch):
            log.error("match_not_restored", match=live.match_id, problem=live.problem)
            await self._abandon(live, JournalDamage(live.problem))
            return None
        try:
            ruleset = codec.ruleset_from_proto(live.match.ruleset)
            seats = seats_from_json(live.seats_json, ruleset.seats)
            _check_seat_tokens(live, seats)
            journaled = settled(live.match.settings, self.services.default_timer_ms)
            match = Match(
                self.services,
                match_id=live.match_id,
                ruleset=ruleset,
                game=self.game(ruleset),
                seats=seats,
                settings=journaled,
                seed=live.seed,
                creator=live.creator,
                seed_chosen=live.match.seed_chosen,
            )
        except Exception as e:
            log.error("match_not_restored", match=live.match_id, exc_info=e)
            await self._abandon(live, e)
            return None
        match.create_ns = live.create_ns
        self._adopt(match)
        try:
            match.resume_from(live.auto_forced, live.actions)
        except Exception as e:
            match.log.error("match_not_resumed", exc_info=e)
            match.status = WAITING  # never ran in this process: cancel() records it
            await match.cancel(_unresumable(e))
        return match

    async def _abandon(self, live: LiveMatch | DamagedMatch, error: Exception) -> None:
        """Record ``live`` CANCELLED with ``error`` in its reason, and revoke its tokens."""
        snapshot = match_pb2.Match()
        if live.match is not None:
            snapshot.CopyFrom(live.match)
        snapshot.name = f"matches/{live.match_id}"
        if not snapshot.HasField("create_time"):  # a record rebuilt from the other columns
            snapshot.create_time.CopyFrom(_timestamp(live.create_ns))
        sides = len(snapshot.scores) or 2
        snapshot.outcome.CopyFrom(_cancelled_before_start(sides, _unresumable(error)))
        if not snapshot.scores:
            snapshot.scores.extend(snapshot.outcome.scores)
        record = Record(
            self.services.store,
            log.bind(match=live.match_id),
            live.match_id,
            faults=self.services.faults,
        )
        await record.close(snapshot, create_ns=live.create_ns, public=live.public)
        if self.services.tokens is not None:  # the ones journaled (the rest never worked)
            why = match_over(live.match_id)
            for principal in {_journaled_principal(live.match_id, seat) for _, seat in live.tokens}:
                self.services.tokens.revoke(principal, why)

    def _on_joined(self, match: Match, owner: str) -> None:
        self._owned.setdefault(owner, {})[match.id] = match

    def forget(self, match: Match) -> None:
        """Drop a match that was never acknowledged (its creation could not be stored)."""
        self._unheld(match)
        self.matches.pop(match.id, None)

    def _on_finished(self, match: Match) -> None:
        self._unheld(match)
        self._finished[match.id] = None
        while len(self._finished) > self._keep_finished:
            old, _ = self._finished.popitem(last=False)
            self.matches.pop(old, None)

    def _unheld(self, match: Match) -> None:
        """Take an unfinished match out of the indexes of the limits."""
        self._unfinished.pop(match.id, None)
        for index, key in (
            (self._created, self.groups.of(match.creator)),
            (self._from, self.groups.of(self.origin_of(match.creator))),
        ):
            held = index.get(key)
            if held is not None:
                held.discard(match.id)
                if not held:
                    del index[key]
        for owner in {s.owner for s in match.seats if s.owner is not None}:
            owned = self._owned.get(owner)
            if owned is not None:
                owned.pop(match.id, None)
                if not owned:
                    del self._owned[owner]

    def get(self, match_id: str) -> Match | None:
        return self.matches.get(match_id)

    def active(self) -> list[Match]:
        """The unfinished matches (waiting or running), oldest first."""
        return list(self._unfinished.values())

    def active_count(self) -> int:
        return len(self._unfinished)

    def count_of(self, principal: str) -> int:
        """How many unfinished matches have a seat for ``principal``."""
        return len(self._owned.get(principal, ()))

    def created_by(self, creator: str) -> int:
        """How many unfinished matches ``creator`` (:attr:`Match.creator`) created; for an
        address, every address of its group."""
        return len(self._created.get(self.groups.of(creator), ()))

    def created_from(self, origin: str) -> int:
        """How many unfinished matches were created from client address ``origin``
        (``address:ip``) and the rest of its group: without a token, or by the bots
        registered from any of them."""
        return len(self._from.get(self.groups.of(origin), ()))

    def of_principal(self, principal: str) -> list[Match]:
        """Unfinished matches with a seat for ``principal`` (joined, or reserved for it),
        oldest first."""
        owned = self._owned.get(principal)
        if not owned:
            return []
        return [m for m in self._unfinished.values() if m.id in owned]

    async def suspend_all(self, timeout: float) -> None:
        """Stop driving every running match, leaving each (and every waiting one) to the
        journal; nothing is recorded as finished."""
        tasks = []
        for m in self.active():
            if m.status == RUNNING and m.task is not None:
                m.suspend()
                tasks.append(m.task)
        if tasks:
            # Not cancelled after the timeout: a match that ended meanwhile may be in its
            # final save, whose write (with the journal's last actions) must not be dropped;
            # the store's close runs after it.
            await asyncio.wait(tasks, timeout=timeout)

    async def stop_all(self, reason: str, timeout: float) -> None:
        """Cancel every waiting and running match (recorded CANCELLED, with replays)."""
        active = self.active()
        jobs = [asyncio.ensure_future(m.cancel(reason)) for m in active]
        if not jobs:
            return
        done, pending = await asyncio.wait(jobs, timeout=timeout)
        for job in pending:
            job.cancel()
        for job in done:
            with contextlib.suppress(Exception):
                job.result()
