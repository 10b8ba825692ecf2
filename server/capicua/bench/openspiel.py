"""What ``capicua bench openspiel`` measures: the OpenSpiel wrapper's speed beside the engine's.

Per preset and repetition, one-hand matches (``max_hands=1``) are played two ways, one right
after the other so that machine load affects both alike:

- **through OpenSpiel**: ``pyspiel.load_game("capicua", ...)`` states, every chance node
  sampled by its probabilities and every decision uniformly at random, as an algorithm that
  walks the game would (``apply_action`` on each state; a hand is ~30 chance nodes for
  the deal and ~25 decisions);
- **through the engine**: :meth:`~capicua.engine.game.MatchState.random_playout`, the fast
  path of ``capicua bench engine``.

Reported per preset, medians over the repetitions: hands per second each way, their ratio,
OpenSpiel states per second (chance nodes included) and ``clone()`` per second of a state in
the middle of a hand (what a search does at every simulation).
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from capicua.bench.common import BenchError, machine_info, python_info
from capicua.engine.game import Game

DEFAULT_SECONDS = 0.5
DEFAULT_REPEAT = 3


def _pyspiel() -> Any:
    try:
        import pyspiel

        import capicua.integrations.openspiel  # noqa: F401  (registers the game)
    except ImportError as e:
        raise BenchError(
            f"bench openspiel needs open_spiel ({e}); pip install 'capicua[openspiel]'"
        ) from None
    return pyspiel


def _random_step(state: Any, rng: random.Random) -> None:
    """A chance outcome drawn by its probability, else a uniformly random legal action."""
    if state.is_chance_node():
        outcomes, odds = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(rng.choices(outcomes, odds)[0])
    else:
        state.apply_action(rng.choice(state.legal_actions()))


def _openspiel_hands(game: Any, seconds: float, rng: random.Random) -> tuple[float, float]:
    """(hands/s, states/s) of random one-hand matches through OpenSpiel."""
    hands = states = 0
    spent = 0.0
    while spent < seconds:
        start = time.perf_counter()
        state = game.new_initial_state()
        while not state.is_terminal():
            _random_step(state, rng)
            states += 1
        spent += time.perf_counter() - start
        hands += 1
    return hands / spent, states / spent


def _engine_hands(engine: Game, seconds: float, rng: random.Random) -> float:
    hands = 0
    spent = 0.0
    while spent < seconds:
        start = time.perf_counter()
        state = engine.new_match(rng.randrange(2**62))
        state.random_playout(rng)
        spent += time.perf_counter() - start
        hands += 1
    return hands / spent


def _clones(game: Any, seconds: float, rng: random.Random) -> float:
    state = game.new_initial_state()
    while state.is_chance_node() or len(state.history()) < 40:  # into the hand
        if state.is_terminal():
            state = game.new_initial_state()
        else:
            _random_step(state, rng)
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state.clone()
        n += 1
    return n / (time.perf_counter() - start)


def run(presets: tuple[str, ...], seconds: float, repeat: int) -> dict[str, Any]:
    pyspiel = _pyspiel()
    out: dict[str, Any] = {}
    for preset in presets:
        try:
            engine = Game.from_preset(preset, ["max_hands=1"])
        except Exception as e:  # an unknown preset: one line
            raise BenchError(str(e)) from None
        game = pyspiel.load_game("capicua", {"preset": preset, "set": "max_hands:1"})
        samples: dict[str, list[float]] = {"os": [], "states": [], "engine": [], "clone": []}
        for r in range(repeat):
            rng = random.Random(r)
            hands, states = _openspiel_hands(game, seconds, rng)
            samples["os"].append(hands)
            samples["states"].append(states)
            samples["engine"].append(_engine_hands(engine, seconds, rng))
            samples["clone"].append(_clones(game, seconds / 2, rng))
        med = {k: statistics.median(v) for k, v in samples.items()}
        out[preset] = {
            "openspiel_hands_per_s": round(med["os"], 1),
            "engine_hands_per_s": round(med["engine"], 1),
            "engine_over_openspiel": round(med["engine"] / med["os"], 1),
            "openspiel_states_per_s": round(med["states"]),
            "clones_per_s": round(med["clone"]),
        }
    return {
        "bench": "openspiel",
        "seconds": seconds,
        "repeat": repeat,
        "presets": out,
        "machine": machine_info(),
        "python": python_info(),
    }
