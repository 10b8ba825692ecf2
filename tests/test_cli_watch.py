"""``capicua match watch``'s table, folded from the messages a spectator receives, keeps
the engine's line of play, tile counts and stock count, redeals and new hands included.

The end-to-end watch against a server is in tests/test_server_cli.py; this feeds the table
the messages a spectator gets (one view when it starts watching, then event batches,
whatever the hand) from a match played in-process, and compares it with the engine after
every decision.
"""

from __future__ import annotations

import random

import pytest

from capicua.cli.match import Table
from capicua.engine.game import Game
from capicua.engine.observation import TileCounts, observe, visible_events
from capicua.engine.records import RedealChoice
from capicua.engine.rules import load_preset
from capicua.v1 import play_pb2
from capicua.wire import codec
from capicua.wire.views import ViewBuilder


@pytest.mark.parametrize(
    ("preset", "overrides"),
    [
        ("cuban", ["max_hands=2"]),  # a stock to draw from
        ("jamaican", ["max_hands=2", "redeal_min_doubles=2"]),  # redeals asked for often
        ("iq-ffa", ["max_hands=2"]),
    ],
)
def test_the_watch_table_follows_the_engine(preset: str, overrides: list[str]) -> None:
    game = Game(load_preset(preset, overrides))
    redeals = 0
    for seed in range(6):
        state = game.new_match(seed, auto_forced=False)
        rng = random.Random(seed)
        views = ViewBuilder(codec.ruleset_to_proto(game.ruleset), ["a"] * game.ruleset.seats)
        table = Table("m")
        table.view(views.view(observe(state, None)))  # the only view a spectator gets
        hand, seen = state.hand, len(visible_events(state, None))
        while not state.is_terminal():
            codes = state.legal_actions()
            state.apply(codes[rng.randrange(len(codes))])
            for h in range(hand, state.hand + 1):  # the hand it was in, and any it began
                shown = visible_events(state, None, h)[seen if h == hand else 0 :]
                table.events(play_pb2.EventBatch(hand=h, events=map(codec.event_to_proto, shown)))
                redeals += sum(1 for e in shown if isinstance(e, RedealChoice) and e.redeal)
            hand, seen = state.hand, len(visible_events(state, None))
            if not state.is_terminal():
                assert table.hand == state.hand
                assert table.line == state.line
                assert table.counts == TileCounts(state.tile_counts(), state.stock_count)
    if preset == "jamaican":
        assert redeals > 0
