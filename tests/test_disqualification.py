"""One rule for a disqualified bot in a tournament, an experiment and an SPRT: it is named
on stdout with its cause, the run exits 1 (not 0 as if done, not 130 as if interrupted),
and a rerun of the same directory says the same instead of pretending to resume.

The bot is a real process over an embedded server that exits with code 3 at its 25th
decision (again after every restart), so the arena's crash policy disqualifies it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

CRASH_BOT = """
import os
from capicua.client import Bot

class LateCrash(Bot):
    decisions = 0

    def choose(self, observation, legal_actions):
        LateCrash.decisions += 1
        if LateCrash.decisions >= 25:
            os._exit(3)
        return legal_actions[0]
"""
CAUSE = "its process failed 3 times (see "


def capicua(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capicua", *args], cwd=cwd, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


def test_an_sprt_names_the_disqualified_candidate_and_stops(tmp_path: Path) -> None:
    (tmp_path / "crashbot.py").write_text(CRASH_BOT)
    args = ["arena", "sprt", "--base", "easy", "--candidate", "python:crashbot:LateCrash",
            "--rules", "block", "--set", "target=30", "--out", "s",
            "--max-pairs", "50"]  # fmt: skip
    first = capicua(*args, cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    lines = first.stdout.strip().splitlines()
    assert lines[0].startswith("disqualified: candidate (python:crashbot:LateCrash): " + CAUSE), (
        first.stdout
    )
    assert lines[-1].startswith("no decision: the test stopped after "), first.stdout
    assert "because a bot was disqualified" in lines[-1]
    assert "interrupted" not in first.stderr and "resume" not in first.stdout
    again = capicua(*args, cwd=tmp_path)
    assert again.returncode == 1 and again.stdout == first.stdout, again.stdout
    data = json.loads(capicua(*args, "--json", cwd=tmp_path).stdout.strip().splitlines()[-1])
    assert data["complete"] is False and data["decision"] is None
    assert list(data["disqualified"]) == ["candidate"]
    assert data["disqualified"]["candidate"].startswith(CAUSE)


def test_an_experiment_names_the_disqualified_bot_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "crashbot.py").write_text(CRASH_BOT)
    args = ["experiment", "ab", "--base", "block", "--candidate-set", "block_tie=opening_side",
            "--bots", "easy,python:crashbot:LateCrash", "--hands", "20", "--out", "e"]  # fmt: skip
    first = capicua(*args, cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    line = "disqualified: python-crashbot-LateCrash: " + CAUSE
    assert line in first.stdout, first.stdout
    assert "incomplete: " in first.stdout  # the table's title: not every pair is there
    assert "stopped, a bot was disqualified" in first.stderr
    # one line per skipped match would bury the cause: the skips are not listed, only
    # counted, apart from the matches played: the last progress line is not "40/40 (100%)"
    assert not re.search(r"a\d-p\d+: skipped", first.stderr), first.stderr
    progress = re.findall(r"^(\d+)/40 matches \(\d+%\)(?:, (\d+) skipped: a bot was disqualified)?",
                          first.stderr, re.M)  # fmt: skip
    played, skipped = (int(v or 0) for v in progress[-1])
    assert skipped > 0 and played + skipped == 40, first.stderr
    assert "done:" not in first.stderr
    again = capicua(*args, "--json", cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    data = json.loads(again.stdout.strip().splitlines()[-1])
    assert data["complete"] is False and data["planned_pairs"] == 20
    assert data["disqualified"]["python-crashbot-LateCrash"].startswith(CAUSE)
    shown = capicua("experiment", "show", "e", cwd=tmp_path)
    assert line in shown.stdout, shown.stdout
    report = capicua("experiment", "report", "e", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "e" / "report.html").read_text(encoding="utf-8")
    assert "python-crashbot-LateCrash: its process failed 3 times" in page
    # the page does not promise what a rerun will not do (it stops here too)
    assert "running the experiment again resumes it" not in page
