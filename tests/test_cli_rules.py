"""``capicua rules list`` and ``capicua rules show``, in-process and as the real program."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from capicua.cli import main
from capicua.engine.rules import load_preset, preset_names
from tests.clirunner import cli_runner

# A wide, colourless terminal so table cells are neither wrapped nor styled.
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


def run(*args: str) -> Result:
    return cli_runner().invoke(main, list(args), env=ENV, catch_exceptions=False)


def run_json(*args: str) -> Any:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- rules list ---------------------------------------------------------------------------


def test_list_json_has_every_preset() -> None:
    rows = run_json("rules", "list", "--json")
    assert isinstance(rows, list)
    assert [row["name"] for row in rows] == preset_names()
    assert len(rows) == 18
    for row in rows:
        assert {"name", "set", "max_pip", "seats", "sides", "target", "summary"} <= set(row)


def test_list_json_values() -> None:
    rows = {row["name"]: row for row in run_json("rules", "list", "--json")}
    assert rows["cutthroat"] | {"summary": ""} == {
        "name": "cutthroat",
        "set": "double-6 minus 0-0",
        "max_pip": 6,
        "exclude": ["0-0"],
        "seats": 3,
        "sides": "individual",
        "hand_size": 9,
        "stock": "sleeping",
        "target": 6,
        "target_unit": "hands",
        "summary": "",
    }
    assert rows["cuban"]["set"] == "double-9"
    assert (rows["cuban"]["target"], rows["cuban"]["target_unit"]) == (100, "points")
    assert rows["iq-2v2-hands"]["target_unit"] == "hands"
    for name, row in rows.items():
        assert row["summary"] == load_preset(name).summary


def test_list_table() -> None:
    result = run("rules", "list")
    assert result.exit_code == 0
    out = result.stdout
    for name in preset_names():
        assert name in out
    for header in ("name", "set", "seats", "sides", "target", "summary"):
        assert header in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "double-6 minus 0-0" in lines["cutthroat"]
    assert "6 hands" in lines["cutthroat"]
    assert "100 pts" in lines["cuban"]
    assert "double-9" in lines["cuban"]
    assert "200 pts" in lines["dominican"]
    assert "individual" in lines["iq-ffa"]
    assert "\x1b[" not in out


# -- rules show ---------------------------------------------------------------------------


def test_show_json_is_the_knobs() -> None:
    knobs = run_json("rules", "show", "dominican", "--json")
    assert knobs == load_preset("dominican").knobs()
    (bonus,) = knobs["finish_bonus"]
    assert bonus["name"] == "capicua"
    assert bonus["effect"] == "add:30"
    assert bonus["no_double"] is True
    assert bonus["distinct_ends"] is True
    assert "overrides" not in knobs


def test_show_json_with_overrides() -> None:
    knobs = run_json(
        "rules",
        "show",
        "dominican",
        "--set",
        "target=150",
        "--set",
        "finish_bonus.capicua.effect=add:25",
        "--json",
    )
    assert knobs["target"] == 150
    assert knobs["finish_bonus"][0]["effect"] == "add:25"
    assert knobs["overrides"] == ["target=150", "finish_bonus.capicua.effect=add:25"]
    knobs = run_json("rules", "show", "iq-1v1", "--set", 'exclude=["0-0"]', "--json")
    assert knobs["exclude"] == ["0-0"]


@pytest.mark.parametrize("name", preset_names())
def test_show_table_lists_every_knob(name: str) -> None:
    result = run("rules", "show", name)
    assert result.exit_code == 0, result.output
    out = result.stdout
    knobs = load_preset(name).knobs()
    for knob in knobs:
        if knob in ("name", "summary"):
            continue
        assert knob in out, knob
    assert name in out
    for bonus in knobs["finish_bonus"]:
        assert f"finish_bonus.{bonus['name']}" in out
        assert bonus["effect"] in out


def test_show_table_marks_overrides() -> None:
    result = run("rules", "show", "el-dominito", "--set", "shutout.multiplier=3")
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("shutout"))
    assert "*" in line
    assert "chiva" in line
    assert "x3" in line
    assert "shutout.multiplier=3" in result.stdout


@pytest.mark.parametrize("args", [["rules", "list"], ["rules", "show", "cutthroat"]])
def test_tables_fit_80_columns(args: list[str]) -> None:
    result = cli_runner().invoke(main, args, env=ENV | {"COLUMNS": "80"})
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "cutthroat" in result.stdout


# -- errors: one line on stderr, exit 2 ---------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["rules", "show", "nope"], "unknown preset 'nope'; known presets: barbados, block,"),
        (["rules", "show", "dominican", "--set", "hand_sise=3"], "hand_sise: unknown knob"),
        (
            ["rules", "show", "dominican", "--set", "target=-1"],
            "target: expected an integer of at least 1, got -1",
        ),
        (
            ["rules", "show", "dominican", "--set", "stock=boneyard"],
            "stock: expected one of sleeping, draw, got 'boneyard'",
        ),
        (["rules", "show", "dominican", "--set", "seats=3"], "sides: 'teams' needs 4 seats"),
        (["rules", "show", "dominican", "--set", "target"], "bad override 'target'"),
        (
            ["rules", "show", "dominican", "--json", "--set", "finish_bonus.capicua.effect=x"],
            "finish_bonus.capicua.effect: expected add:N or multiply:K",
        ),
    ],
)
def test_user_errors_are_one_line(args: list[str], expected: str) -> None:
    result = cli_runner().invoke(main, args, env=ENV)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("capicua: error: ")
    assert expected in lines[0]


def test_unknown_preset_names_all_known_presets() -> None:
    result = cli_runner().invoke(main, ["rules", "show", "domincan"], env=ENV)
    assert result.exit_code == 2
    for name in preset_names():
        assert name in result.stderr


# -- the installed program ----------------------------------------------------------------


def _program() -> list[str]:
    """The ``capicua`` console script of this interpreter's environment."""
    bindir = Path(sys.executable).parent
    for candidate in (bindir / "capicua", bindir / "capicua.exe"):
        if candidate.is_file():
            return [str(candidate)]
    found = shutil.which("capicua")
    if found:
        return [found]
    return [sys.executable, "-c", "from capicua.cli import main; main(prog_name='capicua')"]


def _run_program(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env |= {"COLUMNS": "200", "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [*_program(), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["rules", "show", "no-such-preset"],
        ["rules", "show", "dominican", "--set", "hand_sise=3"],
        ["rules", "show", "dominican", "--set", 'finish_bonus=[{name="x"}]'],
    ],
)
def test_program_bad_input_exits_2_without_traceback(args: list[str]) -> None:
    proc = _run_program(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "Traceback" not in proc.stdout
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("capicua: error: ")


def test_program_list_and_show_json() -> None:
    proc = _run_program("rules", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [row["name"] for row in json.loads(proc.stdout)] == preset_names()
    proc = _run_program("rules", "show", "dominican", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finish_bonus"][0]["label"] == "capicúa"
