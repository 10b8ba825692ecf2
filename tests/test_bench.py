"""``capicua bench engine`` with tiny settings: the shape of its output, never its speed."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from typing import Any

import pytest
from click.testing import Result

from capicua.bench import engine as bench
from capicua.cli import main
from capicua.engine.game import Game
from capicua.engine.records import Pass, Play
from capicua.engine.rules import load_preset
from tests.clirunner import cli_runner

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
TINY = ["--seconds", "0.02", "--repeat", "1"]
PROGRAM = [sys.executable, "-c", "from capicua.cli import main; main(prog_name='capicua')"]
HAS_DOMINOES = importlib.util.find_spec("dominoes") is not None


def run(*args: str) -> Result:
    return cli_runner().invoke(main, ["bench", "engine", *args], env=ENV, catch_exceptions=False)


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _check_rows(rows: dict[str, Any], names: list[str]) -> None:
    assert list(rows) == names
    for row in rows.values():
        assert set(row) == {"hands_per_s", "moves_per_hand"}
        assert row["hands_per_s"] > 0
        assert row["moves_per_hand"] > 0


def test_json_shape() -> None:
    out = run_json(*TINY, "--presets", "block,cuban")
    _check_rows(out["presets"], ["block", "cuban"])
    assert "compare" not in out
    assert out["repeat"] == 1
    assert out["python"]
    assert out["machine"]["nproc"] >= 1


def test_table_for_humans() -> None:
    result = run(*TINY, "--presets", "draw")
    assert result.exit_code == 0, result.output
    assert "draw" in result.stdout
    assert "hands/s" in result.stdout


def test_default_presets_are_every_preset() -> None:
    assert bench.parse_presets(None) == sorted(bench.parse_presets(None))
    assert len(bench.parse_presets(None)) == 18
    assert bench.parse_presets(" block , cuban,block") == ["block", "cuban"]


@pytest.mark.parametrize(
    "args",
    [
        ["--presets", "nope"],
        ["--presets", ","],
    ],
)
def test_bad_presets_exit_2(args: list[str]) -> None:
    result = run(*TINY, *args)
    assert result.exit_code == 2
    assert "capicua: error:" in result.stderr


def test_bad_numbers_are_usage_errors() -> None:
    assert run("--seconds", "0").exit_code == 2
    assert run("--repeat", "0").exit_code == 2


def test_moves_counted_from_the_logs() -> None:
    game = Game(load_preset("block"))
    sample = bench.measure_capicua(game, 0.001, seed=7)
    assert sample.hands >= 1
    assert sample.seconds > 0
    # The raw count (plays and passes of finished hands) agrees with the typed records.
    state = game.new_match(7, auto_forced=False)
    state.random_playout(random.Random(7))
    results = state.log.results()
    events = [e for h in range(len(results)) for e in state.log.events(h)]
    plays_passes = sum(isinstance(e, Play | Pass) for e in events)
    assert bench._count_moves(state) == (len(results), plays_passes)
    assert plays_passes >= 4 * len(results)


@pytest.mark.skipif(not HAS_DOMINOES, reason="the optional 'dominoes' package is not installed")
def test_compare_gives_a_positive_ratio() -> None:
    out = run_json(*TINY, "--presets", "block", "--compare")
    _check_rows(out["presets"], ["block"])
    cmp = out["compare"]
    assert cmp["package"] == "dominoes"
    assert cmp["version"]
    assert cmp["repeats"] == 1
    for key in ("capicua_hands_per_s", "dominoes_hands_per_s", "ratio"):
        assert cmp[key] > 0


@pytest.mark.skipif(not HAS_DOMINOES, reason="the optional 'dominoes' package is not installed")
def test_dominoes_leaves_the_global_random_alone() -> None:
    random.seed(123)
    expected = random.random()
    random.seed(123)
    bench.measure_dominoes(0.001, seed=0)
    assert random.random() == expected


def test_compare_without_dominoes_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dominoes", None)  # makes `import dominoes` fail
    result = run(*TINY, "--presets", "block", "--compare")
    assert result.exit_code == 2
    assert "pip install 'capicua[bench]'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_real_program_last_line_is_json() -> None:
    proc = subprocess.run(
        [*PROGRAM, "bench", "engine", *TINY, "--presets", "iq-ffa", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    _check_rows(json.loads(proc.stdout.splitlines()[-1])["presets"], ["iq-ffa"])


def test_off_a_terminal_a_line_per_finished_measurement_on_stderr() -> None:
    # a pipe is not a terminal: the in-place progress line gives way to one line per
    # measurement, and stdout stays one line of JSON
    proc = subprocess.run(
        [*PROGRAM, "bench", "engine", "--seconds", "0.02", "--repeat", "2",
         "--presets", "block,cuban", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "measured 1/4: block (repetition 1/2)",
        "measured 2/4: cuban (repetition 1/2)",
        "measured 3/4: block (repetition 2/2)",
        "measured 4/4: cuban (repetition 2/2)",
    ]
    (line,) = proc.stdout.splitlines()
    _check_rows(json.loads(line)["presets"], ["block", "cuban"])


def test_off_a_terminal_the_table_keeps_stdout_too() -> None:
    result = run(*TINY, "--presets", "draw")  # CliRunner's stderr is no terminal either
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == ["measured 1/1: draw (repetition 1/1)"]
    assert "measured" not in result.stdout
