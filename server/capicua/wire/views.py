"""The live protocol's messages built from engine values.

Replay-level values (rulesets, events, hand results, outcomes) go through
:mod:`capicua.wire.codec`; this module adds what only the live protocol has: a seat's
:class:`~capicua.v1.view_pb2.View` built from :func:`~capicua.engine.observation.observe`,
and legal actions with ids.

What a seat may see is decided by the engine's observation module alone (which also hides
who is being offered a redeal); event batches, which can span the end of a hand, mask
their events one by one with its :func:`~capicua.engine.observation.event_for_seat`.
Each seat's masked events are kept with how many it was sent, so that a seat is sent each
event once: in a batch, a view or an incremental request (CAPABILITY_INCREMENTAL_DECISIONS).
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from capicua.engine.actions import Action, ActionKind
from capicua.engine.game import MatchState, RawEvent
from capicua.engine.observation import Observation, PlacedTile, event_for_seat, observe
from capicua.engine.records import Event, HandResult
from capicua.engine.tiles import Tile
from capicua.v1 import game_pb2, rules_pb2, view_pb2
from capicua.wire import codec

# the engine -> wire maps of codec's enum codecs, looked up directly on the hot path
_PHASE = codec.PHASE.to_wire
_KIND = codec.ACTION_KIND.to_wire
_END = codec.END.to_wire


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


class _Seen:
    """The current hand's events as one seat (or the spectators) may see them."""

    __slots__ = ("done", "shown", "sent")

    def __init__(self) -> None:
        self.done = 0  # raw events of the hand masked so far
        self.shown: list[game_pb2.Event] = []  # the ones it may see, as protos
        self.sent = 0  # how many of ``shown`` it was sent (a batch, a view, a request)


