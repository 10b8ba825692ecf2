"""``capicua experiment``: A/B experiments and sweeps on rules, checked end to end.

Real play throughout: in-process experiments run the engine and the built-in bots; the
protocol experiment runs an embedded server and a real ``python:`` bot process. Metrics are
checked against an independent count over the engine's typed hand records.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from capicua.arena.experiment.config import (
    ExperimentError,
    build,
    load_experiment,
    make_arm,
    parse_skill,
)
from capicua.arena.experiment.metrics import Metric, compare, holm, metrics_for
from capicua.arena.experiment.play import play_match, run_experiment
from capicua.arena.output import SilentDisplay
from capicua.arena.schedule import MatchSpec, deal_seed
from capicua.arena.store import Results
from capicua.bench.experiment import skill_experiment
from capicua.cli import main
from capicua.engine.game import Game
from capicua.engine.records import Draw, HandEnd, Pass, Play
from tests.clirunner import cli_runner
from tests.tooling import alive, descendants

PY = sys.executable
MEAN = Metric("x", "a mean", rate=False, unit="points", high=None)
REQUIRED = {
    "block_rate",
    "points_per_hand",
    "moves_per_hand",
    "passes_per_hand",
    "draws_per_hand",
    "opener_side_win_rate",
}


def run_json(args: list[str]) -> dict[str, Any]:
    """Run ``capicua experiment ...`` and return its last stdout line as JSON."""
    res = cli_runner().invoke(main, ["experiment", *args, "--json"])
    assert res.exit_code == 0, (res.output, res.stderr)
    data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return data


def run_error(args: list[str]) -> str:
    res = cli_runner().invoke(main, ["experiment", *args])
    assert res.exit_code == 2, (res.output, res.stderr)
    assert "Traceback" not in res.stderr
    return res.stderr.strip()


def experiment(**kw: Any) -> Any:
    """An A/B experiment from keyword arguments (base/candidate as (preset, overrides))."""
    base: tuple[str, list[str]] = kw.pop("base", ("block", []))
    cand: tuple[str, list[str]] = kw.pop("candidate", base)
    kw.setdefault("bots", ["random"])
    kw.setdefault("unit", None)
    kw.setdefault("hands", None)
    kw.setdefault("matches", None)
    kw.setdefault("seed", 1)
    return build(
        kind="ab",
        arms=[make_arm("base", *base, "base"), make_arm("candidate", *cand, "candidate")],
        **kw,
    )


# -- A/A and the same deals -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "bots", "preset"),
    [("hand", "easy", "dominican"), ("match", "medium", "iq-1v1"), ("hand", "random", "cuban")],
)
def test_an_a_a_run_gives_exactly_zero_differences(
    tmp_path: Path, unit: str, bots: str, preset: str
) -> None:
    size = ["--hands", "60"] if unit == "hand" else ["--matches", "6"]
    out = run_json(
        ["ab", "--base", preset, "--bots", bots, "--unit", unit, *size, "--out", str(tmp_path)]
    )
    assert out["unit"] == unit and out["pairs"] == int(size[1])
    assert set(out["metrics"]) >= REQUIRED
    assert ("hands_per_match" in out["metrics"]) == (unit == "match")
    for name, m in out["metrics"].items():
        assert m["diff"] == 0.0 and m["ci95"] == [0.0, 0.0], name
        assert m["base"] == m["candidate"] and not m["significant"]
    assert out["significant"] == []


def test_both_arms_play_the_same_deals_with_the_same_bots(tmp_path: Path) -> None:
    """Under a scoring-only change, random bots make the very same plays on the same deal:
    the play metrics are identical and points differ by exactly the bonus change."""
    exp = experiment(
        base=("dominican", []),
        candidate=("dominican", ["finish_bonus.capicua.effect=add:55"]),
        hands=200,
    )
    games = [Game.from_preset(a.preset, a.played_overrides("hand")) for a in exp.arms]
    for pair in range(20):
        seed = deal_seed(exp.seed, pair)
        a, b = (play_match(exp, g, seed) for g in games)
        assert a.log.record(0).deals == b.log.record(0).deals
        assert a.log.record(0).events == b.log.record(0).events
    out = run_json(
        ["ab", "--base", "dominican", "--candidate-set", "finish_bonus.capicua.effect=add:55",
         "--hands", "200", "--out", str(tmp_path)]
    )  # fmt: skip
    m = out["metrics"]
    for name in ("block_rate", "moves_per_hand", "passes_per_hand", "bonus_rate.capicua"):
        assert m[name]["diff"] == 0.0, name
    rate = m["bonus_rate.capicua"]["base"]
    assert rate > 0
    assert m["points_per_hand"]["diff"] == pytest.approx(25 * rate)  # +30 became +55
    assert m["points_per_hand"]["significant"]
    assert [s["metric"] for s in out["significant"]] == ["points_per_hand"]


# -- metrics against an independent count -----------------------------------------------------


def _independent(exp: Any, pairs: int) -> list[dict[str, float]]:
    """Per arm: block rate, points, moves, passes and draws per hand, and the opening
    side's win rate, counted from the engine's typed records (not from hand_summary)."""
    out = []
    for arm in exp.arms:
        game = Game.from_preset(arm.preset, arm.played_overrides(exp.unit))
        hands = blocked = points = moves = passes = draws = opener_won = 0
        bonus: dict[str, int] = {}
        for pair in range(pairs):
            state = play_match(exp, game, deal_seed(exp.seed, pair))
            for i in range(len(state.log.hands)):
                rec = state.log.record(i)
                res = rec.result
                assert res is not None
                hands += 1
                blocked += res.end is HandEnd.BLOCK
                points += res.points
                plays = sum(isinstance(e, Play) for e in rec.events)
                p = sum(isinstance(e, Pass) for e in rec.events)
                moves += plays + p
                passes += p
                draws += sum(isinstance(e, Draw) for e in rec.events)
                first = next(e for e in rec.events if isinstance(e, Play))
                opener_won += res.winner == game.ruleset.side_of(first.seat)
                for name in res.bonuses:
                    bonus[name] = bonus.get(name, 0) + 1
        out.append(
            {
                "block_rate": blocked / hands,
                "points_per_hand": points / hands,
                "moves_per_hand": moves / hands,
                "passes_per_hand": passes / hands,
                "draws_per_hand": draws / hands,
                "opener_side_win_rate": opener_won / hands,
                **{f"bonus_rate.{k}": v / hands for k, v in bonus.items()},
                "hands_per_match": hands / pairs,
            }
        )
    return out


@pytest.mark.parametrize(
    ("preset", "overrides", "unit", "size"),
    [
        ("el-dominito-2p", ["target=60"], "match", 12),
        ("iq-1v1", ["finish_bonus.capicua.effect=multiply:3"], "hand", 150),
    ],
)
def test_metrics_match_an_independent_count(
    tmp_path: Path, preset: str, overrides: list[str], unit: str, size: int
) -> None:
    exp = experiment(
        base=(preset, []), candidate=(preset, overrides), bots=["easy", "random"],
        unit=unit, hands=size if unit == "hand" else None,
        matches=size if unit == "match" else None,
    )  # fmt: skip
    args = ["ab", "--base", preset, "--bots", "easy,random", "--unit", unit]
    args += [x for o in overrides for x in ("--candidate-set", o)]
    args += ["--hands" if unit == "hand" else "--matches", str(size), "--out", str(tmp_path)]
    out = run_json(args)
    expected = _independent(exp, size)
    for name, m in out["metrics"].items():
        for arm, key in ((0, "base"), (1, "candidate")):
            if name in expected[arm]:
                assert m[key] == pytest.approx(expected[arm][name], abs=1e-6), (name, key)
    if unit == "match":
        assert out["metrics"]["draws_per_hand"]["base"] > 0  # drawing from the stock counted


# -- statistics --------------------------------------------------------------------------------


def test_paired_comparison_is_the_paired_t_with_one_hand_per_pair() -> None:
    base = [(3.0, 1.0), (5.0, 1.0), (4.0, 1.0), (8.0, 1.0)]
    cand = [(4.0, 1.0), (7.0, 1.0), (4.0, 1.0), (11.0, 1.0)]
    c = compare(MEAN, base, cand)
    d = [1.0, 2.0, 0.0, 3.0]  # per-pair differences
    mean = sum(d) / 4
    sd = (sum((v - mean) ** 2 for v in d) / 3) ** 0.5
    assert c.diff == pytest.approx(mean)
    assert c.se == pytest.approx(sd / 2)
    # Student's t with n - 1 = 3 degrees of freedom, not the normal's 1.96: at 4 pairs the
    # normal interval is far too narrow
    assert c.ci95 == pytest.approx(stats.t.interval(0.95, 3, loc=mean, scale=sd / 2), abs=1e-9)
    assert c.p == pytest.approx(stats.ttest_rel([v[0] for v in cand], [v[0] for v in base]).pvalue)
    same = compare(MEAN, base, base)  # no pair differs: a bound, not [0, 0]
    assert same.identical and same.diff == 0.0 and same.p == 1.0 and same.exact
    assert same.ci95[0] == -same.ci95[1] and same.ci95[1] > 0


def test_ratio_comparison_uses_the_pairs_as_clusters() -> None:
    # Two pairs of matches with different hand counts: the arm's value is sum(y)/sum(x).
    base = [(10.0, 2.0), (30.0, 4.0)]
    cand = [(12.0, 2.0), (33.0, 5.0)]
    c = compare(MEAN, base, cand)
    assert c.base == pytest.approx(40 / 6) and c.candidate == pytest.approx(45 / 7)
    assert c.diff == pytest.approx(45 / 7 - 40 / 6)
    rb, rc = 40 / 6, 45 / 7
    u = [(12 - rc * 2) / 3.5 - (10 - rb * 2) / 3, (33 - rc * 5) / 3.5 - (30 - rb * 4) / 3]
    mean = sum(u) / 2
    var = sum((v - mean) ** 2 for v in u)
    assert c.se == pytest.approx((var / 2) ** 0.5)


def test_holm_controls_the_family() -> None:
    assert holm([0.01, 0.04, 0.03]) == [True, False, False]  # 0.01 <= .05/3; 0.03 > .05/2
    assert holm([0.001, 0.02, 0.04]) == [True, True, True]
    assert holm([0.2, 0.01]) == [False, True]
    assert holm([]) == []


def test_bonus_rates_cover_every_bonus_of_either_ruleset() -> None:
    base = make_arm("base", "block", [], "b").ruleset
    cand = make_arm("c", "iq-1v1", [], "c").ruleset
    names = {m.name for m in metrics_for("hand", [base, cand])}
    assert {f"bonus_rate.{b.name}" for b in cand.finish_bonus} <= names


# -- resume, refusal, files --------------------------------------------------------------------


class _StopAfter(SilentDisplay):
    """Interrupts the run with Ctrl-C's signal once ``n`` pairs (of two matches) are
    committed."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.matches = 0

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        self.matches += 1
        if self.matches == 2 * self.n:
            os.kill(os.getpid(), signal.SIGINT)


