"""``capicua arena sprt``: the sequential test played end to end, in-process and over the
protocol (the statistics themselves are tests/test_sprt.py)."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from capicua.arena import sprt
from capicua.arena.recorder import commit_match
from capicua.arena.sprt_report import write_sprt_report
from capicua.arena.sprt_runner import (
    STATUS_WIDTH,
    Scoreboard,
    SprtConfig,
    candidate_score,
    status_line,
)
from capicua.arena.store import Results
from capicua.cli import main
from tests.clirunner import cli_runner

FAST = ["--rules", "iq-1v1", "--set", "target=30"]
ROOT = Path(__file__).resolve().parent.parent


def sprt_json(args: list[str], code: int = 0) -> dict[str, Any]:
    res = cli_runner().invoke(main, ["arena", "sprt", *args, "--json"])
    assert res.exit_code == code, (res.output, res.stderr)
    data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return data


def scores_in_order(out: Path) -> list[float]:
    """Pair scores of the complete sets, in schedule order, from the stored matches."""
    results = Results.open_existing(out)
    try:
        by_seq: dict[int, list[Any]] = {}
        for row in results.matches():
            by_seq.setdefault(row.seq, []).append(row)
    finally:
        results.close()
    out_scores = []
    seq = 0
    while len(by_seq.get(seq, ())) == 2:
        out_scores.append(sum(candidate_score(m) for m in by_seq[seq]))
        seq += 1
    return out_scores


@pytest.mark.parametrize(("base", "candidate", "decision"), [("random", "easy", "H1"),
                                                            ("easy", "random", "H0")])  # fmt: skip
def test_a_clear_difference_is_decided_and_stops_there(
    tmp_path: Path, base: str, candidate: str, decision: str
) -> None:
    out = tmp_path / "t"
    data = sprt_json(
        ["--base", base, "--candidate", candidate, *FAST, "--elo0", "-60", "--elo1", "60",
         "--model", "logistic", "--out", str(out)]
    )  # fmt: skip
    assert data["decision"] == decision and data["complete"] is True
    lower, upper = sprt.bounds(0.05, 0.05)
    assert data["bounds"] == [round(lower, 4), round(upper, 4)]
    assert (data["llr"] >= upper) if decision == "H1" else (data["llr"] <= lower)
    assert sum(data["pentanomial"]) == data["pairs"] > 0
    # The stop is where the statistics say the first crossing is, in schedule order.
    scores = scores_in_order(out)
    assert sprt.pentanomial(scores[: data["pairs"]]) == data["pentanomial"]
    stop = sprt.stopping_index(scores, -60.0, 60.0, 0.05, 0.05, "logistic")
    assert stop is not None and stop + 1 == data["pairs"]
    assert data["llr"] == pytest.approx(
        sprt.llr(data["pentanomial"], -60.0, 60.0, "logistic"), abs=1e-3
    )


def test_the_stop_does_not_depend_on_the_workers(tmp_path: Path) -> None:
    args = ["--base", "random", "--candidate", "easy", *FAST, "--elo0", "-60", "--elo1", "60",
            "--model", "logistic"]  # fmt: skip
    one = sprt_json([*args, "--out", str(tmp_path / "one")])
    two = sprt_json([*args, "--workers", "2", "--out", str(tmp_path / "two")])
    assert one["decision"] == two["decision"] == "H1"
    assert (one["pairs"], one["pentanomial"]) == (two["pairs"], two["pentanomial"])


def test_no_decision_within_max_pairs_then_resume_and_refusals(tmp_path: Path) -> None:
    out = tmp_path / "t"
    args = ["--base", "random", "--candidate", "random", *FAST, "--elo0", "0", "--elo1", "5"]
    first = sprt_json([*args, "--max-pairs", "6", "--out", str(out)])
    assert first["decision"] is None and first["pairs"] == 6
    assert first["complete"] is True  # undecided, but the test ran its course
    again = sprt_json([*args, "--max-pairs", "6", "--out", str(out)])
    assert again == first  # resumed: nothing more to play, the same state
    longer = sprt_json([*args, "--max-pairs", "9", "--out", str(out)])
    assert longer["pairs"] == 9 and sum(longer["pentanomial"]) == 9
    assert all(b >= a for a, b in zip(first["pentanomial"], longer["pentanomial"], strict=True))
    res = cli_runner().invoke(
        main, ["arena", "sprt", *args[:-1], "7", "--max-pairs", "9", "--out", str(out)]
    )
    assert res.exit_code == 2 and "other hypotheses" in res.stderr and "elo1" in res.stderr
    # the directory is an arena results directory too
    res = cli_runner().invoke(main, ["arena", "standings", str(out), "--json"])
    assert res.exit_code == 0, res.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--rules", "cutthroat"], "needs two sides"),
        (["--rules", "iq-ffa"], "needs two sides"),
        (["--rules", "nope"], "unknown preset"),
        (["--rules", "block", "--elo0", "5", "--elo1", "0"], "elo0 must be below elo1"),
        (["--rules", "block", "--elo0=-1e300", "--elo1", "1e300"], "--elo0: expected an Elo"),
        (["--rules", "block", "--elo1", "1e400"], "--elo1: expected an Elo difference"),
        (["--rules", "block", "--elo1", "nan"], "--elo1: expected an Elo difference"),
        (["--rules", "block", "--alpha", "0.7"], "--alpha"),
        (["--rules", "block", "--base-option", "iterations=3"], "put a command's arguments"),
        (["--rules", "block", "--candidate", "wizard"], "wizard"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, args: list[str], expected: str) -> None:
    base = ["--base", "easy", "--candidate", "random", "--out", str(tmp_path / "x")]
    if "--base-option" in args:
        base = ["--base", "cmd:true", "--candidate", "random", "--out", str(tmp_path / "x")]
    if "--candidate" in args:
        base = ["--base", "easy", "--out", str(tmp_path / "x")]
    res = cli_runner().invoke(main, ["arena", "sprt", *base, *args])
    assert res.exit_code == 2, (res.output, res.stderr)
    assert expected in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "x").exists()  # refused before anything is created


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


def test_over_the_protocol_with_a_python_bot(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "easybots.py").write_text(EASY_SDK_BOT)
    monkeypatch.chdir(tmp_path)
    common = [*FAST, "--elo0", "-60", "--elo1", "60", "--model", "logistic"]
    remote = sprt_json(
        ["--base", "random", "--candidate", "python:easybots:Easy", *common, "--out", "remote"]
    )
    assert remote["decision"] == "H1"
    results = Results.open_existing(tmp_path / "remote")
    try:
        rows = results.matches()
        assert rows and all(r.server_match for r in rows)  # played on the server
        assert {r.termination for r in rows} <= {"normal", "hand_limit"}
    finally:
        results.close()


def test_an_experiment_directory_and_an_sprt_directory_never_mix(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    res = cli_runner().invoke(main, ["experiment", "ab", "--base", "block", "--hands", "3",
                                     "--out", str(exp), "--quiet"])  # fmt: skip
    assert res.exit_code == 0, res.stderr
    res = cli_runner().invoke(main, ["arena", "sprt", "--base", "easy", "--candidate", "random",
                                     "--rules", "block", "--out", str(exp)])  # fmt: skip
    assert res.exit_code == 2 and "holds an experiment's results" in res.stderr
    # the SPRT wrote nothing there: the results are the experiment's, as it left them
    assert not (exp / "sprt.json").exists()
    results = Results.open_existing(exp)
    try:
        assert results.study() == "experiment" and len(results.matches()) == 6
        assert [b.name for b in results.bots()] == ["random"]
    finally:
        results.close()
    sp = tmp_path / "sp"
    sprt_json(["--base", "random", "--candidate", "random", *FAST, "--max-pairs", "2",
               "--out", str(sp)])  # fmt: skip
    res = cli_runner().invoke(main, ["experiment", "ab", "--base", "block", "--hands", "3",
                                     "--out", str(sp)])  # fmt: skip
    assert res.exit_code == 2 and "holds a tournament's or an SPRT's results" in res.stderr
    assert not (sp / "experiment.sqlite").exists()


def test_over_the_protocol_the_options_travel_with_the_bots(tmp_path: Path) -> None:
    """A built-in bot's process gets the test's options (hard: fixed iterations), and a
    python: bot its constructor's; two built-ins in-process keep a plain spec (and digest)."""
    from capicua.arena.sprt_runner import BASE, CANDIDATE, SprtConfig, build_run, parse_bot
    from capicua.arena.supervisor import bot_argv
    from capicua.engine.rules import load_preset

    def run(base: str, candidate: str, options: dict[str, dict[str, Any]]) -> Any:
        return build_run(
            base=parse_bot("--base", base, BASE),
            candidate=parse_bot("--candidate", candidate, CANDIDATE),
            preset="block", overrides=(), ruleset=load_preset("block"),
            test=SprtConfig(0, 5, 0.05, 0.05, "normalized"), max_pairs=10, seed=1,
            concurrency=1, workers=1, time_limit_ms=1000, server=None, base_dir=tmp_path,
            options=options,
        )  # fmt: skip

    mixed = run("hard", "python:mybot:Mine", {CANDIDATE: {"depth": 3}})
    hard, mine = mixed.tournament.bot(BASE), mixed.tournament.bot(CANDIDATE)
    assert hard.options["iterations"] == 200 and mine.options == {"depth": 3}
    assert "--option" in bot_argv(hard) and "iterations=200" in bot_argv(hard)
    argv = bot_argv(mine)
    assert argv[argv.index("--option") + 1] == "depth=3"
    local = run("hard", "easy", {BASE: {"iterations": 50}})
    assert local.in_process and local.tournament.bot(BASE).options == {}


