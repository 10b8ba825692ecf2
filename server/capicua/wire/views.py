"""The live protocol's messages built from engine values.

Replay-level values (rulesets, events, hand results, outcomes) go through
:mod:`capicua.wire.codec`; this module adds what only the live protocol has: a seat's
:class:`~capicua.v1.view_pb2.View` built from :func:`~capicua.engine.observation.observe`,
and legal actions with ids.

What a seat may see is decided by the engine's observation module alone (which also hides
who is being offered a redeal); event batches, which can span the end of a hand, mask
their events one by one with its :func:`~capicua.engine.observation.event_for_seat`.
"""

from __future__ import annotations

from collections.abc import Sequence

from capicua.engine.actions import Action, ActionKind
from capicua.engine.game import MatchState
from capicua.engine.observation import Observation, PlacedTile, event_for_seat, observe
from capicua.engine.records import Event, HandResult
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
        la = view_pb2.LegalAction(id=i, text=str(a), kind=_KIND[a.kind])
        if a.kind is ActionKind.PLAY:
            assert a.tile is not None and a.end is not None
            la.tile = str(a.tile)
            la.end = _END[a.end]
        out.append(la)
    return out


class ViewBuilder:
    """Builds views of one match; caches what never changes (ruleset, finished hands) and
    the current hand's events.

    A view carries the whole hand's events, so converting them anew for every decision
    cost O(events) per view (a tenth of the server's time under load). Instead each event
    of the current hand is converted once (:meth:`events`, shared by every seat and by the
    match's event batches), and each seat's masked list only grows (:meth:`view_of`).
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
        self._hand = -1  # the hand whose events are cached below
        self._events: list[Event] = []
        self._full: list[game_pb2.Event] = []  # _events as protos, full information
        # seat (None: spectator) -> (how many of _events it has seen, the shown ones' protos)
        self._seen: dict[int | None, tuple[int, list[game_pb2.Event]]] = {}

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
            e = state.event(r)
            self._events.append(e)
            self._full.append(codec.event_to_proto(e))
        return self._events, self._full

    def _seen_by(self, state: MatchState, seat: int | None) -> list[game_pb2.Event]:
        """The current hand's events as ``seat`` may see them (the masking rule is the
        engine's :func:`event_for_seat`, as in :func:`observe`)."""
        events, full = self.events(state, state.hand)
        done, shown = self._seen.get(seat, (0, []))
        for e, pb in zip(events[done:], full[done:], strict=True):
            masked = event_for_seat(e, seat)
            if masked is e:
                shown.append(pb)
            elif masked is not None:
                shown.append(codec.event_to_proto(masked))
        self._seen[seat] = (len(events), shown)
        return shown

    def view_of(
        self, state: MatchState, seat: int | None, into: view_pb2.View | None = None
    ) -> view_pb2.View:
        """``seat``'s view of ``state`` now: the same message as
        ``view(observe(state, seat))``, with the hand's events from the caches. ``into``:
        an empty View to fill (e.g. a DecisionRequest's, which saves a copy)."""
        v = self.view(observe(state, seat, events=False), into)
        v.events.extend(self._seen_by(state, seat))
        return v

    def view(self, obs: Observation, into: view_pb2.View | None = None) -> view_pb2.View:
        """The View of an observation (``into``: an empty View to fill)."""
        v = view_pb2.View() if into is None else into
        v.hand = obs.hand
        v.attempt = obs.attempt
        v.phase = _PHASE[obs.phase]
        v.offered = obs.offered
        v.MergeFrom(self._shared(obs.results))  # ruleset, players, results
        v.tiles.extend([str(t) for t in obs.tiles])
        v.chain.extend([self._placed_pb(p) for p in obs.chain])
        v.tile_counts.extend(obs.tile_counts)
        v.stock_count = obs.stock_count
        v.events.extend([codec.event_to_proto(e) for e in obs.events])
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
        return v
