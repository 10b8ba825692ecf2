"""``capicua arena sprt``: the sequential test played end to end, in-process and over the
protocol (the statistics themselves are tests/test_sprt.py)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from capicua.arena import sprt
from capicua.arena.sprt_runner import candidate_score
from capicua.arena.store import Results
from capicua.cli import main
from tests.clirunner import cli_runner

FAST = ["--rules", "iq-1v1", "--set", "target=30"]


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
    assert not (exp / "sprt.json").exists() and not (exp / "results.sqlite").exists()
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
