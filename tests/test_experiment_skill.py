"""What ``--skill`` and ``--skill-trace`` measure (docs/regression-testing.md, "Skill against
luck"): the pairings' win rates named for what they are, decisiveness as Ludii defines it
(recomputed here from the engine's own scores of the same matches), the skill trace's rungs
with their intervals, and results written before these still read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from capicua.arena.experiment.config import Experiment, build, make_arm
from capicua.arena.experiment.metrics import (
    Metric,
    estimate,
    metrics_for,
)
from capicua.arena.experiment.play import play_match
from capicua.arena.facts import HandFacts, MatchFacts
from capicua.arena.schedule import deal_seed
from capicua.cli import main
from capicua.engine.game import Game, MatchState
from capicua.engine.records import Pass, Play, Termination
from capicua.engine.rules import load_preset
from tests.clirunner import cli_runner

DATA = Path(__file__).parent / "data"


def run(args: list[str], code: int = 0) -> Any:
    res = cli_runner().invoke(main, ["experiment", *args])
    assert res.exit_code == code, (res.output, res.stderr)
    return res


def run_json(args: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run([*args, "--json"]).stdout.splitlines()[-1])
    return data


# -- names ------------------------------------------------------------------------------------


def test_the_skill_metrics_are_named_for_what_they_measure() -> None:
    """A pairing's win rates are named as the per-side ones are (``match_win_rate.side0``):
    the stronger bot's match win rate is a win rate, not "decisiveness"; decisiveness is
    Ludii's, how late a won match was decided."""
    by_name = {
        m.name: m for m in metrics_for("match", [load_preset("iq-1v1")], skill=[("hard", "easy")])
    }
    hands, matches = by_name["hand_win_rate.hard_vs_easy"], by_name["match_win_rate.hard_vs_easy"]
    assert hands.description == "hands hard won against easy, once on each side of every deal"
    assert matches.description.startswith("matches hard won against easy (target reached)")
    assert not [name for name in by_name if name.startswith("skill.")]
    assert "decisiveness" not in matches.description
    assert by_name["decisiveness"].description == (
        "share of a won match's moves played when its winner took the lead it kept to the end "
        "(lower: decided earlier)"
    )
    at_hand = {m.name for m in metrics_for("hand", [load_preset("iq-1v1")], skill=[("a", "b")])}
    assert "hand_win_rate.a_vs_b" in at_hand and "decisiveness" not in at_hand


# -- decisiveness -----------------------------------------------------------------------------


def hand(winner: int | None, points: int, moves: int, reset: str | None = None) -> HandFacts:
    return HandFacts(0, False, winner, 0, points, (), reset, moves, 0, 0, 0, 0)


def decisiveness() -> Metric:
    return next(m for m in metrics_for("match", [load_preset("block")], skill=[("a", "b")])
                if m.name == "decisiveness")  # fmt: skip


def test_decisiveness_is_when_the_winner_took_the_lead_it_kept() -> None:
    """Per won match: the moves up to the end of the hand after which its winner led at
    the end of every later hand, over all its moves; a match nobody won is left out."""
    metric = decisiveness()

    def value(winner: int | None, *hands: HandFacts, end: str = "normal") -> tuple[float, float]:
        return metric.pair_value(MatchFacts(end, winner, None, (0, 0), tuple(hands)))

    # ahead from the first hand on: decided after its 10 moves of 40
    assert value(0, hand(0, 30, 10), hand(1, 20, 20), hand(0, 80, 10)) == (0.25, 1.0)
    # behind, then ahead for good after the third hand
    assert value(1, hand(0, 30, 10), hand(1, 20, 10), hand(1, 20, 10), hand(1, 70, 10)) == (
        0.75, 1.0)  # fmt: skip
    # ahead, caught (a tie leads nobody), ahead again: decided when it went ahead again
    assert value(0, hand(0, 10, 5), hand(1, 10, 5), hand(0, 5, 5), hand(0, 90, 5)) == (
        0.75, 1.0)  # fmt: skip
    # a reply wipes every score: the lead before it does not count
    assert value(0, hand(0, 40, 10), hand(1, 5, 10, "reply"), hand(0, 70, 20)) == (1.0, 1.0)
    # nobody won (a tied match, or stopped by max_hands): no decision to measure
    assert value(None, hand(0, 10, 10), hand(1, 10, 10)) == (0.0, 0.0)
    assert value(0, hand(0, 10, 10), end="hand_limit") == (0.0, 0.0)


