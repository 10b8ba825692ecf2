"""White-box: the live protocol's conversions and the CPU pool."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from capicua.bots import UnknownBotError
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import Observation, observe
from capicua.engine.rules import Ruleset, load_preset
from capicua.server import cpu
from capicua.server.auth import Tokens, bearer_token, digest
from capicua.server.errors import ApiError
from capicua.v1 import game_pb2, play_pb2, view_pb2
from capicua.wire import views as wire


def test_views_and_legal_actions() -> None:
    rules = load_preset("el-dominito-2p")
    state = Game(rules).new_match(3)
    from capicua.wire import codec

    builder = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["a", "b"])
    rng = random.Random(1)
    while not state.is_terminal() and len(state.log.results()) < 2:
        seat = state.current_seat
        assert seat is not None
        obs = observe(state, seat)
        view = builder.view(obs)
        assert view.seat == seat and view.to_act == seat
        assert list(view.tiles) == [str(t) for t in state.hand_of(seat)]
        assert view.stock_count == state.stock_count and list(view.players) == ["a", "b"]
        assert len(view.results) == len(state.log.results())
        legal = state.legal()
        actions = wire.legal_actions(legal)
        assert [a.id for a in actions] == list(range(len(legal)))
        for a, action in zip(actions, legal, strict=True):
            assert a.text == str(action)
            if a.kind == view_pb2.ACTION_KIND_PLAY:
                assert a.tile == str(action.tile) and action.end is not None
                assert a.end == (
                    game_pb2.END_LEFT if action.end.name == "LEFT" else game_pb2.END_RIGHT
                )
        state.apply(state.legal_actions()[rng.randrange(len(legal))])
    spectator = builder.view(observe(state, None))
    assert not spectator.HasField("seat") and not spectator.tiles
    first = builder.results(state.log.results())
    assert builder.results(state.log.results())[0] is first[0], "results are converted once"


def test_padding_makes_private_parts_whole_buckets() -> None:
    """Whatever the private parts' size, they and the padding pieces (their tags and
    lengths included) take a whole number of buckets, the fewest with room for a piece: a
    message's length says which bucket, nothing finer, and the bucket grows with the
    size. Nothing private, no padding."""
    bucket = wire.PAD_BUCKET
    assert wire.padding(0) == []
    for private in range(1, 5 * bucket):
        request = play_pb2.DecisionRequest(padding=wire.padding(private))
        total = private + request.ByteSize()
        assert total == -(-(private + 2) // bucket) * bucket, private  # the fewest buckets
        assert not any(request.padding[0]), "filler is zero bytes"


def test_legal_actions_report_their_encoded_size() -> None:
    """The size of :meth:`ViewBuilder.legal_entries` is what the actions take in their
    DecisionRequest, for any number of them (ids past 127 take two bytes)."""
    from capicua.wire import codec

    rules = load_preset("iq-1v1")
    state = Game(rules).new_match(5)
    builder = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["a", "b"])
    codes = state.legal_actions()
    for n in (1, 2, len(codes)):
        entries = builder.legal_entries(state, codes[:n])
        request = play_pb2.DecisionRequest.FromString(entries)
        assert len(entries) == request.ByteSize() and len(request.legal_actions) == n
    entries = builder.legal_entries(state, list(codes) * 100)
    many = play_pb2.DecisionRequest.FromString(entries)
    assert len(entries) == many.ByteSize() and len(many.legal_actions) > 128
    assert [a.id for a in many.legal_actions] == list(range(len(many.legal_actions)))


def _new_matches(preset: str) -> Iterator[tuple[Ruleset, MatchState]]:
    """New matches of ``preset``, seeds 0-2; "redeal": crafted cuban deals with redeal
    offers."""
    from tests.test_observation import cuban_with_two_redeal_offers

    rules = load_preset("cuban" if preset == "redeal" else preset)
    for seed in range(3):
        if preset == "redeal":
            yield rules, cuban_with_two_redeal_offers(seed)
        else:
            yield rules, Game(rules).new_match(seed)


@pytest.mark.parametrize("preset", ["el-dominito-2p", "cuban", "block", "cutthroat", "redeal"])
def test_incremental_views_equal_fresh_views(preset: str) -> None:
    """view_of (events converted once, kept per seat) builds exactly the message of
    view(observe(...)) for every seat and spectator at every step, across hands, draws
    (el-dominito-2p) and redeal offers with KEEPs (a crafted cuban deal)."""
    from capicua.wire import codec

    rng = random.Random(7)
    for seed, (rules, state) in enumerate(_new_matches(preset)):
        players = [f"p{i}" for i in range(rules.seats)]
        cached = wire.ViewBuilder(codec.ruleset_to_proto(rules), players)
        fresh = wire.ViewBuilder(codec.ruleset_to_proto(rules), players)
        steps = 0
        while steps < 400:
            # the seats in a changing order, as decisions and reconnections ask for them
            seats: list[int | None] = [*range(rules.seats), None]
            rng.shuffle(seats)
            for seat in seats[: rng.randint(1, len(seats))]:
                expected = fresh.view(observe(state, seat))
                into = view_pb2.View()
                assert cached.view_of(state, seat, into=into) is into
                assert into == expected, (preset, seed, steps, seat)
            if state.is_terminal():
                break
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])
            steps += 1


@pytest.mark.parametrize("preset", ["el-dominito-2p", "cuban", "redeal"])
def test_a_seat_is_sent_each_event_once(preset: str) -> None:
    """Sent its events by unsent() (a batch, an incremental request) at random moments, or
    in a full view (view_of: MatchStarted, a full request), each seat keeps, as a client
    would, exactly its view's events at every step; nothing comes twice."""
    from capicua.wire import codec

    rng = random.Random(3)
    for seed, (rules, state) in enumerate(_new_matches(preset)):
        builder = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["p"] * rules.seats)
        kept = {
            seat: (state.hand, list(builder.view_of(state, seat).events))
            for seat in range(rules.seats)
        }
        while True:
            for seat in range(rules.seats):
                hand, events = kept[seat]
                if rng.random() < 0.1:  # a full view: the seat's list starts over from it
                    kept[seat] = (state.hand, list(builder.view_of(state, seat).events))
                    continue
                if hand != state.hand:  # the hand it held ended: its last events, then on
                    events = []
                kept[seat] = (state.hand, events + builder.unsent(state, state.hand, seat))
                fresh = observe(state, seat).events
                assert kept[seat][1] == [codec.event_to_proto(e) for e in fresh], (seed, seat)
            if state.is_terminal():
                break
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])


