"""capicua rulesets as PettingZoo AEC environments (capicua.integrations.pettingzoo):
PettingZoo's own API test, the same seed and actions giving the same episode, observations
and masks from the seat's own view, and the documented tabular example running."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo", reason="pettingzoo is not installed")

import numpy as np  # noqa: E402
from pettingzoo.test import api_test  # noqa: E402

from capicua.integrations.pettingzoo import env as make_env  # noqa: E402
from capicua.integrations.views import SeatEncoder  # noqa: E402

EXAMPLE = Path(__file__).parent.parent / "docs" / "examples" / "pettingzoo_tabular.py"


@pytest.mark.parametrize(
    ("preset", "overrides"),
    [("block", ["target=30"]), ("cuban", ["target=40"]), ("cutthroat", ["target=2"]),
     ("iq-1v1", [])],
)  # fmt: skip
@pytest.mark.filterwarnings("ignore::UserWarning")  # dict observations with a mask: expected
def test_pettingzoos_api_test_passes(preset: str, overrides: list[str]) -> None:
    api_test(make_env(preset, overrides), num_cycles=200, verbose_progress=False)


def _episode(seed: int) -> list[tuple[str, bytes, float]]:
    env = make_env("draw", ["target=40"])
    env.reset(seed=seed)
    rng = random.Random(0)
    out = []
    for agent in env.agent_iter():
        observation, reward, done, cut, _ = env.last()
        out.append((agent, observation["observation"].tobytes(), float(reward)))
        if done or cut:
            env.step(None)
        else:
            env.step(rng.choice(list(np.flatnonzero(observation["action_mask"]))))
    return out


def test_a_seed_and_the_same_actions_replay_the_same_episode() -> None:
    first = _episode(5)
    assert first == _episode(5)
    assert first != _episode(6)
    rewards = [r for _, _, r in first[-4:]]
    assert sorted(rewards) == [-1.0, -1.0, 1.0, 1.0]  # the match's returns, zero-sum


def test_observations_are_the_seats_own_view_and_masks_only_for_the_seat_to_act() -> None:
    env = make_env("block")
    env.reset(seed=3)
    match = env.match
    assert match is not None
    encoder = SeatEncoder(env.game, perfect_recall=True)
    for seat, agent in enumerate(env.possible_agents):
        seen = env.observe(agent)
        assert np.array_equal(seen["observation"], encoder.fill(match, seat))
        legal = seen["action_mask"].sum()
        assert legal == (len(match.legal_actions()) if agent == env.agent_selection else 0)
    with pytest.raises(ValueError, match="not legal"):
        illegal = int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"] == 0)[0])
        env.step(illegal)
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        make_env("nope")


def test_the_tabular_example_learns_and_its_policy_plays_as_a_bot(tmp_path: Path) -> None:
    saved = tmp_path / "prefs.json"
    run = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--episodes",
            "600",
            "--evaluate",
            "300",
            "--save",
            str(saved),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found = re.search(r"learned ([\d.]+)%, random ([\d.]+)%", run.stdout)
    assert found, run.stdout
    assert 0 < float(found.group(1)) <= 100 and 0 < float(found.group(2)) <= 100
    # the saved policy, as the documented bot, plays whole matches from its views alone
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        from policy_bot import PolicyBot
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    from capicua.engine.game import Game
    from capicua.engine.observation import observe

    bot = PolicyBot(str(saved))
    game = Game.from_preset("iq-1v1")
    for seed in range(3):
        match = game.new_match(seed)
        while not match.is_terminal():
            seat = match.current_seat
            assert seat is not None
            legal = match.legal()
            action = bot.choose(observe(match, seat), legal) if seat == 0 else legal[0]
            assert action in legal
            match.apply_action(action)


def test_a_bot_gets_the_same_tensor_from_its_wire_view_as_the_environment_gives() -> None:
    """What a trained policy sees in a tournament: the SDK's observation, rebuilt from the
    protobuf View the server sends, encodes to the very tensor the environment gave while
    training (SeatEncoder.fill_view against SeatEncoder.fill)."""
    from capicua.wire import codec
    from capicua.wire.views import ViewBuilder, observation_from_view

    env = make_env("iq-1v1")
    env.reset(seed=9)
    match = env.match
    assert match is not None
    rng = random.Random(4)
    builder = ViewBuilder(codec.ruleset_to_proto(env.game.ruleset), ["a", "b"])
    checked = 0
    for agent in env.agent_iter():
        observation, _, done, cut, _ = env.last()
        if done or cut:
            env.step(None)
            continue
        seat = env.possible_agents.index(agent)
        wire = observation_from_view(builder.view_of(match, seat))
        mine = SeatEncoder(env.game, perfect_recall=True).fill_view(wire)
        assert np.array_equal(mine, observation["observation"])
        checked += 1
        env.step(rng.choice(list(np.flatnonzero(observation["action_mask"]))))
    assert checked > 5