def complete_pairs(out: Path) -> int:
    """The pairs of two matches recorded whole in ``out``."""
    results = Results.open_existing(out)
    try:
        return results.complete_sets(2)
    finally:
        results.close()


def test_an_interrupted_run_resumes_to_the_same_result(tmp_path: Path) -> None:
    exp = experiment(candidate=("block", ["block_tie=opening_side"]), hands=400, bots=["easy"])
    first = run_experiment(exp, tmp_path / "cut", _StopAfter(40))
    assert first.interrupted and 40 <= first.played < 400
    kept = complete_pairs(tmp_path / "cut")
    assert kept == first.played
    # Every output of the partial result says it is partial (JSON, tables, report).
    partial = run_json(["show", str(tmp_path / "cut")])
    assert partial["complete"] is False and partial["planned_pairs"] == 400
    assert partial["pairs"] + partial["excluded_pairs"] == kept
    shown = cli_runner().invoke(main, ["experiment", "show", str(tmp_path / "cut")])
    assert shown.exit_code == 0, shown.output
    assert f"incomplete: {kept} of 400 pairs recorded" in shown.stdout
    page = cli_runner().invoke(main, ["experiment", "report", str(tmp_path / "cut")])
    assert page.exit_code == 0, page.output
    html = (tmp_path / "cut" / "report.html").read_text()
    assert 'id="incomplete"' in html and f"incomplete: {kept} of 400 pairs recorded" in html
    second = run_experiment(exp, tmp_path / "cut")
    assert not second.interrupted and second.already == kept
    assert second.played == 400 - kept
    cut = run_json(["show", str(tmp_path / "cut")])
    assert cut["complete"] is True and cut["planned_pairs"] == 400
    shown = cli_runner().invoke(main, ["experiment", "show", str(tmp_path / "cut")])
    assert "incomplete" not in shown.stdout
    cli_runner().invoke(main, ["experiment", "report", str(tmp_path / "cut")])
    assert 'id="incomplete"' not in (tmp_path / "cut" / "report.html").read_text()
    whole = run_json(
        ["ab", "--base", "block", "--candidate-set", "block_tie=opening_side", "--bots",
         "easy", "--hands", "400", "--out", str(tmp_path / "whole")]
    )  # fmt: skip
    assert cut["metrics"] == whole["metrics"]


