"""The live protocol's messages built from engine values.

Replay-level values (rulesets, events, hand results, outcomes) go through
:mod:`capicua.engine.codec`; this module adds what only the live protocol has: a seat's
:class:`~capicua.v1.view_pb2.View` built from :func:`~capicua.engine.observation.observe`,
and legal actions with ids.

What a seat may see is decided by the engine's observation module alone (which also hides
who is being offered a redeal); event batches, which can span the end of a hand, mask
their events one by one with its :func:`~capicua.engine.observation.event_for_seat`.
"""

from __future__ import annotations

from collections.abc import Sequence

from capicua.engine import codec
from capicua.engine.actions import Action, ActionKind, End
from capicua.engine.game import Phase
from capicua.engine.observation import Observation
from capicua.engine.records import HandResult
from capicua.v1 import game_pb2, rules_pb2, view_pb2

_PHASE = {
    Phase.REDEAL: view_pb2.PHASE_REDEAL,
    Phase.PLAY: view_pb2.PHASE_PLAY,
    Phase.OVER: view_pb2.PHASE_OVER,
}
_KIND = {
    ActionKind.PLAY: view_pb2.ACTION_KIND_PLAY,
    ActionKind.DEFER: view_pb2.ACTION_KIND_DEFER,
    ActionKind.REDEAL: view_pb2.ACTION_KIND_REDEAL,
    ActionKind.KEEP: view_pb2.ACTION_KIND_KEEP,
}
_END = {End.LEFT: game_pb2.END_LEFT, End.RIGHT: game_pb2.END_RIGHT}


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
    """Builds views of one match; caches what never changes (ruleset, finished hands)."""

    def __init__(self, ruleset: rules_pb2.Ruleset, players: Sequence[str]) -> None:
        self.ruleset = ruleset
        self.players = list(players)
        self._results: list[game_pb2.HandResult] = []

    def results(self, results: Sequence[HandResult]) -> list[game_pb2.HandResult]:
        """Protobuf results of the finished hands (converted once each)."""
        cache = self._results
        for r in results[len(cache) :]:
            cache.append(codec.hand_result_to_proto(r))
        return cache[: len(results)]

    def view(self, obs: Observation) -> view_pb2.View:
        v = view_pb2.View(
            hand=obs.hand,
            attempt=obs.attempt,
            phase=_PHASE[obs.phase],
            offered=obs.offered,
            tiles=[str(t) for t in obs.tiles],
            chain=[
                view_pb2.PlacedTile(tile=str(p.tile), left=p.left, right=p.right, spinner=p.spinner)
                for p in obs.chain
            ],
            tile_counts=obs.tile_counts,
            stock_count=obs.stock_count,
            events=[codec.event_to_proto(e) for e in obs.events],
            scores=obs.scores,
            results=self.results(obs.results),
            players=self.players,
        )
        v.ruleset.CopyFrom(self.ruleset)
        if obs.seat is not None:
            v.seat = obs.seat
        if obs.to_act is not None:
            v.to_act = obs.to_act
        if obs.opener is not None:
            v.opener = obs.opener
        if obs.ends is not None:
            v.has_ends = True
            v.left_end, v.right_end = obs.ends
        if obs.outcome is not None:
            v.outcome.CopyFrom(codec.outcome_to_proto(obs.outcome))
        return v