@pytest.mark.parametrize("as_json", [True, False])
def test_a_stopped_test_says_on_stdout_that_it_is_incomplete(tmp_path: Path, as_json: bool) -> None:
    """SIGTERM (as Ctrl-C) before a decision: exit 130, and what stdout carries says the
    test is unfinished: ``complete: false`` in the JSON, "incomplete" in the verdict line,
    never a bare "no decision after N pairs"."""
    out = tmp_path / "t"
    mode = "--json" if as_json else "--quiet"
    args = [sys.executable, "-m", "capicua", "arena", "sprt", "--base", "random",
            "--candidate", "random", *FAST, "--elo0", "0", "--elo1", "5",
            "--max-pairs", "20000", "--out", str(out), mode]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(2400):  # bounded: a few pairs take well under a second idle
            if _pairs_stored(out) >= 4 or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    last = stdout.strip().splitlines()[-1]
    if as_json:
        data = json.loads(last)
        assert data["complete"] is False and data["decision"] is None
        assert data["max_pairs"] == 20000 and data["pairs"] < 20000
    else:
        assert last.startswith("incomplete: no decision yet after "), stdout
        assert "of at most 20,000" in last and "run the same command again" in last


def _pairs_stored(out: Path) -> int:
    if not (out / "results.sqlite").exists():
        return 0
    try:
        with sqlite3.connect(out / "results.sqlite") as conn:
            return int(conn.execute("SELECT count(*) FROM matches").fetchone()[0]) // 2
    except sqlite3.Error:
        return 0