def test_a_different_experiment_in_the_same_directory_is_refused(tmp_path: Path) -> None:
    run_json(["ab", "--base", "block", "--hands", "20", "--out", str(tmp_path)])
    err = run_error(["ab", "--base", "block", "--hands", "30", "--out", str(tmp_path)])
    assert "holds a different experiment" in err and "pairs" in err
    again = run_json(["ab", "--base", "block", "--hands", "20", "--out", str(tmp_path)])
    assert again["pairs"] == 20  # the same one again just prints the result


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["ab", "--base", "nope"], "unknown preset 'nope'"),
        (["ab", "--base", "block", "--candidate-set", "hand_sise=3"], "hand_sise: unknown knob"),
        (["ab", "--base", "block", "--unit", "match", "--hands", "5"], "--hands"),
        (["ab", "--base", "block", "--bots", "easy,easy,easy"], "give 1, 2 or 4 bots"),
        (["ab", "--base", "block", "--bots", "wizard"], "wizard"),
        (["ab", "--base", "block", "--bot-option", "hard.nope=1"], "nope"),
        (["ab", "--base", "block", "--candidate", "cutthroat"], "3 seats"),
        (["ab", "--base", "block", "--bots", "remote:friend"], "--server"),
        (["sweep", "--rules", "block", "--knob", "target", "--values", "100"], "two values"),
        (["show", "/nonexistent/dir"], "no experiment results"),
        (["report", "/nonexistent/dir"], "no experiment results"),
    ],
)
def test_bad_input_is_one_clear_line(args: list[str], expected: str) -> None:
    err = run_error(args)
    assert expected in err and len(err.splitlines()) == 1, err


