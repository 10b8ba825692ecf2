"""White-box: the live protocol's conversions and the CPU pool."""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from capicua.engine.game import Game
from capicua.engine.observation import observe
from capicua.engine.rules import load_preset
from capicua.server import cpu, wire
from capicua.server.auth import Tokens, bearer_token, digest
from capicua.server.errors import ApiError
from capicua.v1 import game_pb2, view_pb2


def test_views_and_legal_actions() -> None:
    rules = load_preset("el-dominito-2p")
    state = Game(rules).new_match(3)
    from capicua.engine import codec

    builder = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["a", "b"])
    rng = random.Random(1)
    while not state.is_over and len(state.hand_results()) < 2:
        seat = state.current_seat
        assert seat is not None
        obs = observe(state, seat)
        view = builder.view(obs)
        assert view.seat == seat and view.to_act == seat
        assert list(view.tiles) == [str(t) for t in state.hand_of(seat)]
        assert view.stock_count == state.stock_count and list(view.players) == ["a", "b"]
        assert len(view.results) == len(state.hand_results())
        legal = state.legal()
        actions = wire.legal_actions(legal)
        assert [a.id for a in actions] == list(range(len(legal)))
        for a, action in zip(actions, legal, strict=True):
            assert a.text == str(action)
            if a.kind == view_pb2.ACTION_KIND_PLAY:
                assert a.tile == str(action.tile)
                assert a.end == (
                    game_pb2.END_LEFT if action.end.name == "LEFT" else game_pb2.END_RIGHT
                )
        state.apply(state.legal_actions()[rng.randrange(len(legal))])
    spectator = builder.view(observe(state, None))
    assert not spectator.HasField("seat") and not spectator.tiles
    first = builder.results(state.hand_results())
    assert builder.results(state.hand_results())[0] is first[0], "results are converted once"


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
        assert pool.bot_for("no-such-level") == cpu.FALLBACK
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
    assert tokens.principal(_Context(("authorization", "bearer admin"))).kind.value == "admin"  # type: ignore[union-attr]
    assert tokens.principal(_Context(), required=False) is None
    for bad in ("Basic abc", "Bearer", "Bearer nope"):
        with pytest.raises(ApiError) as e:
            tokens.principal(_Context(("authorization", bad)))
        assert e.value.code.name == "UNAUTHENTICATED"
    assert bearer_token(_Context(("x-other", "1"))) is None