def _changing_field_by_field(obs: Observation) -> view_pb2.View:
    """The part of a view that changes between decisions, each field set from the
    observation on its own: what delta_of, from cached serialised pieces, must equal
    (presence included: an optional field set to 0 is there)."""
    from capicua.wire import codec

    v = view_pb2.View(
        hand=obs.hand,
        attempt=obs.attempt,
        phase=codec.PHASE.to_wire[obs.phase],
        offered=obs.offered,
        tiles=[str(t) for t in obs.tiles],
        chain=[
            view_pb2.PlacedTile(tile=str(p.tile), left=p.left, right=p.right, spinner=p.spinner)
            for p in obs.chain
        ],
        tile_counts=obs.tile_counts,
        stock_count=obs.stock_count,
        scores=obs.scores,
    )
    for name in ("seat", "to_act", "opener"):
        if getattr(obs, name) is not None:
            setattr(v, name, getattr(obs, name))
    if obs.ends is not None:
        v.ends.CopyFrom(view_pb2.Ends(left=obs.ends[0], right=obs.ends[1]))
    return v


@pytest.mark.parametrize("preset", ["block", "el-dominito-2p", "cuban", "redeal"])
def test_the_changing_part_of_a_view_is_built_as_from_scratch(preset: str) -> None:
    """delta_of (the chain grown from the last view's bytes, the legal actions from the
    set's cached entries) builds, for the seat to act at every step, the same message as
    the observation converted field by field, with every legal action's fields."""
    from capicua.wire import codec

    rng = random.Random(11)
    for rules, state in _new_matches(preset):
        builder = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["p"] * rules.seats)
        while not state.is_terminal():
            seat = state.current_seat
            assert seat is not None
            obs = observe(state, seat)
            delta = view_pb2.View()
            builder.delta_of(state, seat, into=delta)
            assert list(delta.chain) == [
                view_pb2.PlacedTile(tile=str(p.tile), left=p.left, right=p.right, spinner=p.spinner)
                for p in obs.chain
            ]
            assert list(delta.tiles) == [str(t) for t in obs.tiles]
            expected = _changing_field_by_field(obs)
            assert delta == expected
            assert delta.SerializeToString(deterministic=True) == expected.SerializeToString(
                deterministic=True
            )
            request = play_pb2.DecisionRequest.FromString(
                builder.legal_entries(state, state.legal_actions())
            )
            assert list(request.legal_actions) == wire.legal_actions(state.legal())
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])