def engine_decisiveness(state: MatchState) -> float | None:
    """Decisiveness of one played match from the engine's own records, apart from the
    experiment's code: each hand's result holds every side's score after it, and its
    events the plays and passes."""
    out = state.outcome
    assert out is not None
    if out.termination is not Termination.NORMAL or out.winner is None:
        return None
    winner = out.winner
    results = state.log.results()
    moves = [
        sum(isinstance(e, Play | Pass) for e in state.log.record(r.hand).events) for r in results
    ]
    run_start: int | None = None  # the first hand of the winner's current run in the lead
    for k, r in enumerate(results):
        leads = r.scores[winner] > max(s for side, s in enumerate(r.scores) if side != winner)
        if not leads:
            run_start = None
        elif run_start is None:
            run_start = k
    decided = len(results) - 1 if run_start is None else run_start
    return sum(moves[: decided + 1]) / sum(moves)


def replayed(exp: Experiment, arm: int, pairs: int) -> list[MatchState]:
    """The matches of ``arm`` played again, pair by pair, from the experiment's seeds."""
    game = Game.from_preset(exp.arms[arm].preset, exp.arms[arm].played_overrides(exp.unit))
    return [play_match(exp, game, deal_seed(exp.seed, pair)) for pair in range(pairs)]


def mean_decisiveness(states: list[MatchState]) -> float:
    shares = [s for s in map(engine_decisiveness, states) if s is not None]
    return sum(shares) / len(shares)


@pytest.mark.parametrize(
    ("preset", "overrides"),
    [("iq-1v1", []), ("jamaican-six-love", []), ("cutthroat", []), ("block", ["target=60"])],
)
def test_decisiveness_is_recomputed_from_the_engines_scores(
    tmp_path: Path, preset: str, overrides: list[str]
) -> None:
    """The experiment's decisiveness, from the matches it stored, equals the one computed
    here from the engine's scores after every hand of the same matches: points, hands won
    as points, a reply that wipes every score (jamaican-six-love), three sides whose scores
    go back to 0 once all have scored (cutthroat)."""
    pairs = 12
    sets = [arg for o in overrides for arg in ("--set", o)]
    data = run_json(["measure", "--rules", preset, *sets, "--bots", "random", "--unit", "match",
                     "--matches", str(pairs), "--skill-trace", "random,easy",
                     "--out", str(tmp_path / "d")])  # fmt: skip
    exp = build(kind="measure", arms=[make_arm("rules", preset, overrides, "r")],
                bots=["random"], unit="match", hands=None, matches=pairs, seed=1)  # fmt: skip
    states = replayed(exp, 0, pairs)
    got = data["metrics"]["decisiveness"]
    assert got["value"] == pytest.approx(mean_decisiveness(states), abs=1e-6)
    low, high = got["ci95"]
    assert 0.0 <= low <= got["value"] <= high <= 1.0
    shares = [s for s in map(engine_decisiveness, states) if s is not None]
    assert len(set(shares)) > 3  # matches decided at different points, not all at the end
    if preset == "jamaican-six-love":  # the reply's wipe is exercised
        assert any(r.reset is not None for s in states for r in s.log.results())


# -- the skill trace --------------------------------------------------------------------------


def rung_games(exp: Experiment, strong: str, weak: str, pairs: int) -> list[tuple[float, float]]:
    """Per pair, (hands ``strong`` won, hands played) over its games against ``weak``, once
    on each side of the pair's deal: played here one by one."""
    rules = exp.base.ruleset
    game = Game.from_preset(exp.base.preset, exp.base.played_overrides(exp.unit))
    out = []
    for pair in range(pairs):
        won = played = 0
        for side in range(rules.num_sides):
            seats = [strong if rules.side_of(s) == side else weak for s in range(rules.seats)]
            state = play_match(exp, game, deal_seed(exp.seed, pair), seats)
            results = state.log.results()
            won += sum(r.winner == side for r in results)
            played += len(results)
        out.append((float(won), float(played)))
    return out


