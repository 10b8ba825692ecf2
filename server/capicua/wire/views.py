"""The live protocol's messages built from engine values, and read back.

Replay-level values (rulesets, events, hand results, outcomes) go through
:mod:`capicua.wire.codec`; this module adds what only the live protocol has: a seat's
:class:`~capicua.v1.view_pb2.View` built from :func:`~capicua.engine.observation.observe`,
and legal actions with ids; and the reverse, for clients: a ``View`` as the engine's
:class:`~capicua.engine.observation.Observation` (kept per seat by :class:`SeatView`), a
``LegalAction`` as an :class:`~capicua.engine.actions.Action`, and an action back to its id.

What a seat may see is decided by the engine's observation module alone (which also hides
who is being offered a redeal); event batches, which can span the end of a hand, mask
their events one by one with its :func:`~capicua.engine.observation.raw_event_for_seat`.
Each seat's masked events are kept with how many it was sent, so that a seat is sent each
event once: in a batch, a view or an incremental request (CAPABILITY_INCREMENTAL_DECISIONS).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar, cast

from google.protobuf import json_format

from capicua.common.pickling import by_constructor
from capicua.engine.actions import Action, ActionKind, InvalidActionError
from capicua.engine.game import MatchState, Phase, RawEvent
from capicua.engine.handlog import typed_event
from capicua.engine.observation import (
    Observation,
    PlacedTile,
    chain_of,
    observe,
    raw_event_for_seat,
    visible_turn,
)
from capicua.engine.records import Event, HandResult, Outcome
from capicua.engine.rules import Ruleset
from capicua.engine.tiles import Tile, TileError
from capicua.v1 import game_pb2, play_pb2, rules_pb2, view_pb2
from capicua.wire import codec
from capicua.wire.codec import WireError

# the engine -> wire maps of codec's enum codecs, looked up directly on the hot path
_PHASE = codec.PHASE.to_wire
# The fields messages are joined into from serialised pieces (:func:`delimited`)
_VIEW_EVENTS = view_pb2.View.EVENTS_FIELD_NUMBER
_REQUEST_VIEW = play_pb2.DecisionRequest.VIEW_FIELD_NUMBER
_REQUEST_EVENTS = play_pb2.DecisionRequest.EVENTS_FIELD_NUMBER
_BATCH_EVENTS = play_pb2.EventBatch.EVENTS_FIELD_NUMBER
_PLAY_DECISION = play_pb2.PlayResponse.DECISION_FIELD_NUMBER
_KIND = codec.ACTION_KIND.to_wire
_END = codec.END.to_wire

#: What only one seat may see comes in parts of varying size (its legal actions; in sets
#: past double-nine, the texts of its tiles and draws), and TLS hides a message's bytes but
#: not its length. So a message carrying such parts gets a ``padding`` field of zero bytes
#: that rounds them (with the field itself) up to a multiple of this many bytes: its length
#: then says only which bucket they fell in (docs/security.md, "Sizes on the wire").
PAD_BUCKET = 256
_PIECE = 129  # the largest padding piece with a one-byte length: tag, 127, 127 zero bytes
_K = TypeVar("_K")
_V = TypeVar("_V")
_ONE_BYTE = [bytes((n,)) for n in range(0x80)]  # the varints of one byte
_TILE_TEXT = 3  # the text of a tile below double-ten, "3-6"; "9-10" and "11-12" are longer


def _varint_len(n: int) -> int:
    return 1 if n < 0x80 else 2 if n < 0x4000 else 3 if n < 0x200000 else 4


def _varint(n: int) -> bytes:
    """``n`` (not negative) as a protobuf varint: seven bits a byte, low ones first."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def delimited(field: int, data: bytes) -> bytes:
    """Field number ``field`` holding ``data`` (a serialised message, or bytes) as protobuf
    writes it: the tag (wire type 2), the length as a varint, the bytes. Joined with a
    message's other serialised fields it sets that field, so a message is made of cached
    serialised pieces without parsing them again (tests/test_server_wire.py holds the
    result to the message protobuf serialises)."""
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def padding(private: int) -> list[bytes]:
    """The ``padding`` of a message whose private parts take ``private`` bytes: pieces of
    zero bytes that, with their tags and lengths, make them the fewest whole
    :data:`PAD_BUCKET` s with room for at least one piece (none when there are no private
    parts). A message's length is then its public parts' plus ``ceil((private + 2) /
    PAD_BUCKET)`` buckets. Several pieces, because one cannot take every size: a piece is a
    one-byte tag, its length (one byte up to 127, two past it) and its bytes."""
    if private <= 0:
        return []
    need = -(-(private + 2) // PAD_BUCKET) * PAD_BUCKET - private  # 2 .. PAD_BUCKET + 1
    pieces = []
    while need > _PIECE:
        take = _PIECE if need - _PIECE != 1 else _PIECE - 1  # never leave a single byte
        pieces.append(bytes(take - 2))
        need -= take
    pieces.append(bytes(need - 2))
    return pieces


def _text_excess(texts: Sequence[str]) -> int:
    """The bytes by which tile texts exceed a low tile's: which tiles they are, in a set
    past double-nine."""
    return sum(len(t) for t in texts) - _TILE_TEXT * len(texts)


def drawn_text_excess(events: Sequence[game_pb2.Event], seat: int) -> int:
    """:func:`_text_excess` of the tiles ``seat`` itself drew in ``events`` (the others'
    draws show no tile)."""
    return _text_excess(
        [e.draw.tile for e in events if e.HasField("draw") and e.draw.seat == seat and e.draw.tile]
    )


def legal_actions(actions: Sequence[Action]) -> list[view_pb2.LegalAction]:
    """The legal actions with their ids: the position in the engine's canonical order."""
    out = []
    for i, a in enumerate(actions):
        text, kind, tile, end = _legal_fields(a)
        out.append(view_pb2.LegalAction(id=i, text=text, kind=kind, tile=tile, end=end))
    return out


_LegalFields = tuple[str, "view_pb2.ActionKind.ValueType", str, "game_pb2.End.ValueType"]


def _legal_fields(a: Action) -> _LegalFields:
    """A LegalAction's fields but its id (tile "" and END_UNSPECIFIED, i.e. unset, for an
    action that is no play)."""
    if a.kind is not ActionKind.PLAY:
        return str(a), _KIND[a.kind], "", game_pb2.END_UNSPECIFIED
    assert a.tile is not None and a.end is not None
    return str(a), _KIND[a.kind], str(a.tile), _END[a.end]


#: Entries one of the caches below holds before it starts over: far more than a set's
#: distinct pieces (double-nine: a few thousand), a bound only against the unforeseen.
PIECES_KEPT = 50_000


class _Pieces:
    """Pieces of the messages of matches on one tile set, each converted once for every
    match on that set (a ViewBuilder is made per match, and filling its own caches anew
    cost each match's first decisions a conversion per piece). Each piece depends only on
    its key and the set's tiles, and is copied into the messages that carry it, never
    changed."""

    __slots__ = ("events", "legal")

    def __init__(self) -> None:
        # a (masked) raw event -> its piece: a set has a few thousand different ones
        self.events: dict[RawEvent, _EventPiece] = {}
        # (action code, id) -> its LegalAction, serialised as a DecisionRequest's entry
        self.legal: dict[tuple[int, int], bytes] = {}


_PIECES: dict[int, _Pieces] = {}  # the set's highest pip -> its pieces
# A placed tile as one serialised entry of a View's ``chain``: the same in every set.
_PLACED: dict[PlacedTile, bytes] = {}
# A View holding one field of a view's changing part, serialised, keyed by the field's name
# and value (its tile, for ``tiles``): a decision's view is such pieces joined and parsed
# into its message at once, not a dozen fields set on it one by one (docs/benchmarks.md,
# "where the answer-to-request time goes").
_FIELDS: dict[tuple[str, object], bytes] = {}


def _pieces(state: MatchState) -> _Pieces:
    """The shared pieces of ``state``'s tile set."""
    max_pip = state.game.table.max_pip
    pieces = _PIECES.get(max_pip)
    if pieces is None:
        pieces = _PIECES[max_pip] = _Pieces()
    return pieces


def _kept(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    """Add ``value`` to ``cache`` under ``key`` (emptied first once it holds
    :data:`PIECES_KEPT` entries); returns ``value``."""
    if len(cache) >= PIECES_KEPT:
        cache.clear()
    cache[key] = value
    return value


class _EventPiece(NamedTuple):
    """An event as each message that carries it holds it."""

    pb: game_pb2.Event
    in_view: bytes  # one serialised entry of a View's ``events``
    in_request: bytes  # ... of a DecisionRequest's
    in_batch: bytes  # ... of an EventBatch's


def _event_piece(pb: game_pb2.Event) -> _EventPiece:
    data = pb.SerializeToString()
    return _EventPiece(
        pb, delimited(_VIEW_EVENTS, data), delimited(_REQUEST_EVENTS, data),
        delimited(_BATCH_EVENTS, data),
    )  # fmt: skip


class _Seen:
    """The current hand's events as one seat (or the spectators) may see them."""

    __slots__ = ("done", "shown", "sent")

    def __init__(self) -> None:
        self.done = 0  # raw events of the hand masked so far
        self.shown: list[_EventPiece] = []  # the ones it may see
        self.sent = 0  # how many of ``shown`` it was sent (a batch, a view, a request)


class ViewBuilder:
    """Builds views of one match; caches what never changes (ruleset, finished hands), the
    current hand's events, and what each seat was sent of them.

    A view carries the whole hand's events, so converting them anew for every decision
    cost O(events) per view (a tenth of the server's time under load). Instead each seat's
    masked list of the current hand's events only grows, each masked raw event is converted
    once for every match on its tile set (:class:`_Pieces`), and the same protos go out in
    the event batches, the views and the incremental requests (:meth:`unsent`): an event
    is masked once per seat.
    """

    def __init__(self, ruleset: rules_pb2.Ruleset, players: Sequence[str]) -> None:
        self.ruleset = ruleset
        self.players = list(players)
        self._results: list[game_pb2.HandResult] = []
        # What every view of the match shares (ruleset, players, finished hands), merged
        # into each view at once: cheaper than copying them field by field.
        self._base = b""
        self._base_results = -1  # how many results _base holds (-1: not built)
        # The current deal's chain (hand, attempt, its length, its first tile, and a View
        # holding only the chain, serialised): within a deal it only grows, one tile at
        # either end, and a repeated field's encoding is its entries' one after the other,
        # so each view adds at most the new tile's bytes to the last ones; a view takes
        # the chain by parsing them, several times cheaper than building its messages.
        self._chain: tuple[int, int, int, PlacedTile | None, bytes] = (-1, -1, 0, None, b"")
        # tile texts of more than three characters (private_texts): sets past double-nine
        self.long_texts = ruleset.max_pip >= 10
        self._hand = -1  # the hand whose events are masked below
        self._seen: dict[int | None, _Seen] = {}  # seat (None: spectators) -> its part

    def results(self, results: Sequence[HandResult]) -> list[game_pb2.HandResult]:
        """Protobuf results of the finished hands (converted once each)."""
        cache = self._results
        for r in results[len(cache) :]:
            cache.append(codec.hand_result_to_proto(r))
        return cache[: len(results)]

    def _shared(self, results: Sequence[HandResult]) -> bytes:
        """A View with only the ruleset, the players and the results of finished hands,
        serialised."""
        if self._base_results != len(results):
            base = view_pb2.View(players=self.players, results=self.results(results))
            base.ruleset.CopyFrom(self.ruleset)
            self._base, self._base_results = base.SerializeToString(), len(results)
        return self._base

    def _placed_entry(self, placed: PlacedTile) -> bytes:
        """``placed`` as one serialised entry of a View's ``chain``."""
        entry = _PLACED.get(placed)
        if entry is None:
            pb = view_pb2.PlacedTile(
                tile=str(placed.tile), left=placed.left, right=placed.right, spinner=placed.spinner
            )
            entry = _kept(_PLACED, placed, view_pb2.View(chain=[pb]).SerializeToString())
        return entry

    def _chain_bytes(self, hand: int, attempt: int, chain: Sequence[PlacedTile]) -> bytes:
        """A View holding only the deal's ``chain``, serialised; the last one asked for when
        it is the same deal's chain, or that and one more tile's entry (the new one on the
        left end unless the left end's tile is the same)."""
        last_hand, last_attempt, length, first, data = self._chain
        same_deal = last_hand == hand and last_attempt == attempt
        if same_deal and length == len(chain):
            return data
        if same_deal and length + 1 == len(chain):
            if length and chain[0] == first:
                data += self._placed_entry(chain[-1])
            else:
                data = self._placed_entry(chain[0]) + data
        else:
            data = b"".join([self._placed_entry(p) for p in chain])
        self._chain = hand, attempt, len(chain), chain[0] if chain else None, data
        return data

    def legal_entries(self, state: MatchState, codes: Sequence[int]) -> bytes:
        """The LegalActions of the engine's action ``codes``, id = position, serialised as
        a DecisionRequest's ``legal_actions`` (to merge into one): the same messages as
        :func:`legal_actions` of ``state.legal()``, without building the typed actions or
        a message per action each decision. Their length is what they take in the
        request, for its :func:`padding`."""
        known = _pieces(state).legal
        entries = []
        for i, code in enumerate(codes):
            entry = known.get((code, i))
            if entry is None:
                text, kind, tile, end = _legal_fields(Action.from_code(code, state.game.table))
                legal = view_pb2.LegalAction(id=i, text=text, kind=kind, tile=tile, end=end)
                entry = play_pb2.DecisionRequest(legal_actions=[legal]).SerializeToString()
                _kept(known, (code, i), entry)
            entries.append(entry)
        return b"".join(entries)

    def private_texts(
        self, view: view_pb2.View, seat: int, events: Sequence[game_pb2.Event] = ()
    ) -> int:
        """The bytes by which ``seat``'s own tile texts in ``view`` (its tiles, its draws)
        and ``events`` exceed a low tile's: always 0 up to double-nine, where every tile's
        text has three characters."""
        if not self.long_texts:
            return 0
        excess = _text_excess(view.tiles) + drawn_text_excess(view.events, seat)
        if excess:  # the view's length, in its prefix, can take a byte more for them
            size = view.ByteSize()
            excess += _varint_len(size) - _varint_len(size - excess)
        return excess + drawn_text_excess(events, seat)

    def _seen_by(self, state: MatchState, hand: int, seat: int | None) -> _Seen:
        """``hand``'s events as ``seat`` may see them (the engine's masking rule on raw
        events, :func:`raw_event_for_seat`, the twin of the typed one :func:`observe`
        applies). Only one hand is kept: asking for another one starts it over."""
        if hand != self._hand:
            self._hand = hand
            self._seen.clear()
        seen = self._seen.get(seat)
        if seen is None:
            seen = self._seen[seat] = _Seen()
        raw = state.log.raw_events(hand)  # append-only within a hand
        if seen.done < len(raw):
            pieces = _pieces(state).events
            shown = seen.shown
            table = state.game.table
            for r in raw[seen.done :]:
                masked = raw_event_for_seat(r, seat)
                if masked is not None:
                    piece = pieces.get(masked)
                    if piece is None:
                        pb = codec.event_to_proto(typed_event(masked, table))
                        piece = _kept(pieces, masked, _event_piece(pb))
                    shown.append(piece)
            seen.done = len(raw)
        return seen

    def unsent(self, state: MatchState, hand: int, seat: int | None) -> list[game_pb2.Event]:
        """The events of ``hand`` that ``seat`` may see and was not sent yet, now counted
        as sent."""
        return [p.pb for p in self._unsent(state, hand, seat)]

    def _unsent(self, state: MatchState, hand: int, seat: int | None) -> list[_EventPiece]:
        """:meth:`unsent`, as pieces."""
        seen = self._seen_by(state, hand, seat)
        start = seen.sent
        seen.sent = len(seen.shown)
        return seen.shown[start:]

    def event_batch(self, match: str, state: MatchState, hand: int, seat: int | None) -> bytes:
        """The EventBatch, serialised, of the events of ``hand`` that ``seat`` (None: the
        spectators) may see and was not sent yet, now counted as sent; empty if there are
        none. Joined from each event's cached bytes (a hand's end sends one to every seat
        at once, on the next hand's first round trip). A seat's own draws' texts get
        :func:`padding`; the spectators' batch shows no drawn tile."""
        pieces = self._unsent(state, hand, seat)
        if not pieces:
            return b""
        head = play_pb2.EventBatch(match=match, seat=seat, hand=hand).SerializeToString()
        parts = [head, *[p.in_batch for p in pieces]]
        if seat is not None and self.long_texts:
            pad = padding(drawn_text_excess([p.pb for p in pieces], seat))
            parts.append(play_pb2.EventBatch(padding=pad).SerializeToString())
        return b"".join(parts)

    def view_of(
        self, state: MatchState, seat: int | None, into: view_pb2.View | None = None
    ) -> view_pb2.View:
        """``seat``'s view of ``state`` now: the same message as
        ``view(observe(state, seat))``, with the hand's events from the caches, which count
        as sent to it (the view carries them). ``into``: an empty View to fill."""
        v = view_pb2.View() if into is None else into
        v.MergeFromString(self._full_view(state, seat))
        return v

    def _full_view(self, state: MatchState, seat: int | None) -> bytes:
        """:meth:`view_of`, serialised: the hand's events from the caches (each seat's
        masked once), which count as sent to it."""
        seen = self._seen_by(state, state.hand, seat)
        seen.sent = len(seen.shown)
        view = self._view_bytes(observe(state, seat, events=False))  # events: the caches'
        return b"".join([view, *[p.in_view for p in seen.shown]])

    def request(
        self,
        match: str,
        state: MatchState,
        seat: int,
        turn_id: int,
        codes: Sequence[int],
        timing: tuple[int, int],
        incremental: bool,
    ) -> bytes:
        """The DecisionRequest of ``turn_id`` to ``seat``, as a serialised PlayResponse:
        its view, the legal actions of the engine's ``codes`` with their ids, ``timing``
        (the deadline in ns since the epoch, the ms left), and the padding that keeps
        its length from telling its private parts. ``incremental``
        (CAPABILITY_INCREMENTAL_DECISIONS): the view's changing part and the events the
        seat was not sent yet; otherwise its full view. Either way the events go as sent.
        Joined from cached serialised pieces without building the message (this is on
        every decision's round trip): an incremental one in protobuf's field order, the
        bytes protobuf makes of the message (tests/test_server_wire.py holds both forms
        to the request built field by field)."""
        if incremental:
            view, sent = self._delta_bytes(state, seat), self._unsent(state, state.hand, seat)
        else:  # (the view carries the hand's events)
            view, sent = self._full_view(state, seat), []
        legal = self.legal_entries(state, codes)
        private = len(legal)
        if self.long_texts:  # (sets past double-nine only: parsed to count its texts)
            shown = [p.pb for p in sent]
            private += self.private_texts(view_pb2.View.FromString(view), seat, shown)
        deadline_ns, time_left_ms = timing
        head = play_pb2.DecisionRequest(match=match, seat=seat, turn_id=turn_id)
        middle = play_pb2.DecisionRequest()
        middle.deadline.seconds, middle.deadline.nanos = divmod(deadline_ns, 1_000_000_000)
        tail = play_pb2.DecisionRequest(
            incremental=incremental, time_left_ms=time_left_ms, padding=padding(private)
        )
        request = b"".join([
            head.SerializeToString(), delimited(_REQUEST_VIEW, view), legal,
            middle.SerializeToString(), *[p.in_request for p in sent], tail.SerializeToString(),
        ])  # fmt: skip
        return delimited(_PLAY_DECISION, request)

    def delta_of(self, state: MatchState, seat: int, into: view_pb2.View) -> None:
        """Fill ``into`` with the part of ``seat``'s view that changes between decisions:
        the view without ruleset, players, results and events (an incremental request's).
        Read from the state as :func:`observe` reads it (tests/test_server_wire.py holds
        the two to the same message), without building the whole observation: an
        incremental request (:meth:`request`) joins its bytes on every decision."""
        into.MergeFromString(self._delta_bytes(state, seat))

    def _delta_bytes(self, state: MatchState, seat: int) -> bytes:
        """:meth:`delta_of`, serialised."""
        phase, to_act = visible_turn(state, seat)
        return self._changing(
            seat, state.hand, state.attempt, phase, to_act, state.offered, state.opener,
            state.hand_of(seat), chain_of(state), state.tile_counts(), state.stock_count,
            state.scores, state.ends, state.outcome,
        )  # fmt: skip

    def view(self, obs: Observation, into: view_pb2.View | None = None) -> view_pb2.View:
        """The View of an observation (``into``: an empty View to fill)."""
        v = view_pb2.View() if into is None else into
        v.MergeFromString(self._view_bytes(obs))
        v.events.extend([codec.event_to_proto(e) for e in obs.events])
        return v

    def _view_bytes(self, obs: Observation) -> bytes:
        """The View of ``obs`` but for its events, serialised."""
        changing = self._changing(
            obs.seat, obs.hand, obs.attempt, obs.phase, obs.to_act, obs.offered, obs.opener,
            obs.tiles, obs.chain, obs.tile_counts, obs.stock_count, obs.scores, obs.ends,
            obs.outcome,
        )  # fmt: skip
        return changing + self._shared(obs.results)  # ruleset, players, results

    def _changing(
        self,
        seat: int | None,
        hand: int,
        attempt: int,
        phase: Phase,
        to_act: int | None,
        offered: int,
        opener: int | None,
        tiles: Sequence[Tile],
        chain: Sequence[PlacedTile],
        tile_counts: Sequence[int],
        stock_count: int,
        scores: Sequence[int],
        ends: tuple[int, int] | None,
        outcome: Outcome | None,
    ) -> bytes:
        """The fields of a View that change from decision to decision, serialised: joined
        from cached serialised pieces (the outcome, which a view has only once the match
        is over, serialised then)."""
        # in the fields' order (protobuf's own for these fields: an incremental request
        # is then the bytes protobuf would make of it)
        parts = [] if seat is None else [_field("seat", seat)]
        parts += [_field("hand", hand), _field("attempt", attempt), _field("phase", _PHASE[phase])]
        if to_act is not None:
            parts.append(_field("to_act", to_act))
        parts.append(_field("offered", offered))
        if opener is not None:
            parts.append(_field("opener", opener))
        parts += [
            b"".join([_field("tiles", t) for t in tiles]),
            self._chain_bytes(hand, attempt, chain),
            _field("tile_counts", tuple(tile_counts)),
            _field("stock_count", stock_count),
            _field("scores", tuple(scores)),
        ]
        if outcome is not None:
            parts.append(view_pb2.View(outcome=codec.outcome_to_proto(outcome)).SerializeToString())
        if ends is not None:
            parts.append(_field("ends", ends))
        return b"".join(parts)


def _field(name: str, value: object) -> bytes:
    """A View holding only its field ``name`` set to ``value``, serialised (a tile's text
    for ``tiles``, a tuple for the other repeated fields, ``(left, right)`` for ``ends``);
    cached: a match repeats the same few values."""
    key = (name, value)
    data = _FIELDS.get(key)
    if data is None:
        v = view_pb2.View()
        if name == "tiles":
            v.tiles.append(str(value))
        elif name == "ends":
            v.ends.left, v.ends.right = cast(tuple[int, int], value)
        elif isinstance(value, tuple):
            getattr(v, name).extend(value)
        else:
            setattr(v, name, value)
        data = _kept(_FIELDS, key, v.SerializeToString())
    return data


# -- the reverse, for clients: a View and its LegalActions back to engine values ----------
#
# A bot written with the SDK sees exactly the values an in-process bot sees (``capicua
# play``), so the same bot class plays in both. A malformed message raises
# :class:`~capicua.wire.codec.WireError` (or :class:`~capicua.engine.rules.RulesError` for
# a ruleset) naming the field.

# the wire -> engine maps of codec's enum codecs (a missing number is the caller's error)
_PHASE_FROM = codec.PHASE.from_wire
_KIND_FROM = codec.ACTION_KIND.from_wire
_END_FROM = codec.END.from_wire

# A match sends the same ruleset in every view: validate it once (keyed by its bytes).
_RULESETS: OrderedDict[bytes, Ruleset] = OrderedDict()
_RULESET_CACHE = 64


def ruleset_from_view(pb: rules_pb2.Ruleset) -> Ruleset:
    """The engine ruleset of a view's ``ruleset`` (cached: a match repeats it every turn)."""
    key = pb.SerializeToString(deterministic=True)
    found = _RULESETS.get(key)
    if found is not None:
        _RULESETS.move_to_end(key)
        return found
    rules = codec.ruleset_from_proto(pb)
    _RULESETS[key] = rules
    while len(_RULESETS) > _RULESET_CACHE:
        _RULESETS.popitem(last=False)
    return rules


def _tile(text: str, field: str) -> Tile:
    try:
        return Tile.parse(text)
    except TileError as e:
        raise WireError(field, str(e)) from None


@dataclass(frozen=True)
class Known:
    """What a client already holds of a seat's view, as engine values: an observation is
    built from these and the changing part of a view, instead of converting it whole."""

    ruleset: Ruleset
    results: tuple[HandResult, ...]
    events: tuple[Event, ...]

    @classmethod
    def of(cls, view: view_pb2.View) -> Known:
        """A full view's ruleset, results and events, converted (a malformed one raises
        :class:`WireError` naming the field)."""
        with codec.within("ruleset"):
            ruleset = ruleset_from_view(view.ruleset)
        return cls(
            ruleset,
            codec.convert_each(view.results, "results", codec.hand_result_from_proto),
            codec.convert_each(view.events, "events", codec.event_from_proto),
        )


class SeatView:
    """One seat's view as a client keeps it between messages (the Play stream's
    CAPABILITY_INCREMENTAL_DECISIONS): from a full view (MatchStarted, or a request in the
    full form) on, the events of EventBatch and of incremental requests and the results of
    HandEnded are added, each converted once. :meth:`complete` turns an incremental
    request's view into the full one and gives the engine values it holds."""

    def __init__(self, view: view_pb2.View) -> None:
        shared = self.shared = view_pb2.View(players=view.players, results=view.results)
        shared.ruleset.CopyFrom(view.ruleset)  # what an incremental view leaves out
        known = Known.of(view)
        self.ruleset = known.ruleset
        self.results = list(known.results)
        self.hand = view.hand
        self.hand_events: list[game_pb2.Event] = list(view.events)
        self.events = list(known.events)

    def add_events(self, hand: int, events: Sequence[game_pb2.Event]) -> tuple[Event, ...]:
        """Add events of ``hand`` (a later hand starts the list over); returns them as
        engine values."""
        if hand != self.hand:
            self.hand, self.hand_events, self.events = hand, [], []
        new = codec.convert_each(events, "events", codec.event_from_proto)
        self.hand_events.extend(events)
        self.events.extend(new)
        return new

    def add_result(self, result: game_pb2.HandResult) -> None:
        """A hand ended (HandEnded): its result, once."""
        if result.hand == len(self.results):
            with codec.within("result"):
                self.results.append(codec.hand_result_from_proto(result))
            self.shared.results.append(result)

    def complete(self, request: play_pb2.DecisionRequest) -> tuple[Known, tuple[Event, ...]]:
        """Fill an incremental request's view in place with what it leaves out (ruleset,
        players, results, the hand's events), after adding its ``events``; returns what is
        known as engine values, and the request's new events."""
        view = request.view
        new = self.add_events(view.hand, request.events)
        view.MergeFrom(self.shared)
        view.events.extend(self.hand_events)
        return self.known(), new

    def known(self) -> Known:
        """What is held now, as engine values."""
        return Known(self.ruleset, tuple(self.results), tuple(self.events))


def observation_from_view(view: view_pb2.View, known: Known | None = None) -> Observation:
    """The engine observation a seat's ``View`` stands for (the exact reverse of the
    server's view builder: ``observation_from_view(view(observe(state, seat)))`` equals
    ``observe(state, seat)``). ``known``: its ruleset, results and events already
    converted (:class:`SeatView`), so that only the rest is."""
    phase = _PHASE_FROM.get(view.phase)
    if phase is None:
        raise WireError("phase", f"{view.phase} is not PHASE_REDEAL, PHASE_PLAY or PHASE_OVER")
    if known is None:
        known = Known.of(view)
    outcome = None
    if view.HasField("outcome"):
        with codec.within("outcome"):
            outcome = codec.outcome_from_proto(view.outcome)
    return Observation(
        seat=view.seat if view.HasField("seat") else None,
        ruleset=known.ruleset,
        hand=view.hand,
        attempt=view.attempt,
        phase=phase,
        to_act=view.to_act if view.HasField("to_act") else None,
        offered=view.offered,
        opener=view.opener if view.HasField("opener") else None,
        tiles=tuple(_tile(t, f"tiles[{i}]") for i, t in enumerate(view.tiles)),
        chain=tuple(
            PlacedTile(_tile(p.tile, f"chain[{i}].tile"), p.left, p.right, p.spinner)
            for i, p in enumerate(view.chain)
        ),
        ends=(view.ends.left, view.ends.right) if view.HasField("ends") else None,
        tile_counts=tuple(view.tile_counts),
        stock_count=view.stock_count,
        events=known.events,
        scores=tuple(view.scores),
        results=known.results,
        outcome=outcome,
    )


def action_from_legal(pb: view_pb2.LegalAction) -> Action:
    """The engine action of one legal action (raises :class:`WireError` if malformed)."""
    kind = _KIND_FROM.get(pb.kind)
    if kind is None:
        raise WireError("kind", f"{pb.kind} is not a known ActionKind")
    if kind is not ActionKind.PLAY:
        return Action(kind)
    end = _END_FROM.get(pb.end)
    if end is None:
        raise WireError("end", f"{pb.end} is not END_LEFT or END_RIGHT")
    return Action.play(_tile(pb.tile, "tile"), end)


def actions_from_legal(legal: Sequence[view_pb2.LegalAction]) -> list[Action]:
    """The engine actions of a request's legal actions, in id order (ids are positions)."""
    out = []
    for i, pb in enumerate(legal):
        if pb.id != i:
            raise WireError(f"legal_actions[{i}].id", f"expected {i}, got {pb.id}")
        try:
            out.append(action_from_legal(pb))
        except WireError as e:
            raise e.under(f"legal_actions[{i}]") from None
    return out


def action_id(legal: Sequence[Action], action: Action | str) -> int | None:
    """The id of ``action`` (an Action or its text, e.g. ``"3-6:L"``) among ``legal``, or
    None when it is not one of them. A tile without an end (``"3-6"``) names its play when
    that tile fits only one end."""
    if isinstance(action, str):
        text = action.strip()
        try:
            parsed = Action.parse(text)
        except InvalidActionError:
            return None
        if ":" not in text and parsed.kind is ActionKind.PLAY:
            plays = [i for i, a in enumerate(legal) if a.tile == parsed.tile]
            return plays[0] if len(plays) == 1 else None
        action = parsed
    for i, candidate in enumerate(legal):
        if candidate == action:
            return i
    return None


def parse_answer(legal: Sequence[Action], answer: object) -> int | None:
    """An answer given as an id, an :class:`Action` or action text, as an id to send.

    An ``int`` is returned as is (the server is the judge of ids: one out of range comes back
    as ILLEGAL_ACTION and the request is sent again); an action or text that is not legal
    gives None."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        return answer
    if isinstance(answer, Action | str):
        return action_id(legal, answer)
    return None


def view_json(view: view_pb2.View) -> dict[str, object]:
    """The protobuf JSON mapping of a view, with the .proto field names and every field
    (defaults included), as plain JSON values."""
    return json_format.MessageToDict(
        view, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def legal_action_json(pb: view_pb2.LegalAction) -> dict[str, object]:
    """One legal action for the stdio bridge: ``{id, text, kind, tile, end}`` with ``kind``
    one of play/defer/redeal/keep and, for plays, ``tile`` ("3-6") and ``end``
    ("left"/"right"); both null otherwise."""
    action = action_from_legal(pb)
    return {
        "id": pb.id,
        "text": pb.text or str(action),
        "kind": action.kind.value,
        "tile": str(action.tile) if action.tile is not None else None,
        "end": action.end.name.lower() if action.end is not None else None,
    }


# (the compiled build cannot unpickle a frozen dataclass field by field)
by_constructor(Known)