@pytest.mark.parametrize("size", [0, 1, 127, 128, 300, 16_383, 16_384, 70_000])
def test_a_delimited_field_is_protobufs_own_encoding(size: int) -> None:
    """wire.delimited writes a length-delimited field as protobuf does: lengths of one,
    two and three varint bytes, and a field number past 15 (a two-byte tag)."""
    from capicua.v1 import rules_pb2

    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert wire.delimited(5, data) == play_pb2.EventBatch(padding=[data]).SerializeToString()
    bonus = rules_pb2.FinishBonus(name="x" * size)
    assert (
        wire.delimited(20, bonus.SerializeToString())
        == rules_pb2.Ruleset(finish_bonus=[bonus]).SerializeToString()
    )


class _Recorded:
    """Streams that keep what each principal was sent, serialised, as gRPC would send it."""

    def __init__(self, incremental: bool) -> None:
        self.sent: dict[str, list[bytes]] = {}
        self._incremental = incremental

    def send(self, principal: str, message: play_pb2.PlayResponse) -> None:
        self.send_data(principal, message.SerializeToString())

    def send_data(self, principal: str, data: bytes) -> None:
        self.sent.setdefault(principal, []).append(data)

    def connected(self, principal: str) -> bool:
        return True

    def ask_forced(self, principal: str) -> bool:
        return False

    def incremental(self, principal: str) -> bool:
        return self._incremental

    def finished(self, principal: str) -> None:
        pass


def _masked_events(state: MatchState, hand: int, seat: int | None) -> list[game_pb2.Event]:
    """``hand``'s events as ``seat`` may see them, by the engine's typed masking rule."""
    from capicua.engine.handlog import typed_event
    from capicua.engine.observation import event_for_seat
    from capicua.wire import codec

    table = state.game.table
    shown = [event_for_seat(typed_event(r, table), seat) for r in state.log.raw_events(hand)]
    return [codec.event_to_proto(e) for e in shown if e is not None]


class _Receiver:
    """What one match's seats and a spectator receive from a Fanout, read as a client
    would: each message's events kept per hand, and checked when its HandEnded comes."""

    def __init__(self, state: MatchState, streams: _Recorded, padded_texts: bool) -> None:
        from capicua.server.fanout import Watcher

        self.state = state
        self.streams = streams
        self.watcher = Watcher()
        self.padded_texts = padded_texts
        self.held: dict[int | None, list[game_pb2.Event]] = {}
        self.read: dict[int, int] = {}
        self.hands_checked = 0
        self.padded = 0

    def deliver(self) -> None:
        """Read what was sent since the last call."""
        for seat in range(self.state.game.ruleset.seats):
            sent = self.streams.sent.get(f"bots/b{seat}", [])
            for data in sent[self.read.get(seat, 0) :]:
                self._receive(seat, data)
            self.read[seat] = len(sent)
        while self.watcher.outbox._messages:
            self._receive(None, self.watcher.outbox._messages.popleft())

    def _receive(self, seat: int | None, data: bytes) -> None:
        from capicua.v1 import match_pb2
        from capicua.wire import codec

        message: play_pb2.PlayResponse | match_pb2.WatchMatchResponse
        if seat is None:
            message = match_pb2.WatchMatchResponse.FromString(data)
        else:
            message = play_pb2.PlayResponse.FromString(data)
        assert message.SerializeToString() == data  # protobuf's own bytes
        kind = message.WhichOneof("message")
        if kind == "match_started":  # (a spectator's first message is its view)
            self.held[seat] = list(message.match_started.view.events)  # type: ignore[union-attr]
        elif kind == "view":
            self.held[seat] = list(message.view.events)  # type: ignore[union-attr]
        elif kind == "events":
            batch = message.events
            assert batch.match == "matches/m1" and batch.HasField("seat") == (seat is not None)
            assert seat is None or batch.seat == seat
            self.held[seat].extend(batch.events)
            # a seat's own draws' texts padded (past double-nine only), none for spectators
            pad = [] if seat is None else wire.padding(wire.drawn_text_excess(batch.events, seat))
            assert list(batch.padding) == (pad if self.padded_texts else [])
            self.padded += len(batch.padding) > 0
        elif kind == "hand_ended":
            ended = message.hand_ended
            hand = ended.result.hand
            assert ended.HasField("seat") == (seat is not None)
            assert seat is None or ended.seat == seat
            assert ended.result == codec.hand_result_to_proto(self.state.log.results()[hand])
            assert self.held[seat] == _masked_events(self.state, hand, seat), (seat, hand)
            self.held[seat] = []
            self.hands_checked += 1