# -- what the command prints --------------------------------------------------------------------


def test_the_default_test_says_how_long_it_is_expected_to_take(tmp_path: Path) -> None:
    """The header (stderr) and --json give the average pairs of the default test at either
    bound, and they agree with a simulation of it (Wald's approximation, which the
    command prints, against simulated runs)."""
    args = ["arena", "sprt", "--base", "random", "--candidate", "random", *FAST,
            "--max-pairs", "2"]  # fmt: skip
    res = cli_runner().invoke(main, [*args, "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.stderr
    head = res.stderr.splitlines()[0]
    assert "H0 0, H1 10 (normalized)" in head and "LLR bounds ±2.94" in head
    found = re.search(r"expected pairs ~([\d,]+) at elo0, ~([\d,]+) at elo1", head)
    assert found is not None, head
    assert found.groups() == ("3,200", "3,200")
    assert "more than --max-pairs 2: likely undecided" in head
    data = sprt_json([*args[2:], "--out", str(tmp_path / "b")])
    at = data["expected_pairs"]
    assert set(at) == {"at_elo0", "at_elo1"}
    for key, truth in (("at_elo0", sprt.DEFAULT_ELO0), ("at_elo1", sprt.DEFAULT_ELO1)):
        assert at[key] == round(sprt.expected_pairs(sprt.DEFAULT_ELO0, sprt.DEFAULT_ELO1, truth))
        sim = sprt.simulate(sprt.DEFAULT_ELO0, sprt.DEFAULT_ELO1, true_elo=truth,
                            max_pairs=sprt.DEFAULT_MAX_PAIRS, runs=150, seed=11)  # fmt: skip
        assert at[key] == pytest.approx(sim.mean_pairs, rel=0.15), (key, sim)
    # the defaults the simulation was run at are the command's
    res = cli_runner().invoke(main, ["arena", "sprt", "--help"], terminal_width=200)
    assert res.exit_code == 0
    help_text = " ".join(res.stdout.split())
    for option, value in (("--elo0", "0.0"), ("--elo1", "10.0"), ("--max-pairs", "12000")):
        assert re.search(rf"{option} [^\[]*\[default: {value}\]", help_text), option
    assert (sprt.DEFAULT_ELO0, sprt.DEFAULT_ELO1, sprt.DEFAULT_MAX_PAIRS) == (0.0, 10.0, 12_000)


def test_three_pairs_show_no_point_interval(tmp_path: Path) -> None:
    """From a handful of pairs the Elo interval is the wide small-sample one and nElo has
    none: null in the JSON, n/a on the progress line."""
    args = ["--base", "random", "--candidate", "easy", *FAST, "--max-pairs", "3"]
    data = sprt_json([*args, "--out", str(tmp_path / "t")])
    assert data["pairs"] == 3 and data["small_sample"] is True
    lo, hi = data["elo_ci95"]
    assert hi - lo > 300
    assert data["nelo_ci95"] == [None, None]
    res = cli_runner().invoke(main, ["arena", "sprt", *args, "--out", str(tmp_path / "t")])
    assert res.exit_code == 0, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("pairs 3 ["), last
    assert last.endswith("±n/a") or last.endswith("nElo n/a"), last


def _monitor(counts: list[int], elo0: float = 0.0, elo1: float = 10.0) -> Scoreboard:
    monitor = Scoreboard(SprtConfig(elo0, elo1, 0.05, 0.05, "normalized"), 10**6)
    monitor.scores = [s for s, n in zip(sprt.PAIR_SCORES, counts, strict=True) for _ in range(n)]
    monitor.status = sprt.status(counts, elo0, elo1)
    return monitor


@pytest.mark.parametrize(
    "counts",
    [
        [23, 0, 125, 0, 133],  # the documented medium-vs-easy test
        [2, 0, 1, 0, 0],
        [0, 0, 0, 0, 3],
        [2389, 0, 7234, 0, 2377],  # a default test that reached --max-pairs
        [1750, 1800, 4980, 1720, 1750],  # the same with drawn matches
        [17500, 7500, 50000, 7500, 17500],  # 100,000 pairs
        [0, 1, 3, 40, 9000],  # lopsided: huge Elo and nElo
        [0, 0, 0, 0, 3000],  # every pair the same
    ],
)
def test_status_lines_fit_a_terminal(counts: list[int]) -> None:
    line = status_line(_monitor(counts))
    assert len(line) <= STATUS_WIDTH == 100, (len(line), line)
    assert line.startswith(f"pairs {sum(counts):,} [{' '.join(map(str, counts))}]  LLR ")
    assert "\n" not in line


def test_the_documented_status_lines_and_json_are_what_the_command_prints(
    tmp_path: Path,
) -> None:
    """docs/regression-testing.md shows the progress lines and the --json object of an SPRT:
    the lines are what status_line prints for their pentanomials, the object has every
    key the command prints, in its order, and the statistics of its pentanomial."""
    doc = (ROOT / "docs" / "regression-testing.md").read_text(encoding="utf-8")
    section = doc[doc.index("## 6. SPRT for bot changes") :]
    lines = [ln for ln in section.splitlines() if re.match(r"pairs [\d,]+ \[", ln)]
    assert len(lines) >= 2
    for line in lines:
        found = re.search(r"\[(\d+) (\d+) (\d+) (\d+) (\d+)\]", line)
        assert found is not None, line
        counts = [int(g) for g in found.groups()]
        assert line == status_line(_monitor(counts)), line
    sample = next(ln for ln in section.splitlines() if ln.startswith('{"complete"'))
    shown = json.loads(sample)
    real = sprt_json(["--base", "random", "--candidate", "random", *FAST, "--max-pairs", "1",
                      "--out", str(tmp_path / "t")])  # fmt: skip
    assert list(shown) == list(real)
    est = sprt.estimate(shown["pentanomial"])
    assert shown["pairs"] == sum(shown["pentanomial"])
    assert shown["nelo"] == round(est.nelo, 3) and shown["elo"] == round(est.elo, 3)
    assert shown["nelo_ci95"] == [round(v, 3) for v in est.nelo_ci95]
    assert shown["llr"] == round(sprt.llr(shown["pentanomial"], shown["elo0"], shown["elo1"]), 4)
    assert shown["expected_pairs"] == {
        "at_elo0": round(sprt.expected_pairs(shown["elo0"], shown["elo1"], shown["elo0"])),
        "at_elo1": round(sprt.expected_pairs(shown["elo0"], shown["elo1"], shown["elo1"])),
    }
    assert shown["max_pairs"] == sprt.DEFAULT_MAX_PAIRS


def test_an_interrupted_test_prints_the_sets_its_directory_holds(tmp_path: Path) -> None:
    """Ctrl-C can land between a set's commit and its count: the command's last figures are
    still those of the sets stored, the same as the report's (it said 24 pairs where the
    report, reading the directory, said 27). The interrupt is delivered at that very moment:
    when the third match of the run is about to be committed, the first set is stored
    whole and the run has not counted it yet."""
    out = tmp_path / "t"
    commits = [0]

    def interrupt_at_the_third_commit(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is commit_match.__code__:
            commits[0] += 1
            if commits[0] == 3:
                sys.settrace(None)
                raise KeyboardInterrupt
        return None

    args = ["arena", "sprt", "--base", "random", "--candidate", "easy", *FAST, "--elo0", "0",
            "--elo1", "5", "--out", str(out), "--json"]  # fmt: skip
    sys.settrace(interrupt_at_the_third_commit)
    try:
        res = cli_runner().invoke(main, args)
    finally:
        sys.settrace(None)
    assert commits[0] == 3 and res.exit_code == 130, (res.output, res.stderr)
    data = json.loads(res.stdout.strip().splitlines()[-1])
    assert data["complete"] is False and data["pairs"] == 1 == len(scores_in_order(out))
    html = write_sprt_report(out).read_text(encoding="utf-8")
    assert "no decision yet after 1 pairs" in html
    assert re.search(r"<th>pairs counted</th><td>1</td>", html), html
