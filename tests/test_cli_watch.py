"""``capicua match watch``'s table, folded from the messages a spectator receives, keeps
the engine's line of play, tile counts and stock count, redeals included.

The end-to-end watch against a server is in tests/test_server_cli.py; this feeds the table
the same messages (a view when a hand starts, then event batches) from a match played
in-process, and compares it with the engine after every decision.
"""

from __future__ import annotations

import random

import pytest

from capicua.cli.match import Table
from capicua.engine.game import Game
from capicua.engine.observation import observe, visible_events
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
        table.view(views.view(observe(state, None)))
        hand, seen = state.hand, len(visible_events(state, None))
        while not state.is_over:
            codes = state.legal_actions()
            state.apply(codes[rng.randrange(len(codes))])
            if state.is_over:
                break
            if state.hand != hand:  # the server sends a new view with each hand
                table.view(views.view(observe(state, None)))
                hand, seen = state.hand, len(visible_events(state, None))
            else:
                shown = visible_events(state, None)
                batch = [codec.event_to_proto(e) for e in shown[seen:]]
                table.events(play_pb2.EventBatch(hand=hand, events=batch))
                redeals += sum(1 for e in shown[seen:] if getattr(e, "redeal", False))
                seen = len(shown)
            assert table.line == state.line
            assert table.counts == list(state.tile_counts())
            assert table.stock == state.stock_count
    if preset == "jamaican":
        assert redeals > 0