def _fan_out_a_match(
    rules: Ruleset, state: MatchState, incremental: bool, rng: random.Random
) -> _Receiver:
    """Play ``state`` at random through a Fanout (flushed after every move, as the runner
    does), its seats and a spectator receiving as they go."""
    from capicua.server.fanout import Fanout
    from capicua.server.seats import Seat
    from capicua.v1 import match_pb2
    from capicua.wire import codec

    streams = _Recorded(incremental)
    seats = [
        Seat(index=i, kind=match_pb2.SEAT_KIND_BOT, principal=f"bots/b{i}")
        for i in range(rules.seats)
    ]
    fanout = Fanout("matches/m1", seats, streams)
    receiver = _Receiver(state, streams, rules.max_pip >= 10)
    fanout.watchers.add(receiver.watcher)
    fanout.started(state, codec.ruleset_to_proto(rules), ["p"] * rules.seats)
    receiver.deliver()
    while not state.is_terminal():
        seat = state.current_seat
        assert seat is not None
        if incremental:  # the request's events, as the asker takes them
            assert fanout.views is not None
            receiver.held[seat].extend(fanout.views.unsent(state, state.hand, seat))
        legal = state.legal_actions()
        state.apply(legal[rng.randrange(len(legal))])
        fanout.flush(state)
        receiver.deliver()
    return receiver


@pytest.mark.parametrize("incremental", [False, True])
@pytest.mark.parametrize("preset", ["block", "el-dominito-2p", "redeal", "draw:max_pip=12"])
def test_event_batches_and_hand_ends_joined_from_pieces(preset: str, incremental: bool) -> None:
    """The EventBatch and HandEnded messages the fanout joins from serialised pieces are,
    byte for byte, what protobuf makes of the message they parse to; each seat's events of
    a hand (its MatchStarted view's, its batches', its incremental requests') are exactly
    the hand's events as the engine's masking rule shows them to it when HandEnded comes,
    and the same for a spectator; HandEnded names its seat and carries the hand's result.
    Draws (el-dominito-2p), KEEPs (redeal) and padded tile texts (double-twelve) included."""
    name, _, override = preset.partition(":")
    rng = random.Random(5)
    checked = padded = 0
    for seed, (rules, state) in enumerate(_new_matches(name)):
        if override:
            rules = rules.with_overrides([override])
            state = Game(rules).new_match(seed)
        receiver = _fan_out_a_match(rules, state, incremental, rng)
        checked += receiver.hands_checked
        padded += receiver.padded
    assert checked > 0
    assert padded > 0 or not override or incremental  # incremental: draws ride in requests


def _expected_request(
    rules: Ruleset, state: MatchState, seat: int, events: list[game_pb2.Event], full: bool
) -> play_pb2.DecisionRequest:
    """The DecisionRequest's view, events and legal actions, each field set on its own from
    the observation (timing and ids left to the caller)."""
    from capicua.wire import codec

    obs = observe(state, seat)
    if full:
        view = view_pb2.View(
            ruleset=codec.ruleset_to_proto(rules),
            players=["p"] * rules.seats,
            results=[codec.hand_result_to_proto(r) for r in obs.results],
            events=[codec.event_to_proto(e) for e in obs.events],
        )
        view.MergeFrom(_changing_field_by_field(obs))
    else:
        view = _changing_field_by_field(obs)
    expected = play_pb2.DecisionRequest(view=view, events=events, incremental=not full)
    expected.legal_actions.extend(wire.legal_actions(state.legal()))
    return expected


