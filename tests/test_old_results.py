"""Results directories written by the code before the one results store (tests/data/README.md)
still open: ``show``, ``standings`` and ``report`` print what that code printed for them,
and a run of the same study resumes them, or says in one line why it cannot.

Every directory here was written by that code, playing for real: a tournament over the
protocol cut after its first duplicate set, an SPRT played in-process, an experiment
interrupted after 10 of its 40 pairs, and an experiment over the protocol (an SDK bot)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from capicua.arena.store import Results
from capicua.cli import main
from tests.clirunner import cli_runner

DATA = Path(__file__).parent / "data" / "before-one-store"


def materialize(kind: str, where: Path) -> Path:
    """A copy of the fixture ``kind`` in ``where``, each ``.sql`` dump made a database again
    (``NAME.sql`` -> ``NAME.sqlite``); returns the copy's folder."""
    folder = where / kind
    shutil.copytree(DATA / kind, folder)
    for dump in folder.rglob("*.sql"):
        conn = sqlite3.connect(dump.with_suffix(".sqlite"))
        conn.executescript(dump.read_text(encoding="utf-8"))
        conn.close()
        dump.unlink()
    return folder


def invoke(*args: str, code: int = 0) -> Any:
    res = cli_runner().invoke(main, list(args))
    assert res.exit_code == code, (res.output, res.stderr)
    return res


def last_json(res: Any) -> Any:
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_tournament_shows_reports_and_resumes(tmp_path: Path, monkeypatch: Any) -> None:
    folder = materialize("tournament", tmp_path)
    monkeypatch.chdir(folder)
    then = json.loads((folder / "standings.json").read_text(encoding="utf-8"))
    now = last_json(invoke("arena", "standings", "club-results", "--json"))
    # what that code printed, plus the one field added since: each bot's rank band
    bands = [bot.pop("rank_band") for bot in now["bots"]]
    assert now == then
    assert bands == [[1, 2], [1, 2]]  # two bots, one duplicate set each way: tied
    invoke("arena", "report", "club-results")
    page = (folder / "club-results" / "report.html").read_text(encoding="utf-8")
    assert "s00000-r0" in page and "s00000-r1" in page
    kept = _rows(folder / "club-results")
    assert len(kept) == 2
    done = last_json(invoke("arena", "run", "club.toml", "--out", "club-results", "--json"))
    assert done["complete"] is True and done["matches_total"] == 4
    after = _rows(folder / "club-results")
    assert {key: after[key] for key in kept} == kept  # the first set as it was, not replayed
    # the old replays stay as they were written (JSON); the new ones are the served bytes,
    # and every reader takes the two side by side
    replays = folder / "club-results" / "replays"
    assert sorted(p.name for p in replays.iterdir()) == [
        "s00000-r0.json.gz", "s00000-r1.json.gz", "s00001-r0.binpb.gz", "s00001-r1.binpb.gz"
    ]  # fmt: skip
    verified = invoke("replay", "verify", str(replays))
    assert verified.stdout.splitlines()[-1] == "4 replays: 4 OK, 0 failed"
    invoke("replay", "show", str(replays / "s00001-r0.binpb.gz"), "--hand", "1")
    invoke("arena", "report", "club-results")
    page = (folder / "club-results" / "report.html").read_text(encoding="utf-8")
    assert all(f'data-key="s0000{s}-r{r}"' in page for s in (0, 1) for r in (0, 1))
    assert 'id="replay-problems"' not in page


def _rows(out: Path) -> dict[str, tuple[Any, ...]]:
    results = Results.open_existing(out)
    try:
        return {r.key: (r.seed, r.termination, r.scores, r.finished) for r in results.matches()}
    finally:
        results.close()


SPRT = ["arena", "sprt", "--base", "random", "--candidate", "easy", "--rules", "iq-1v1",
        "--set", "target=30", "--out", "sprt-results"]  # fmt: skip


def test_an_sprt_shows_reports_and_resumes(tmp_path: Path, monkeypatch: Any) -> None:
    folder = materialize("sprt", tmp_path)
    monkeypatch.chdir(folder)
    then = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    assert last_json(invoke(*SPRT, "--max-pairs", "4", "--json")) == then  # nothing to play
    verdict = (folder / "verdict.txt").read_text(encoding="utf-8")
    assert invoke(*SPRT, "--max-pairs", "4", "--quiet").stdout == verdict
    invoke("arena", "report", "sprt-results")
    page = (folder / "sprt-results" / "report.html").read_text(encoding="utf-8")
    assert "no decision yet after 4 pairs" in page
    longer = last_json(invoke(*SPRT, "--max-pairs", "6", "--json"))
    assert longer["pairs"] == 6
    assert all(b >= a for a, b in zip(then["pentanomial"], longer["pentanomial"], strict=True))


def test_an_interrupted_experiment_shows_reports_and_says_why_it_does_not_resume(
    tmp_path: Path, monkeypatch: Any
) -> None:
    folder = materialize("experiment", tmp_path)
    monkeypatch.chdir(folder)
    then = json.loads((folder / "show.json").read_text(encoding="utf-8"))
    assert last_json(invoke("experiment", "show", "experiment-results", "--json")) == then
    assert then["complete"] is False and then["pairs"] == 10
    invoke("experiment", "report", "experiment-results")
    page = (folder / "experiment-results" / "report.html").read_text(encoding="utf-8")
    assert "incomplete: 10 of 40 pairs recorded" in page
    # the same experiment again: this version does not play on in that layout, and says so
    # in one line naming the version that wrote it; nothing of it changes
    refused = invoke("experiment", "ab", "--base", "block", "--candidate-set",
                     "block_tie=opening_side", "--bots", "easy", "--hands", "40", "--out",
                     "experiment-results", code=2)  # fmt: skip
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("capicua: error: experiment-results holds an experiment written by "
                           "capicua 0.1.0"), line  # fmt: skip
    assert "10 of 40 pairs" in line and "another --out" in line
    assert not (folder / "experiment-results" / "results.sqlite").exists()
    assert last_json(invoke("experiment", "show", "experiment-results", "--json")) == then


def test_an_experiment_over_the_protocol_shows_reports_and_reruns(
    tmp_path: Path, monkeypatch: Any
) -> None:
    folder = materialize("experiment-protocol", tmp_path)
    monkeypatch.chdir(folder)
    then = json.loads((folder / "show.json").read_text(encoding="utf-8"))
    assert last_json(invoke("experiment", "show", "protocol-results", "--json")) == then
    invoke("experiment", "report", "protocol-results")
    assert (folder / "protocol-results" / "report.html").stat().st_size > 0
    # complete: the same command plays nothing and prints the same result
    again = invoke("experiment", "ab", "--base", "block", "--candidate-set",
                   "block_tie=opening_side", "--hands", "3", "--bots", "python:easybots:Easy",
                   "--out", "protocol-results", "--json")  # fmt: skip
    assert last_json(again) == then
