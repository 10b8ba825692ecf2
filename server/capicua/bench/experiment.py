"""``capicua bench experiment``: how fast an in-process A/B experiment plays.

The work: ``block`` against ``block`` with ``block_tie = "opening_side"`` at ``unit =
"hand"``, ``hands`` pairs, in one process (``workers = 1``), into a new temporary results
directory, once with ``random`` bots in every seat and once with ``easy`` bots. The clock is
the run's own (``RunSummary.seconds``: playing, measuring and committing to SQLite; the
table creation before it is not counted) and the hands of both arms are counted. In the
same repetition the engine's random playouts on ``block`` (:func:`capicua.bench.engine.
measure_capicua`, whole matches, the ``capicua bench engine`` measurement) give the
baseline. Each repetition runs the three one after the other; medians are reported, and
``ratio_engine_to_random`` is the engine's rate over the random experiment's (the goal: at
most 2).

A fourth run is where a designer waits longest: ``experiment ab --base iq-1v1 --skill
--skill-bots hard:random`` (the same rules in both arms, ``random`` in every seat, and each
arm's deals played again by ``hard`` against ``random``), ``hands // 200`` pairs. Its
rate is in pairs per second (a pair: both arms' games and both skill games), from the
run's own clock as above.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from capicua.arena.experiment import config as _config
from capicua.arena.experiment import play as _play
from capicua.arena.experiment.config import Experiment
from capicua.bench.engine import measure_capicua
from capicua.engine.game import Game

PRESET = "block"
CANDIDATE = ("block_tie=opening_side",)
DEFAULT_HANDS = 4000
DEFAULT_REPEAT = 3
ENGINE_SECONDS = 1.0
GOAL_RATIO = 2.0
SKILL_PRESET = "iq-1v1"
SKILL_BOTS = (("hard", "random"),)
SKILL_SHARE = 200  # one skill pair per this many random pairs: hard searches every move


def bench_experiment(bots: str, hands: int, seed: int) -> Experiment:
    return _config.build(
        kind="ab",
        arms=[
            _config.make_arm("base", PRESET, [], "base"),
            _config.make_arm("candidate", PRESET, CANDIDATE, "candidate"),
        ],
        bots=[bots],
        unit="hand",
        hands=hands,
        matches=None,
        seed=seed,
        name=f"bench {bots}",
    )


def skill_experiment(pairs: int, seed: int) -> Experiment:
    """``experiment ab --base iq-1v1 --skill --skill-bots hard:random --hands PAIRS``."""
    return _config.build(
        kind="ab",
        arms=[
            _config.make_arm("base", SKILL_PRESET, [], "base"),
            _config.make_arm("candidate", SKILL_PRESET, [], "candidate"),
        ],
        bots=["random"],
        unit="hand",
        hands=pairs,
        matches=None,
        seed=seed,
        name="bench skill",
        skill=SKILL_BOTS,
    )


def _played(exp: Experiment) -> _play.RunSummary:
    """One fresh in-process run of ``exp`` into a temporary results directory."""
    with tempfile.TemporaryDirectory(prefix="capicua-bench-") as tmp:
        return _play.run_experiment(exp, Path(tmp) / "out")


def measure_experiment(bots: str, hands: int, seed: int) -> float:
    """Hands per second (both arms) of one fresh in-process run."""
    summary = _played(bench_experiment(bots, hands, seed))
    hands_per_s: float = summary.hands / summary.seconds
    return hands_per_s


def measure_skill(pairs: int, seed: int) -> float:
    """Pairs per second of one fresh in-process ``--skill`` run (:func:`skill_experiment`)."""
    summary = _played(skill_experiment(pairs, seed))
    pairs_per_s: float = summary.played / summary.seconds
    return pairs_per_s


def run(hands: int = DEFAULT_HANDS, repeat: int = DEFAULT_REPEAT) -> dict[str, Any]:
    """Every measurement ``repeat`` times; the medians and the runs."""
    game = Game.from_preset(PRESET)
    runs: dict[str, list[float]] = {"random": [], "easy": [], "engine": [], "skill": []}
    skill_pairs = max(1, hands // SKILL_SHARE)
    for r in range(repeat):
        runs["engine"].append(measure_capicua(game, ENGINE_SECONDS, r * 1_000_000).hands_per_s)
        runs["random"].append(measure_experiment("random", hands, r + 1))
        # easy decides through observations: a tenth of the hands keeps the run short
        runs["easy"].append(measure_experiment("easy", max(1, hands // 10), r + 1))
        runs["skill"].append(measure_skill(skill_pairs, r + 1))
    random_rate = statistics.median(runs["random"])
    engine_rate = statistics.median(runs["engine"])
    return {
        "preset": PRESET,
        "candidate": list(CANDIDATE),
        "unit": "hand",
        "hands": hands,
        "repeat": repeat,
        "skill": {
            "preset": SKILL_PRESET,
            "skill_bots": [":".join(p) for p in SKILL_BOTS],
            "pairs": skill_pairs,
        },  # fmt: skip
        "runs": {k: [round(v, 2) for v in vs] for k, vs in runs.items()},
        "ratio_engine_to_random": round(engine_rate / random_rate, 3),
        "goal_ratio": GOAL_RATIO,
        "goal_met": engine_rate / random_rate <= GOAL_RATIO,
        "experiment_random_hands_per_s": round(random_rate, 1),
        "experiment_easy_hands_per_s": round(statistics.median(runs["easy"]), 1),
        "engine_random_hands_per_s": round(engine_rate, 1),
        "experiment_skill_pairs_per_s": round(statistics.median(runs["skill"]), 2),
    }