@pytest.mark.parametrize("incremental", [False, True])
@pytest.mark.parametrize("preset", ["block", "el-dominito-2p", "redeal", "draw:max_pip=12"])
def test_a_request_joined_from_pieces_is_the_message(preset: str, incremental: bool) -> None:
    """ViewBuilder.request, joined from serialised pieces, parses to the request built
    field by field (an incremental one is byte for byte what protobuf makes of it): the
    view (full, or its changing part), the events the seat was not sent yet (all of the
    hand's, for a full view), the legal actions, the timing, and the padding of its
    private parts, at every decision of random matches."""
    from capicua.wire import codec

    name, _, override = preset.partition(":")
    rng = random.Random(9)
    for seed, (rules, state) in enumerate(_new_matches(name)):
        if override:
            rules = rules.with_overrides([override])
            state = Game(rules).new_match(seed)
        builder = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["p"] * rules.seats)
        received: dict[tuple[int, int], int] = {}  # (seat, hand) -> events it was sent
        turn_id = 0
        while not state.is_terminal():
            seat = state.current_seat
            assert seat is not None
            turn_id += 1
            timing = (1_765_000_000_123_456_789 + turn_id, 1 + turn_id % 5000)
            codes = state.legal_actions()
            data = builder.request("matches/m1", state, seat, turn_id, codes, timing, incremental)
            message = play_pb2.PlayResponse.FromString(data)
            if incremental:  # protobuf's own bytes (a full view's pieces are not in order)
                assert message.SerializeToString() == data
            assert message.ByteSize() == len(data)  # (what the padding counts on)
            got = message.decision
            shown = _masked_events(state, state.hand, seat)
            new = shown[received.get((seat, state.hand), 0) :] if incremental else []
            received[(seat, state.hand)] = len(shown)
            expected = _expected_request(rules, state, seat, new, full=not incremental)
            expected.match, expected.seat, expected.turn_id = "matches/m1", seat, turn_id
            expected.deadline.FromNanoseconds(timing[0])
            expected.time_left_ms = timing[1]
            legal = play_pb2.DecisionRequest(legal_actions=expected.legal_actions)
            private = legal.ByteSize() + builder.private_texts(expected.view, seat, new)
            expected.padding.extend(wire.padding(private))
            assert got == expected, (seed, turn_id)
            state.apply(codes[rng.randrange(len(codes))])


def test_matches_on_one_set_share_converted_pieces() -> None:
    """A match's events and legal actions are converted once for every match on the same
    tile set, not once per match: a second match's first decisions convert nothing its
    set's earlier matches already did (the same event protos, the same entries)."""
    from capicua.wire import codec

    rules = load_preset("block")
    game = Game(rules)
    first, second = game.new_match(21), game.new_match(21)  # the same deal, twice
    one = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["a", "b", "c", "d"])
    other = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["a", "b", "c", "d"])
    for state in (first, second):
        state.apply(state.legal_actions()[0])
    events = one.unsent(first, 0, 0)
    assert events and all(a is b for a, b in zip(events, other.unsent(second, 0, 0), strict=True))
    codes = first.legal_actions()
    assert one.legal_entries(first, codes) == other.legal_entries(second, codes)