def test_a_skill_trace_plays_each_level_against_the_level_below(tmp_path: Path) -> None:
    """``--skill-trace random,easy,medium``: the rungs easy against random and medium
    against easy, weakest first, each the stronger level's win rate over its games on every
    pair's deal, once on each side, with the interval of those per-pair values; a rung that
    is also a ``--skill-bots`` pairing is played once."""
    pairs, out = 20, tmp_path / "t"
    args = ["measure", "--rules", "iq-1v1", "--bots", "random", "--hands", str(pairs),
            "--skill", "--skill-bots", "easy:random", "--skill-trace", "random,easy,medium",
            "--out", str(out)]  # fmt: skip
    data = run_json(args)
    trace = data["skill_trace"]
    assert trace["levels"] == ["random", "easy", "medium"] and trace["even_share"] == 0.5
    assert [(r["strong"], r["weak"]) for r in trace["rungs"]] == [
        ("easy", "random"), ("medium", "easy")]  # fmt: skip
    exp = build(kind="measure", arms=[make_arm("rules", "iq-1v1", [], "r")], bots=["random"],
                unit="hand", hands=pairs, matches=None, seed=1)  # fmt: skip
    rate = Metric("r", "a rate")
    for rung in trace["rungs"]:
        assert "match_win_rate" not in rung  # the hand unit has no matches to win
        got = rung["hand_win_rate"]
        assert got["metric"] == f"hand_win_rate.{rung['strong']}_vs_{rung['weak']}"
        values = rung_games(exp, rung["strong"], rung["weak"], pairs)
        want = estimate(rate, values)
        arm = got["by_arm"]["rules"]
        assert arm["value"] == pytest.approx(want.value, abs=1e-6)
        assert arm["ci95"] == pytest.approx(list(want.ci95), abs=1e-6)
        assert arm["ci95"][0] < arm["value"] < arm["ci95"][1]
        assert data["metrics"][got["metric"]]["value"] == arm["value"]  # the same number
    conn = sqlite3.connect(out / "results.sqlite")
    try:  # per pair: the arm's own game, then two pairings, once on each side
        counts = {n for (n,) in conn.execute("SELECT COUNT(*) FROM matches GROUP BY seq")}
    finally:
        conn.close()
    assert counts == {1 + 2 * 2}
    # the tables: the trace's rungs in order in its own, not again in the skill table
    shown = run(["show", str(out)]).stdout
    skill, _, rest = shown.partition("skill trace, each level against the level below")
    assert "choice_rate" in skill and "_vs_" not in skill.split("skill against luck")[1]
    assert rest.index("easy vs random: hands won") < rest.index("medium vs easy: hands won")
    assert f"{100 * trace['rungs'][0]['hand_win_rate']['by_arm']['rules']['value']:.2f}%" in rest


def test_a_trace_compares_every_arm_rung_by_rung(tmp_path: Path) -> None:
    """In an A/B each arm's own value at every rung, and under ``metrics`` the difference;
    at the match unit the matches won too."""
    data = run_json(["ab", "--base", "iq-1v1", "--candidate-set", "stock=draw", "--bots",
                     "random", "--unit", "match", "--matches", "6", "--skill-trace",
                     "random,easy", "--out", str(tmp_path / "ab")])  # fmt: skip
    (rung,) = data["skill_trace"]["rungs"]
    for measure in ("hand_win_rate", "match_win_rate"):
        name = rung[measure]["metric"]
        assert name == f"{measure}.easy_vs_random"
        by_arm, comparison = rung[measure]["by_arm"], data["metrics"][name]
        assert by_arm["base"]["value"] == comparison["base"]
        assert by_arm["candidate"]["value"] == comparison["candidate"]
    assert "decisiveness" in data["metrics"] and "lead_changes_per_match" in data["metrics"]