def test_a_toml_file_runs_an_a_b_and_a_sweep(tmp_path: Path) -> None:
    ab = tmp_path / "ab.toml"
    ab.write_text(
        'name = "tie rule"\nunit = "hand"\nhands = 80\nbots = ["easy"]\n'
        '[base]\npreset = "block"\n[candidate]\npreset = "block"\n'
        'overrides = ["block_tie=opening_side"]\n'
    )
    out = run_json(["run", str(ab), "--out", str(tmp_path / "ab")])
    assert out["kind"] == "ab" and out["pairs"] == 80
    assert out["metrics"]["no_winner_rate"]["candidate"] == 0.0  # the opening side wins ties
    same = load_experiment(ab)
    assert same.digest() == load_experiment(ab).digest()
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'unit = "match"\nmatches = 5\nbots = "random"\n[bot_options.hard]\niterations = 5\n'
        '[sweep]\npreset = "block"\nknob = "target"\nvalues = [50, 100, 150]\n'
    )
    out = run_json(["run", str(sweep), "--out", str(tmp_path / "sweep")])
    assert out["kind"] == "sweep" and out["values"] == ["50", "100", "150"]
    hpm = out["metrics"]["hands_per_match"]
    assert hpm["by_value"]["150"]["candidate"] > hpm["by_value"]["100"]["candidate"] > hpm["base"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[base]\npreset = "block"\n[candidate]\npreset = "block"\nbogus = 1\n')
    err = run_error(["run", str(bad)])
    assert "candidate.bogus: unknown key" in err


def test_the_sweep_of_the_docs_with_random_bots(tmp_path: Path) -> None:
    out = run_json(
        ["sweep", "--rules", "dominican", "--knob", "finish_bonus.capicua.effect", "--values",
         "add:0,add:25,add:50", "--hands", "300", "--out", str(tmp_path)]
    )  # fmt: skip
    m = out["metrics"]
    rate = m["bonus_rate.capicua"]["base"]
    for label, extra in (("add:25", 25), ("add:50", 50)):
        assert m["bonus_rate.capicua"]["by_value"][label]["diff"] == 0.0  # random: no aiming
        points = m["points_per_hand"]["by_value"][label]["diff"]
        assert points == pytest.approx(extra * rate, abs=1e-4)


# -- over the protocol -------------------------------------------------------------------------

EASY_SDK_BOT = """
from capicua.bots.easy import EasyBot
from capicua.client import Bot

class Easy(Bot):
    def __init__(self):
        super().__init__()
        self.easy = EasyBot()

    def choose(self, observation, legal_actions):
        return self.easy.choose(observation, legal_actions)
"""


def test_a_protocol_bot_plays_exactly_as_in_process(tmp_path: Path, monkeypatch: Any) -> None:
    """The built-in easy bot behind the SDK, as a real process over an embedded server,
    gives the same results as the built-in easy bot in-process (it is deterministic)."""
    (tmp_path / "easybots.py").write_text(EASY_SDK_BOT)
    monkeypatch.chdir(tmp_path)
    common = ["--base", "block", "--candidate-set", "block_tie=opening_side", "--hands", "12"]
    remote = run_json(["ab", *common, "--bots", "python:easybots:Easy", "--out", "remote"])
    local = run_json(["ab", *common, "--bots", "easy", "--out", "local"])
    assert remote["pairs"] == 12 and remote["excluded_pairs"] == 0
    assert remote["metrics"] == local["metrics"]
    assert (tmp_path / "remote" / "results.sqlite").is_file()
    again = run_json(["ab", *common, "--bots", "python:easybots:Easy", "--out", "remote"])
    assert again["metrics"] == remote["metrics"]  # resumed: nothing to play, same answer


def test_bad_bot_options_and_units_in_build() -> None:
    with pytest.raises(ExperimentError, match="--matches"):
        experiment(unit="hand", matches=3)
    with pytest.raises(ExperimentError, match="bot_options.hard"):
        experiment(bot_options={"hard": {"search": "sideways"}})


def test_bench_experiment_json_names_the_four_rates() -> None:
    """A tiny real run of `capicua bench experiment`, checked for structure (never speed)."""
    res = cli_runner().invoke(
        main, ["bench", "experiment", "--json", "--hands", "40", "--repeat", "2"]
    )
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["preset"] == "block" and report["repeat"] == 2
    for key in ("random", "easy", "engine", "skill"):
        assert len(report["runs"][key]) == 2 and all(r > 0 for r in report["runs"][key])
    for key in ("experiment_random_hands_per_s", "experiment_easy_hands_per_s",
                "engine_random_hands_per_s", "experiment_skill_pairs_per_s"):  # fmt: skip
        assert report[key] > 0
    # 40 // 200 pairs, at least one, of hard against random on iq-1v1
    assert report["skill"] == {"preset": "iq-1v1", "skill_bots": ["hard:random"], "pairs": 1}
    ratio = report["engine_random_hands_per_s"] / report["experiment_random_hands_per_s"]
    assert report["ratio_engine_to_random"] == pytest.approx(ratio, rel=1e-2)
    assert report["goal_met"] == (report["ratio_engine_to_random"] <= 2.0)


def test_the_benchs_skill_experiment_is_the_commands() -> None:
    """The bench's --skill run is `experiment ab --base iq-1v1 --skill --skill-bots
    hard:random` as the command line builds it: the same games, whatever the bench adds."""
    by_command = build(
        kind="ab",
        arms=[
            make_arm("base", "iq-1v1", [], "--base"),
            make_arm("candidate", "iq-1v1", [], "--candidate"),
        ],
        bots=["random"],
        unit=None,
        hands=3,
        matches=None,
        seed=5,
        skill=parse_skill("hard:random"),
    )
    bench = skill_experiment(3, 5)
    assert bench.skill == (("hard", "random"),)
    assert dataclasses.replace(bench, name=by_command.name) == by_command


# -- signals and process hygiene ---------------------------------------------------------------


def recorded_pairs(out: Path) -> int:
    path = out / "results.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        try:
            return int(conn.execute("SELECT count(DISTINCT seq) FROM matches").fetchone()[0])
        except sqlite3.Error:
            return 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
@pytest.mark.parametrize("how", ["sigterm", "kill"])
def test_a_stopped_run_keeps_its_pairs_and_leaves_no_worker(tmp_path: Path, how: str) -> None:
    """Two worker processes playing medium; SIGTERM stops the run as Ctrl-C does (exit 130,
    pairs kept), kill -9 leaves no orphan worker; either way the same command resumes."""
    out = tmp_path / "out"
    args = [PY, "-m", "capicua", "experiment", "ab", "--base", "block", "--bots", "medium",
            "--hands", "3000", "--workers", "2", "--out", str(out), "--json"]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while recorded_pairs(out) < 1:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        workers = descendants(proc.pid)
        assert len(workers) >= 2
        if how == "sigterm":
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 130
            # the partial result printed says so
            printed = json.loads(proc.communicate()[0].strip().splitlines()[-1])
            assert printed["complete"] is False and printed["planned_pairs"] == 3000
        else:
            proc.kill()
            proc.wait()
        for _ in range(200):
            if not any(alive(p) for p in workers):
                break
            time.sleep(0.05)
        assert [p for p in workers if alive(p)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    kept = recorded_pairs(out)
    assert 1 <= kept < 3000
    assert complete_pairs(out) == kept  # whole pairs only: chunks are transactions