def test_every_wire_cpu_level_is_a_built_in_bot_and_back() -> None:
    """The CPU levels the server and ``capicua match`` read from the wire enum are the
    built-in bots' levels, weakest first (the server plays them by name)."""
    import subprocess
    import sys

    from capicua.bots import CPU_LEVELS
    from capicua.server.seats import LEVEL_NAMES
    from capicua.v1 import match_pb2
    from capicua.wire.codec import CPU_LEVELS as WIRE_LEVELS

    assert tuple(WIRE_LEVELS) == CPU_LEVELS
    assert LEVEL_NAMES[match_pb2.CPU_LEVEL_UNSPECIFIED] == CPU_LEVELS[0]
    assert {LEVEL_NAMES[v] for v in WIRE_LEVELS.values()} == set(CPU_LEVELS)
    # ... and the server's process does not load the bots to know their names (its CPU
    # workers do): a fresh interpreter importing the app leaves capicua.bots unloaded.
    probe = (
        "import sys, capicua.server.app, capicua.cli.match; print('capicua.bots' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_decision_seeds_are_reproducible_and_distinct() -> None:
    assert cpu.decision_seed(5, 1) == cpu.decision_seed(5, 1)
    assert len({cpu.decision_seed(5, t) for t in range(100)}) == 100
    assert cpu.decision_seed(5, 1) != cpu.decision_seed(6, 1)


async def test_cpu_decisions_run_in_other_processes() -> None:
    pool = cpu.CpuPool(1)
    try:
        loop = asyncio.get_running_loop()
        pid = await loop.run_in_executor(pool._pool, os.getpid)
        assert pid != os.getpid()
        state = Game(load_preset("block")).new_match(2)
        seat = state.current_seat
        assert seat is not None
        legal = state.legal()
        index = await pool.choose("easy", 1, observe(state, seat), legal)
        assert 0 <= index < len(legal)
        # no stand-in for a bot the workers do not know: the worker's error comes back
        with pytest.raises(UnknownBotError, match="no-such-level") as e:
            await pool.choose("no-such-level", 1, observe(state, seat), legal)
        assert "Traceback" in str(e.value.__cause__), "the worker's traceback comes along"
    finally:
        pool.shutdown()


class _Context:
    def __init__(self, *metadata: tuple[str, str]) -> None:
        self.metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata


def test_bearer_tokens_are_kept_as_digests() -> None:
    tokens = Tokens("admin")
    from capicua.server.auth import Principal

    token = tokens.issue(Principal.bot("b"))
    assert token not in repr(tokens.__dict__) and digest(token) in tokens._by_digest
    assert tokens.principal(_Context(("authorization", f"Bearer {token}"))) == Principal.bot("b")
    admin = tokens.principal(_Context(("authorization", "bearer admin")))
    assert admin is not None and admin.kind.value == "admin"
    assert tokens.principal(_Context(), required=False) is None
    for bad in ("Basic abc", "Bearer", "Bearer nope"):
        with pytest.raises(ApiError) as e:
            tokens.principal(_Context(("authorization", bad)))
        assert e.value.code.name == "UNAUTHENTICATED"
    assert bearer_token(_Context(("x-other", "1"))) is None


async def test_the_registry_indexes_unfinished_matches_by_owner(tmp_path: Path) -> None:
    """active(), count_of() and of_principal() (CreateMatch's limits, a new Play stream's
    resumption) agree with a scan of every match, through create, join, start and finish."""
    from capicua.server.matches import FINISHED, Registry, Services
    from capicua.server.seats import Seat
    from capicua.server.store import Store
    from capicua.v1 import match_pb2

    class Streams:
        def send(self, principal: str, message: play_pb2.PlayResponse) -> None:
            pass

        def send_data(self, principal: str, data: bytes) -> None:
            pass

        def connected(self, principal: str) -> bool:
            return True

        def ask_forced(self, principal: str) -> bool:
            return False

        def incremental(self, principal: str) -> bool:
            return False

        def finished(self, principal: str) -> None:
            pass

    store = Store(tmp_path)
    registry = Registry(Services(Streams(), None, store), keep_finished=2)  # type: ignore[arg-type]
    rules = load_preset("block")
    principals = ["bots/a", "bots/b", "matches/x/seats/0"]

    def check() -> None:
        live = [m for m in registry.matches.values() if m.status != FINISHED]
        assert registry.active() == live and registry.active_count() == len(live)
        for p in {*principals, *(s.principal or "" for m in live for s in m.seats)}:
            expected = [m for m in live if any(s.owner == p for s in m.seats)]
            assert registry.of_principal(p) == expected and registry.count_of(p) == len(expected)

    def seats(*bots: str) -> list[Seat]:
        out = [Seat(index=i, kind=match_pb2.SEAT_KIND_OPEN) for i in range(4)]
        for i, bot in enumerate(bots):
            out[i] = Seat(index=i, kind=match_pb2.SEAT_KIND_BOT, bot_id=bot)
        return out

    settings = match_pb2.MatchSettings(turn_timer_ms=60_000)
    made = [
        registry.create(rules, seats(*bots), settings, None) for bots in ("ab", "aaab", "", "b")
    ]
    check()
    made[2].join("bots/b", bot_id="b", player="b", seat=None)  # an open seat
    made[2].join(None, bot_id="", player="guest", seat=3)  # a one-seat client
    made[0].join("bots/a", bot_id="a", player="a", seat=None)  # its reserved seat
    check()
    made[1].start()  # waits for a decision from bots/a or bots/b
    check()
    await made[3].cancel("not needed")  # never started
    check()
    await made[1].cancel("stopped")  # running: its runner records it and ends it
    check()
    for m in made:
        if m.status != FINISHED:
            await m.cancel("end")
    check()
    assert registry.active() == [] and registry.count_of("bots/a") == 0
    assert len(registry.matches) == 2, "the finished matches beyond keep_finished are dropped"
    store.close()