def test_the_default_trace_climbs_every_built_in_bot(tmp_path: Path) -> None:
    """``--skill-trace`` alone is random < easy < medium < hard."""
    data = run_json(["measure", "--rules", "iq-1v1", "--hands", "1", "--skill-trace",
                     "--out", str(tmp_path / "t")])  # fmt: skip
    assert data["skill_trace"]["levels"] == ["random", "easy", "medium", "hard"]
    assert [r["strong"] for r in data["skill_trace"]["rungs"]] == ["easy", "medium", "hard"]


def test_a_trace_in_a_file(tmp_path: Path) -> None:
    file = tmp_path / "t.toml"
    file.write_text(
        'hands = 4\nbots = "random"\nskill_trace = ["random", "easy"]\n'
        '[measure]\npreset = "block"\n'
    )
    data = run_json(["run", str(file), "--out", str(tmp_path / "r")])
    assert data["skill_trace"]["levels"] == ["random", "easy"]
    for text, where in (("skill_trace = 3", "skill_trace"), ('skill_trace = ["easy"]',
                        "skill_trace 'easy': give at least two levels")):  # fmt: skip
        file.write_text(f'{text}\n[measure]\npreset = "block"\n')
        res = run(["run", str(file)], 2)
        assert where in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_trace_mistakes_are_one_line_before_anything_is_played(tmp_path: Path) -> None:
    for bad, says in (("easy", "give at least two levels"), ("easy,easy", "given twice"),
                      ("random,wizard", "--skill-trace"),
                      ("random,remote:x", "a remote: bot needs --server")):  # fmt: skip
        res = run(["measure", "--rules", "block", "--skill-trace", bad,
                   "--out", str(tmp_path / "x")], 2)  # fmt: skip
        assert says in res.stderr and len(res.stderr.strip().splitlines()) == 1, (bad, res.stderr)
        assert "Traceback" not in res.stderr
    assert not (tmp_path / "x").exists()  # nothing made


# -- results written before the trace ---------------------------------------------------------


def test_results_written_before_the_trace_still_read(tmp_path: Path) -> None:
    """A directory written by the code before this change (tests/data/README.md) shows and
    reports: every number it printed then is there under today's name (the pairings' win
    rates were ``skill.STRONG_vs_WEAK.MEASURE``, now ``MEASURE.STRONG_vs_WEAK``), and
    decisiveness, which it did not have, comes from its stored hands."""
    out = tmp_path / "old"
    out.mkdir()
    conn = sqlite3.connect(out / "experiment.sqlite")
    conn.executescript((DATA / "experiment-before-skill-trace.sql").read_text())
    conn.close()
    old = json.loads((DATA / "experiment-before-skill-trace.json").read_text())
    new = run_json(["show", str(out)])
    named = set()
    for name, then in old["metrics"].items():
        if name.startswith("skill."):
            _, pairing, measure = name.split(".")
            name = f"{measure}.{pairing}"
        named.add(name)
        now = new["metrics"][name]
        assert (now["base"], now["candidate"]) == (then["base"], then["candidate"]), name
    assert set(new["metrics"]) - named == {"decisiveness"}
    assert "skill_trace" not in new
    exp = build(kind="ab", arms=[make_arm("base", "iq-1v1", [], "b"),
                                 make_arm("candidate", "iq-1v1", ["stock=draw"], "c")],
                bots=["random"], unit="match", hands=None, matches=4, seed=1)  # fmt: skip
    for arm, key in ((0, "base"), (1, "candidate")):
        want = mean_decisiveness(replayed(exp, arm, 4))
        assert new["metrics"]["decisiveness"][key] == pytest.approx(want, abs=1e-6)
    assert "match_win_rate.easy_vs_random" in run(["show", str(out)]).stdout
    # the same command finds its experiment there (its digest is the one stored): complete,
    # it plays nothing and prints the result
    again = run_json(["ab", "--base", "iq-1v1", "--candidate-set", "stock=draw", "--bots",
                      "random", "--unit", "match", "--matches", "4", "--skill", "--skill-bots",
                      "easy:random", "--out", str(out)])  # fmt: skip
    assert again == new
    run(["report", str(out)])
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'data-name="decisiveness"' in page and 'data-name="hand_win_rate.easy_vs_random"' in page