class ViewBuilder:
    """Builds views of one match; caches what never changes (ruleset, finished hands), the
    current hand's events, and what each seat was sent of them.

    A view carries the whole hand's events, so converting them anew for every decision
    cost O(events) per view (a tenth of the server's time under load). Instead each event
    of the current hand is converted once (:meth:`events`), each seat's masked list only
    grows, and the same protos go out in the event batches, the views and the incremental
    requests (:meth:`unsent`): an event is converted once, and masked once per seat.
    """

    def __init__(self, ruleset: rules_pb2.Ruleset, players: Sequence[str]) -> None:
        self.ruleset = ruleset
        self.players = list(players)
        self._results: list[game_pb2.HandResult] = []
        # What every view of the match shares (ruleset, players, finished hands), merged
        # into each view at once: cheaper than copying them field by field.
        self._base = view_pb2.View()
        self._base_results = -1  # how many results _base holds (-1: not built)
        # The chain's tiles as protos: a few hundred different ones at most per ruleset.
        self._placed: dict[PlacedTile, view_pb2.PlacedTile] = {}
        # The current deal's chain (hand, attempt, first tile, protos): within a deal it only
        # grows, one tile at either end, so each view converts at most the new tile.
        self._chain: tuple[int, int, PlacedTile | None, list[view_pb2.PlacedTile]] = (
            -1,
            -1,
            None,
            [],
        )
        # A tile's text, and a raw event's typed value and proto: a match has a few hundred
        # different ones, and each is converted once.
        self._text: dict[Tile, str] = {}
        self._raw: dict[RawEvent, tuple[Event, game_pb2.Event]] = {}
        self._masked: dict[Event, game_pb2.Event] = {}  # another seat's draw, hidden
        # An action code's LegalAction fields: the same few dozen codes come up all match.
        self._legal: dict[int, _LegalFields] = {}
        self._hand = -1  # the hand whose events are cached below
        self._events: list[Event] = []
        self._full: list[game_pb2.Event] = []  # _events as protos, full information
        self._seen: dict[int | None, _Seen] = {}  # seat (None: spectators) -> its part

    def results(self, results: Sequence[HandResult]) -> list[game_pb2.HandResult]:
        """Protobuf results of the finished hands (converted once each)."""
        cache = self._results
        for r in results[len(cache) :]:
            cache.append(codec.hand_result_to_proto(r))
        return cache[: len(results)]

    def _shared(self, results: Sequence[HandResult]) -> view_pb2.View:
        """A View with only the ruleset, the players and the results of finished hands."""
        if self._base_results != len(results):
            base = view_pb2.View(players=self.players, results=self.results(results))
            base.ruleset.CopyFrom(self.ruleset)
            self._base, self._base_results = base, len(results)
        return self._base

    def _placed_pb(self, placed: PlacedTile) -> view_pb2.PlacedTile:
        pb = self._placed.get(placed)
        if pb is None:
            pb = self._placed[placed] = view_pb2.PlacedTile(
                tile=str(placed.tile), left=placed.left, right=placed.right, spinner=placed.spinner
            )
        return pb

    def _chain_pb(self, obs: Observation) -> list[view_pb2.PlacedTile]:
        """``obs.chain`` as protos, from the last one asked for when it is the same deal's
        chain or that chain and one more tile (the new one on the left end unless the
        left end's tile is the same)."""
        chain = obs.chain
        hand, attempt, first, pbs = self._chain
        if (hand, attempt) != (obs.hand, obs.attempt) or not 0 <= len(chain) - len(pbs) <= 1:
            pbs = [self._placed_pb(p) for p in chain]
        elif len(chain) == len(pbs) + 1:
            if pbs and chain[0] == first:
                pbs = [*pbs, self._placed_pb(chain[-1])]
            else:
                pbs = [self._placed_pb(chain[0]), *pbs]
        self._chain = obs.hand, obs.attempt, chain[0] if chain else None, pbs
        return pbs

    def legal_actions(
        self,
        state: MatchState,
        codes: Sequence[int],
        into: RepeatedCompositeFieldContainer[view_pb2.LegalAction],
    ) -> None:
        """Append the LegalActions of the engine's action ``codes`` to ``into`` (a repeated
        field), id = position: the same messages as :func:`legal_actions` of
        ``state.legal()``, without building the typed actions each decision."""
        known = self._legal
        for i, code in enumerate(codes):
            fields = known.get(code)
            if fields is None:
                fields = known[code] = _legal_fields(Action.from_code(code, state.game.table))
            text, kind, tile, end = fields
            into.add(id=i, text=text, kind=kind, tile=tile, end=end)

    def events(
        self, state: MatchState, hand: int
    ) -> tuple[Sequence[Event], Sequence[game_pb2.Event]]:
        """Every event of ``hand`` so far (full information) and its proto, converted once
        each. Only one hand is kept: asking for another one starts it over. Callers must
        not modify the protos (they are shared)."""
        raw = state.raw_events(hand)  # append-only within a hand
        if hand != self._hand:
            self._hand = hand
            self._events, self._full = [], []
            self._seen.clear()
        for r in raw[len(self._events) :]:
            known = self._raw.get(r)
            if known is None:
                e = state.event(r)
                known = self._raw[r] = (e, codec.event_to_proto(e))
            self._events.append(known[0])
            self._full.append(known[1])
        return self._events, self._full

    def _seen_by(self, state: MatchState, hand: int, seat: int | None) -> _Seen:
        """``hand``'s events as ``seat`` may see them (the masking rule is the engine's
        :func:`event_for_seat`, as in :func:`observe`)."""
        events, full = self.events(state, hand)
        seen = self._seen.get(seat)
        if seen is None:
            seen = self._seen[seat] = _Seen()
        shown = seen.shown
        for i in range(seen.done, len(events)):
            e = events[i]
            masked = event_for_seat(e, seat)
            if masked is e:
                shown.append(full[i])
            elif masked is not None:
                pb = self._masked.get(masked)
                if pb is None:
                    pb = self._masked[masked] = codec.event_to_proto(masked)
                shown.append(pb)
        seen.done = len(events)
        return seen

    def unsent(self, state: MatchState, hand: int, seat: int | None) -> list[game_pb2.Event]:
        """The events of ``hand`` that ``seat`` may see and was not sent yet, now counted
        as sent (an event batch, or an incremental request's ``events``)."""
        seen = self._seen_by(state, hand, seat)
        new = seen.shown[seen.sent :]
        seen.sent = len(seen.shown)
        return new

    def view_of(
        self, state: MatchState, seat: int | None, into: view_pb2.View | None = None
    ) -> view_pb2.View:
        """``seat``'s view of ``state`` now: the same message as
        ``view(observe(state, seat))``, with the hand's events from the caches, which count
        as sent to it (the view carries them). ``into``: an empty View to fill (e.g. a
        DecisionRequest's, which saves a copy)."""
        obs = observe(state, seat, events=False)
        v = view_pb2.View() if into is None else into
        self._changing(obs, v)
        v.MergeFrom(self._shared(obs.results))  # ruleset, players, results
        seen = self._seen_by(state, state.hand, seat)
        v.events.extend(seen.shown)
        seen.sent = len(seen.shown)
        return v

    def delta_of(self, state: MatchState, seat: int, into: view_pb2.View) -> None:
        """Fill ``into`` with the part of ``seat``'s view that changes between decisions:
        the view without ruleset, players, results and events (an incremental request's)."""
        self._changing(observe(state, seat, events=False), into)

    def view(self, obs: Observation, into: view_pb2.View | None = None) -> view_pb2.View:
        """The View of an observation (``into``: an empty View to fill)."""
        v = view_pb2.View() if into is None else into
        self._changing(obs, v)
        v.MergeFrom(self._shared(obs.results))  # ruleset, players, results
        v.events.extend([codec.event_to_proto(e) for e in obs.events])
        return v

    def _changing(self, obs: Observation, v: view_pb2.View) -> None:
        """Set the fields of ``v`` that change from decision to decision."""
        v.hand = obs.hand
        v.attempt = obs.attempt
        v.phase = _PHASE[obs.phase]
        v.offered = obs.offered
        text = self._text
        v.tiles.extend([text.get(t) or text.setdefault(t, str(t)) for t in obs.tiles])
        v.chain.extend(self._chain_pb(obs))
        v.tile_counts.extend(obs.tile_counts)
        v.stock_count = obs.stock_count
        v.scores.extend(obs.scores)
        if obs.seat is not None:
            v.seat = obs.seat
        if obs.to_act is not None:
            v.to_act = obs.to_act
        if obs.opener is not None:
            v.opener = obs.opener
        if obs.ends is not None:
            v.ends.left, v.ends.right = obs.ends
        if obs.outcome is not None:
            v.outcome.CopyFrom(codec.outcome_to_proto(obs.outcome))
