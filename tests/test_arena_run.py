"""The arena runner for real: an embedded `capicua serve` subprocess, bot subprocesses of
every kind, SQLite results, replays, crashes, hangs, kill -9, Ctrl-C and resume."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.text import Text

from capicua.arena import standings
from capicua.arena.config import TournamentError, load_tournament, tournament_from_mapping
from capicua.arena.errors import ArenaError
from capicua.arena.live import LineDisplay, LiveDisplay
from capicua.arena.report import write_report
from capicua.arena.runner import Arena
from capicua.arena.schedule import MatchSpec, deal_seed, remaining, schedule
from capicua.arena.store import Results
from capicua.client.lobby import Lobby
from capicua.engine.replay import verify
from capicua.wire.codec import read_replay
from tests.serverkit import server_process
from tests.tooling import alive, descendants

ROOT = Path(__file__).resolve().parents[1]
PERL_BOT = ROOT / "clients" / "stdio" / "random_bot.pl"
NODE_BOT = ROOT / "clients" / "node" / "examples" / "random_bot.js"
PY = sys.executable

#: The clock of the tournaments in which a bot hangs: the hanging bot pays it at each
#: turn it lets run out, and a working bot must never miss it, on a loaded machine too
#: (at 300 ms a built-in random bot, a subprocess, missed it under a stressed run's load).
HANG_CLOCK_MS = 2_000

HANG_BOT = """
import asyncio
from capicua.client import Bot

class Hang(Bot):
    async def choose(self, observation, legal_actions):
        await asyncio.sleep(3600)
"""


def write_toml(path: Path, data: dict[str, Any]) -> Path:
    """A tournament file from a mapping (strings, ints, lists of strings, one table)."""
    lines = []
    for key, value in data.items():
        if key != "bots":
            lines.append(f"{key} = {json.dumps(value)}")
    lines.append("[bots]")
    for name, spec in data["bots"].items():
        lines.append(f"{json.dumps(name)} = {json.dumps(spec)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def capicua(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "capicua", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def count_matches(out: Path) -> int:
    if not (out / "results.sqlite").exists():
        return 0
    with sqlite3.connect(out / "results.sqlite") as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM matches").fetchone()[0])
        except sqlite3.Error:
            return 0


BASE = {
    "name": "t",
    "preset": "block",
    "overrides": ["target=30"],
    "games": 1,
    "seed": 3,
    "concurrency": 3,
    "time_limit_ms": 5000,
}


# -- tournament files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"bots": {"a": "builtin:random", "b": "builtin:easy"}}, "preset: missing"),
        ({"preset": "nope", "bots": {"a": "builtin:random", "b": "x:y"}}, "unknown preset"),
        ({"preset": "block", "bots": {"a": "builtin:random"}}, "at least 2 bots"),
        ({"preset": "block", "bots": {"a": "builtin:random", "b": "builtin:wise"}}, "wise"),
        ({"preset": "block", "bots": {"a": "builtin:random", "b": "robot:x"}}, "KIND:TARGET"),
        ({"preset": "block", "bots": {"a": "builtin:random", "b": "python:mod"}}, "MODULE:CLASS"),
        ({"preset": "block", "gamez": 1, "bots": {"a": "x"}}, "unknown key 'gamez'"),
        (
            {"preset": "block", "bots": {"server": "builtin:random", "b": "builtin:easy"}},
            "reserved",
        ),
        (
            {"preset": "block", "games": 0, "bots": {"a": "builtin:random", "b": "builtin:easy"}},
            "games",
        ),
        (
            {
                "preset": "block",
                "format": "gauntlet",
                "bots": {"a": "builtin:random", "b": "builtin:easy"},
            },
            "candidate",
        ),
        (
            {
                "preset": "block",
                "overrides": ["target=zero"],
                "bots": {"a": "builtin:random", "b": "builtin:easy"},
            },
            "target",
        ),
    ],
)
def test_bad_tournament_files_name_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(TournamentError, match=message):
        tournament_from_mapping(data, Path("."))


def test_bad_file_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('preset = "block"\n[bots]\na = "builtin:random"\nb = "builtin:wise"\n')
    r = capicua("arena", "run", str(bad), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "bots.b" in r.stderr and "wise" in r.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text("preset = \n")
    r = capicua("arena", "run", str(broken), cwd=tmp_path)
    assert r.returncode == 2 and "not valid TOML" in r.stderr
    r = capicua("arena", "run", str(tmp_path / "missing.toml"), cwd=tmp_path)
    assert r.returncode == 2 and "missing.toml" in r.stderr


# -- the schedule --------------------------------------------------------------------------


def _t(**data: Any) -> Any:
    return tournament_from_mapping({**BASE, **data}, Path("."))


def test_two_sides_duplicate_sets_swap_the_sides() -> None:
    t = _t(games=2, bots={"a": "builtin:random", "b": "builtin:easy", "c": "builtin:medium"})
    matches = schedule(t)
    assert len(matches) == 2 * 3 * 2  # games x pairings x rotations
    by_set: dict[str, list[Any]] = {}
    for m in matches:
        by_set.setdefault(m.set_key, []).append(m)
    for pair in by_set.values():
        assert len(pair) == 2 and pair[0].seed == pair[1].seed
        assert pair[0].sides == tuple(reversed(pair[1].sides))
        # teams: a bot plays both seats of its side (partners with its own copy)
        assert pair[0].seats == (pair[0].sides[0], pair[0].sides[1]) * 2
    # every pairing of a game plays the same deals; the next game new ones
    assert {m.seed for m in matches[:6]} == {deal_seed(3, 0)}
    assert {m.seed for m in matches[6:]} == {deal_seed(3, 1)} != {deal_seed(3, 0)}
    assert len({m.key for m in matches}) == len(matches)
    assert remaining(matches, {matches[0].key}) == matches[1:]
    assert schedule(t) == matches  # pure


def test_individual_seats_rotate_every_bot_through_every_seat() -> None:
    t = _t(preset="cutthroat", bots={n: "builtin:random" for n in "abcd"})
    matches = schedule(t)
    assert len(matches) == 4 * 3  # C(4,3) groups x 3 rotations
    for set_key in {m.set_key for m in matches}:
        group = [m for m in matches if m.set_key == set_key]
        seats = Counter((m.seats.index(b), b) for m in group for b in m.seats)
        assert all(n == 1 for n in seats.values()) and len(seats) == 9
    small = schedule(_t(preset="iq-ffa", bots={"a": "builtin:random", "b": "builtin:easy"}))
    assert len(small) == 4 and all(len(m.sides) == 4 for m in small)
    assert Counter(small[0].sides) == {"a": 2, "b": 2}  # copies fill a small field


def test_gauntlet_plays_the_candidate_against_each() -> None:
    t = _t(format="gauntlet", candidate="c", bots={n: "builtin:random" for n in "abc"})
    assert [m.sides for m in schedule(t)] == [("c", "a"), ("a", "c"), ("c", "b"), ("b", "c")]


# -- running -------------------------------------------------------------------------------


def _node_available() -> bool:
    modules = ROOT / "clients" / "node" / "node_modules" / "@grpc" / "grpc-js"
    return shutil.which("node") is not None and modules.is_dir()


async def test_a_round_robin_of_every_bot_kind(tmp_path: Path) -> None:
    """builtin, python:, cmd:, stdio: and (when node is here) the Node example, on an
    embedded server: every match recorded once, replays verify, duplicate deals match."""
    (tmp_path / "mybots.py").write_text(
        "from capicua.client import Bot\n\nclass First(Bot):\n"
        "    def choose(self, observation, legal_actions):\n        return legal_actions[0]\n"
    )
    bots = {
        "random": "builtin:random",
        "first": "python:mybots:First",
        "easy-cmd": f"cmd:{PY} -m capicua bot builtin easy",
        "perl": f"stdio:perl {PERL_BOT}",
    }
    if _node_available():
        bots["node"] = f"cmd:node {NODE_BOT}"
    elif os.environ.get("CI"):
        pytest.fail("CI must have node and clients/node/node_modules")
    file = write_toml(tmp_path / "t.toml", {**BASE, "concurrency": 4, "bots": bots})
    t = load_tournament(file)
    out = tmp_path / "out"
    summary = await Arena(t, out).run()
    n = len(bots)
    assert summary.played == summary.total == n * (n - 1)
    results = Results.open_existing(out)
    rows = results.matches()
    assert len(rows) == len({r.key for r in rows}) == n * (n - 1)
    assert results.failures() == []
    assert all(r.termination == "normal" for r in rows), [(r.key, r.reason) for r in rows]
    by_set: dict[str, list[Any]] = {}
    for row in rows:
        by_set.setdefault(row.set_key, []).append(row)
        rec = read_replay(out / str(row.replay_path))
        verify(rec)  # the server's record re-simulates exactly
        assert rec.seed == row.seed and list(rec.players)[:2] == list(row.seats)[:2]
    for a, b in by_set.values():
        da = read_replay(out / str(a.replay_path)).hands[0].deals[0]
        db = read_replay(out / str(b.replay_path)).hands[0].deals[0]
        assert da == db  # the same deal, the sides swapped
        assert a.sides == tuple(reversed(b.sides))
    hands = results.hands()
    assert sum(r.hands for r in rows) == len(hands)
    # Think times: every bot kind's decisions are timed by the server, and the standings
    # sum exactly the replays' think times, seat by seat.
    counted: Counter[tuple[str, int]] = Counter()
    for row in rows:
        for record in read_replay(out / str(row.replay_path)).hands:
            counted.update((row.key, record.think_seat(t)) for t in record.think_times)
    assert {(r.match_key, r.seat): r.decisions for r in results.think()} == dict(counted)
    st = standings.compute(results, samples=0)
    for b in st.bots:
        assert b.think_decisions > 0, b.name
        assert b.think_mean_ms is not None and b.think_max_ms is not None
        assert 0 < b.think_mean_ms <= b.think_max_ms
    page = write_report(out).read_text()
    assert page.count('<td class="think" data-v=') == n
    assert f"over {st.bots[0].think_decisions} decisions" in page
    results.close()


GARBAGE_CHILD = """
import sys
for line in sys.stdin:  # every request is answered with something that is not an answer
    print("not an answer", flush=True)
"""


@pytest.mark.parametrize("kind", ["hang", "garbage"])
async def test_a_late_bot_under_auto_play_is_counted(tmp_path: Path, kind: str) -> None:
    # A Python bot that hangs, or a stdio bot that prints garbage (its bridge leaves the
    # seat unanswered): either way the server plays the seat and the arena counts a timeout.
    (tmp_path / "hangbot.py").write_text(HANG_BOT)
    (tmp_path / "garbage.py").write_text(GARBAGE_CHILD)
    late = "python:hangbot:Hang" if kind == "hang" else f"stdio:{PY} {tmp_path / 'garbage.py'}"
    bots = {"random": "builtin:random", "hang": late}
    data = {**BASE, "on_timeout": "auto-play", "time_limit_ms": HANG_CLOCK_MS, "bots": bots}
    t = load_tournament(write_toml(tmp_path / "t.toml", data))
    out = tmp_path / "out"
    summary = await Arena(t, out).run()
    assert summary.played == summary.total == 2
    results = Results.open_existing(out)
    rows = results.matches()
    assert all(r.termination == "normal" for r in rows)  # the server played the late seats
    failures = results.failures()
    assert sorted((f.bot, f.kind, f.match_key) for f in failures) == sorted(
        ("hang", "timeout", r.key) for r in rows
    )
    assert all("auto-play" in f.detail and "missed" in f.detail for f in failures)
    results.close()


LATER_BOTS = """
import asyncio, os, pathlib
from capicua.client import Bot, current_decision

SEEN = pathlib.Path(__file__).with_name("seen-" + os.environ["CAPICUA_BOT_NAME"])

def later(match):
    # True in any match after the bot's first one (the arena's one-hand check)
    seen = SEEN.read_text().split() if SEEN.exists() else []
    if match not in seen:
        SEEN.write_text(" ".join([*seen, match]))
        seen.append(match)
    return match != seen[0]

class CrashLater(Bot):
    def on_match_started(self, match, seat, observation):
        if later(match):
            os._exit(3)

    def choose(self, observation, legal_actions):
        return legal_actions[0]

class HangLater(Bot):
    async def choose(self, observation, legal_actions):
        if later(current_decision().match):
            await asyncio.sleep(3600)
        return legal_actions[0]
"""


def test_bots_that_can_never_play_are_refused_before_the_first_match(tmp_path: Path) -> None:
    (tmp_path / "hangbot.py").write_text(HANG_BOT)
    bots = {
        "random": "builtin:random",
        "crasher": f"cmd:{PY} -c 'import sys; sys.exit(3)'",
        "hang": "python:hangbot:Hang",
        "missing": "python:no_such_module:Bot",
        "noscript": "stdio:perl no/such/bot.pl",
    }
    data = {**BASE, "time_limit_ms": HANG_CLOCK_MS, "bots": bots}
    file = write_toml(tmp_path / "t.toml", data)
    r = capicua("arena", "run", str(file), "--out", "out", "--quiet", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("capicua: error: cannot start the tournament: ")
    for name in ("crasher", "hang", "missing", "noscript"):
        assert f"bot {name} (" in line, name
    assert "bot random" not in line
    assert "No module named 'no_such_module'" in line  # the cause, from its log
    assert "no/such/bot.pl" in line and "timeout" in line
    assert "nothing was played" in line
    # nothing recorded, and the directory is not tied to this file: a fixed one may use it
    assert not (tmp_path / "out" / "results.sqlite").exists()
    fixed = write_toml(tmp_path / "t.toml", {**data, "bots": {"a": "builtin:random",
                                                              "b": "builtin:easy"}})  # fmt: skip
    r = capicua("arena", "run", str(fixed), "--out", "out", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


async def test_a_bot_that_crashes_later_is_disqualified_and_a_hanging_bot_forfeits(
    tmp_path: Path,
) -> None:
    (tmp_path / "laterbots.py").write_text(LATER_BOTS)
    bots = {
        "random": "builtin:random",
        "crasher": "python:laterbots:CrashLater",
        "hang": "python:laterbots:HangLater",
    }
    data = {**BASE, "time_limit_ms": HANG_CLOCK_MS, "max_crashes": 2, "bots": bots}
    t = load_tournament(write_toml(tmp_path / "t.toml", data))
    out = tmp_path / "out"
    summary = await Arena(t, out).run()
    assert summary.total == 6
    assert list(summary.disqualified) == ["crasher"]
    assert "2 times" in summary.disqualified["crasher"]
    assert summary.played + summary.skipped == 6 and summary.played >= 2
    results = Results.open_existing(out)
    bots_rows = {b.name: b for b in results.bots()}
    reason = str(bots_rows["crasher"].disqualified_reason)
    assert bots_rows["crasher"].disqualified and "2 times" in reason and "crasher.log" in reason
    kinds = Counter((f.bot, f.kind) for f in results.failures())
    assert kinds[("crasher", "crash")] == 2
    crashes = [f for f in results.failures() if (f.bot, f.kind) == ("crasher", "crash")]
    assert all("exited with code 3" in f.detail for f in crashes)
    hang_rows = [r for r in results.matches() if "hang" in r.sides and "random" in r.sides]
    assert len(hang_rows) == 2
    for row in hang_rows:  # the hanging bot lost on time, the tournament went on
        assert row.termination == "timeout"
        assert row.forfeited_side is not None and row.sides[row.forfeited_side] == "hang"
        assert row.winner_side is not None and row.sides[row.winner_side] == "random"
    timeouts = {f.match_key for f in results.failures() if (f.bot, f.kind) == ("hang", "timeout")}
    assert {r.key for r in hang_rows} <= timeouts  # (its match with crasher may be one too)
    results.close()
    # a resumed run keeps the disqualification and plays nothing again
    again = await Arena(t, out).run()
    assert again.played == 0 and again.already + again.skipped == 6


def test_a_disqualification_exits_1_unless_recover(tmp_path: Path) -> None:
    (tmp_path / "laterbots.py").write_text(LATER_BOTS)
    bots = {"random": "builtin:random", "crasher": "python:laterbots:CrashLater"}
    file = write_toml(tmp_path / "t.toml", {**BASE, "max_crashes": 1, "bots": bots})
    r = capicua("arena", "run", str(file), "--out", "out", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "crasher is disqualified: its process failed once" in r.stderr  # the cause, live
    # named on stdout with its cause, after the standings, and on every rerun
    cause = "disqualified: crasher: its process failed once (see "
    assert cause in r.stdout, r.stdout
    assert "exit 1: a bot was disqualified" in r.stderr
    again = capicua("arena", "run", str(file), "--out", "out", cwd=tmp_path)
    assert again.returncode == 1 and cause in again.stdout, again.stdout
    # Its second match is forfeited, or skipped when the disqualification came first: only
    # then is the result incomplete, and the standings say so.
    skipped = "1 skipped (disqualified: crasher)" in r.stderr
    assert ("incomplete: 1 of 2 matches finished" in r.stdout) == skipped, r.stdout
    r = capicua("arena", "run", str(file), "--out", "out", "--recover", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr  # resumed: the same disqualification, accepted
    data = json.loads(r.stdout.strip().splitlines()[-1])
    assert data["matches_planned"] == 2 and data["complete"] is not skipped


GATE_BOT = """
import asyncio, pathlib
from capicua.client import Bot, current_decision

HERE = pathlib.Path(__file__).parent


class Gate(Bot):
    # Holds its first decision of a tournament match (not of the arena's one-hand check,
    # its first match) until the test creates gate-open: that match is in flight, surely,
    # until then. gate-held names it once it is held.
    seen = []
    held = False

    async def choose(self, observation, legal_actions):
        match = current_decision().match
        if match not in Gate.seen:
            Gate.seen.append(match)
        if match != Gate.seen[0] and not Gate.held and not (HERE / "gate-open").exists():
            Gate.held = True
            (HERE / "gate-held").write_text(match)
            while not (HERE / "gate-open").exists():
                await asyncio.sleep(0.05)
        return legal_actions[0]
"""

#: Seconds the tests below wait at most for an event of a run (a bound, never a wait).
EVENT_BOUND_S = 120.0


def _gated(tmp_path: Path) -> Path:
    """Six matches, two at a time, one of them held in flight by the gate bot until the
    test opens the gate (its time limit is far beyond any test: it never runs out)."""
    (tmp_path / "gatebot.py").write_text(GATE_BOT)
    bots = {
        "random": "builtin:random",
        "perl": f"stdio:perl {PERL_BOT}",
        "gate": "python:gatebot:Gate",
    }
    data = {**BASE, "concurrency": 2, "time_limit_ms": 3_600_000, "bots": bots}
    return write_toml(tmp_path / "gated.toml", data)


def _open_gate(file: Path) -> None:
    (file.parent / "gate-open").write_text("")


def _start(file: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "capicua", "arena", "run", str(file), "--out", str(out), "--quiet"],
        cwd=file.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(proc: subprocess.Popen[str], out: Path, n: int) -> None:
    """Until ``n`` matches are recorded and the gate bot holds one in flight."""
    gate = out.parent / "gate-held"
    end = time.monotonic() + EVENT_BOUND_S
    while count_matches(out) < n or not gate.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"{count_matches(out)} matches, held: {gate.exists()}"
        time.sleep(0.05)


def _recorded(out: Path) -> dict[str, str]:
    """Each recorded match's key and the server match that played it."""
    results = Results.open_existing(out)
    try:
        return {row.key: str(row.server_match) for row in results.matches()}
    finally:
        results.close()


def _check_complete(file: Path, out: Path) -> None:
    t = load_tournament(file)
    results = Results.open_existing(out)
    rows = results.matches()
    keys = [r.key for r in rows]
    assert sorted(keys) == sorted(m.key for m in schedule(t))  # all, once
    assert len(results.hands()) == sum(r.hands for r in rows)
    assert sorted(p.name for p in (out / "replays").glob("*.binpb.gz")) == sorted(
        f"{k}.binpb.gz" for k in keys
    )
    results.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_kill_9_leaves_no_process_and_the_same_command_resumes(tmp_path: Path) -> None:
    file, out = _gated(tmp_path), tmp_path / "out"
    proc = _start(file, out)
    try:
        _wait_for(proc, out, 3)  # three recorded, one held in flight
        children = descendants(proc.pid)
        assert len(children) >= 4  # the server and three bots at least
        proc.kill()
        proc.wait()
        for _ in range(200):
            if not any(alive(p) for p in children):
                break
            time.sleep(0.05)
        assert [p for p in children if alive(p)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    before = _recorded(out)
    assert 3 <= len(before) < 6  # the held match never ended
    _open_gate(file)
    r = capicua("arena", "run", str(file), "--out", str(out), "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    _check_complete(file, out)
    after = _recorded(out)
    assert {key: after[key] for key in before} == before  # kept, not played again
    # a changed file is refused for the same directory, and nothing is touched
    changed = file.read_text().replace('"seed": 3', "").replace("seed = 3", "seed = 4")
    file.write_text(changed)
    r = capicua("arena", "run", str(file), "--out", str(out), "--quiet", cwd=tmp_path)
    assert r.returncode == 2 and "different configuration" in r.stderr
    assert r.stderr.count("\n") == 1


def test_ctrl_c_abandons_the_matches_in_flight_and_resume_finishes(tmp_path: Path) -> None:
    file, out = _gated(tmp_path), tmp_path / "out"
    proc = _start(file, out)
    try:
        _wait_for(proc, out, 1)  # one recorded, one held in flight
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=EVENT_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    with sqlite3.connect(out / "results.sqlite") as conn:
        abandoned = {key for (key,) in conn.execute("SELECT match_key FROM abandoned")}
    before = _recorded(out)
    assert err.strip().splitlines()[-1] == (
        f"capicua: interrupted; {len(before)} matches played; {len(abandoned)} abandoned "
        f"(played again on resume): the same command resumes, in {out}"
    )
    # the held match (and any other in flight) was abandoned, none of them recorded
    assert abandoned and not abandoned & before.keys() and 1 <= len(before) < 6
    _open_gate(file)
    r = capicua("arena", "run", str(file), "--out", str(out), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout.strip().splitlines()[-1])
    assert data["matches_total"] == data["matches_planned"] == 6 and data["complete"] is True
    _check_complete(file, out)
    after = _recorded(out)
    assert {key: after[key] for key in before} == before  # kept, not played again


def _friend(address: str, token: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CAPICUA_SERVER": address, "CAPICUA_TOKEN": token}
    env.pop("CAPICUA_ADMIN_TOKEN", None)
    return subprocess.Popen(
        [PY, "-m", "capicua", "bot", "builtin", "easy"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def test_remote_bot_on_a_shared_server(tmp_path: Path) -> None:
    """``remote:NAME``: a bot already connected to a server the file names. Until it lets
    the arena reserve its seats and choose their seeds the run stops with the server's
    reason, nothing recorded; once it lets anyone (the arena creates as an organizer bot
    whose name it cannot know in advance) and accepts chosen seeds, the same command
    plays."""
    with server_process([], tmp_path / "logs") as server:
        r = capicua("match", "register-bot", "friend", "--server", server.address, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "reservable by: nobody but itself and the admin" in r.stdout
        token = r.stdout.split("token: ")[1].split()[0]
        friend = _friend(server.address, token)
        try:
            bots = {"random": "builtin:random", "friend": "remote:friend"}
            data = {**BASE, "server": server.address, "bots": bots}
            t = load_tournament(write_toml(tmp_path / "t.toml", data))
            with pytest.raises(ArenaError, match=r"bots/friend does not let bots/arena-\w+"):
                await Arena(t, tmp_path / "out").run()
            assert count_matches(tmp_path / "out") == 0
            r = capicua(
                "match", "bot-access", "*", "--bot-token", token, "--server", server.address,
                cwd=tmp_path,
            )  # fmt: skip
            assert r.returncode == 0, r.stderr
            assert r.stdout.splitlines() == [
                "bots/friend reservable by: anyone",
                "chosen seeds: only from itself and the admin",
            ]
            # reserving is not dealing: each pair's matches share a seed the organizer chose
            with pytest.raises(ArenaError, match=r"bots/friend does not let bots/arena-\w+ choose"):
                await Arena(t, tmp_path / "out").run()
            assert count_matches(tmp_path / "out") == 0
            r = capicua(
                "match", "bot-access", "*", "--accept-chosen-seeds", "--bot-token", token,
                "--server", server.address, cwd=tmp_path,
            )  # fmt: skip
            assert r.returncode == 0, r.stderr
            assert (
                r.stdout.splitlines()[1] == "chosen seeds: accepted from those who may reserve it"
            )
            summary = await Arena(t, tmp_path / "out").run()
        finally:
            friend.terminate()
            friend.wait(10)
        assert summary.played == 2
        results = Results.open_existing(tmp_path / "out")
        assert all(m.server_match and m.termination == "normal" for m in results.matches())
        results.close()


async def test_each_replay_is_kept_as_the_bytes_the_server_served(tmp_path: Path) -> None:
    """A tournament on a running server keeps each match's replay as the server serves it
    to anyone (GetReplay): the ``capicua.v1.Replay`` message's protobuf bytes, gzipped, in
    ``replays/KEY.binpb.gz``; ``capicua replay verify`` re-simulates the directory."""
    with server_process([], tmp_path / "logs") as server:
        bots = {"random": "builtin:random", "easy": "builtin:easy"}
        t = load_tournament(write_toml(tmp_path / "t.toml", {**BASE, "server": server.address,
                                                             "bots": bots}))  # fmt: skip
        summary = await Arena(t, tmp_path / "out").run()
        assert summary.played == 2
        results = Results.open_existing(tmp_path / "out")
        rows = results.matches()
        results.close()
        async with Lobby(server.address) as lobby:
            for row in rows:
                assert row.replay_path == f"replays/{row.key}.binpb.gz"
                assert row.server_match is not None
                served = (await lobby.get_replay(row.server_match)).replay
                kept = gzip.decompress((tmp_path / "out" / row.replay_path).read_bytes())
                assert kept == served.SerializeToString(deterministic=True)
    r = capicua("replay", "verify", str(tmp_path / "out" / "replays"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "2 replays: 2 OK, 0 failed"
    # the results directory itself: its replays, not its other JSON (an SPRT's sprt.json)
    (tmp_path / "out" / "sprt.json").write_text('{"elo0": 0, "elo1": 10}')
    whole = capicua("replay", "verify", str(tmp_path / "out"), cwd=tmp_path)
    assert (whole.returncode, whole.stdout) == (0, r.stdout), whole.stderr


async def test_a_remote_bot_without_consent_needs_the_admin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a server that restricts registration the arena needs its admin token
    ($CAPICUA_ADMIN_TOKEN): without it the run stops, nothing recorded; with it the arena
    registers its bots and reserves a remote bot that lets nobody else."""
    admin = "the-operators-secret"
    monkeypatch.setenv("CAPICUA_ADMIN_TOKEN", admin)
    with server_process([], tmp_path / "logs") as server:  # reads $CAPICUA_ADMIN_TOKEN
        r = capicua("match", "register-bot", "friend", "--server", server.address, cwd=tmp_path)
        assert r.returncode == 0, r.stderr  # with $CAPICUA_ADMIN_TOKEN
        friend = _friend(server.address, r.stdout.split("token: ")[1].split()[0])
        try:
            bots = {"random": "builtin:random", "friend": "remote:friend"}
            t = load_tournament(
                write_toml(tmp_path / "t.toml", {**BASE, "server": server.address, "bots": bots})
            )
            monkeypatch.delenv("CAPICUA_ADMIN_TOKEN")
            with pytest.raises(ArenaError, match=r"admin only: set \$CAPICUA_ADMIN_TOKEN"):
                await Arena(t, tmp_path / "out").run()
            assert count_matches(tmp_path / "out") == 0
            monkeypatch.setenv("CAPICUA_ADMIN_TOKEN", admin)
            summary = await Arena(t, tmp_path / "out").run()
        finally:
            friend.terminate()
            friend.wait(10)
        assert summary.played == 2


async def test_individual_seats_over_the_server(tmp_path: Path) -> None:
    """cutthroat: three different bots per match, each in every seat once per set; the
    stored sides and rankings come from the server's replays."""
    bots = {"random": "builtin:random", "easy": "builtin:easy", "medium": "builtin:medium"}
    data = {**BASE, "preset": "cutthroat", "overrides": [], "bots": bots}
    t = load_tournament(write_toml(tmp_path / "t.toml", data))
    summary = await Arena(t, tmp_path / "out").run()
    assert summary.played == 3
    results = Results.open_existing(tmp_path / "out")
    rows = results.matches()
    assert {r.seats for r in rows} == {m.seats for m in schedule(t)}
    for row in rows:
        rec = read_replay(tmp_path / "out" / str(row.replay_path))
        assert rec.outcome is not None
        assert row.ranking == tuple(rec.outcome.ranking) and len(row.ranking) == 3
        assert list(rec.players) == list(row.seats)
    results.close()


def test_a_command_that_cannot_start_is_one_line() -> None:
    from capicua.common.lifetime import with_parent_death

    r = subprocess.run(with_parent_death(["/no/such/bot", "x"]), capture_output=True, text=True)
    assert r.returncode == 127
    assert r.stderr == "cannot run '/no/such/bot': No such file or directory\n"
    ok = subprocess.run(with_parent_death(["echo", "hi"]), capture_output=True, text=True)
    assert (ok.returncode, ok.stdout) == (0, "hi\n")


def test_the_readme_demo_plays_a_whole_round_robin(tmp_path: Path) -> None:
    """`capicua arena demo` (the README's first command), with one duplicate set per
    pairing: every built-in bot (and the Node example when it is installed) plays every
    other, the standings come out as JSON, and the results are on disk."""
    out = tmp_path / "demo"
    r = capicua("arena", "demo", "--games", "1", "--out", str(out), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    standings = json.loads(r.stdout.strip().splitlines()[-1])
    names = {b["name"] for b in standings["bots"]}
    assert {"random", "easy", "medium", "hard"} <= names
    assert names - {"random", "easy", "medium", "hard"} <= {"node-random"}
    n = len(names)
    assert standings["matches_total"] == n * (n - 1)  # one set: each pairing, sides swapped
    assert all(b["errors_total"] == 0 for b in standings["bots"])
    results = Results.open_existing(out)
    for row in results.matches():
        verify(read_replay(out / str(row.replay_path)))
    results.close()
    bad = capicua("arena", "demo", "--games", "0", "--out", str(tmp_path / "x"), cwd=tmp_path)
    assert bad.returncode == 2 and "--games" in bad.stderr
    assert not (tmp_path / "x").exists()


def test_the_time_limits_are_the_servers() -> None:
    from capicua.arena.config import MAX_TIME_LIMIT_MS, MIN_TIME_LIMIT_MS
    from capicua.server.settings import MAX_TIMER_MS, MIN_TIMER_MS

    assert (MIN_TIME_LIMIT_MS, MAX_TIME_LIMIT_MS) == (MIN_TIMER_MS, MAX_TIMER_MS)
    data = {**BASE, "time_limit_ms": 10, "bots": {"a": "builtin:random", "b": "builtin:easy"}}
    with pytest.raises(TournamentError, match="time_limit_ms: expected an integer from 50"):
        tournament_from_mapping(data, Path("."))


def test_a_second_run_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    file = _gated(tmp_path)
    out = tmp_path / "out"
    first = _start(file, out)
    try:
        _wait_for(first, out, 1)  # one recorded (the directory is this run's), one held
        r = capicua("arena", "run", str(file), "--out", str(out), "--quiet", cwd=tmp_path)
        assert r.returncode == 2
        assert f"is in use by another run (pid {first.pid})" in r.stderr
        assert first.poll() is None  # the first run goes on
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=EVENT_BOUND_S)
    # once it is gone the lock is free again: a run gets as far as the configuration check
    # (--games 2 changes the results, so this directory is refused for it)
    r = capicua("arena", "run", str(file), "--out", str(out), "--quiet", "--games", "2",
                cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2 and "with a different configuration" in r.stderr


def test_off_a_terminal_a_line_per_match_and_overrides_on_the_command_line(
    tmp_path: Path,
) -> None:
    bots = {"random": "builtin:random", "easy": "builtin:easy"}
    file = write_toml(tmp_path / "t.toml", {**BASE, "games": 5, "bots": bots})
    r = capicua(
        "arena", "run", str(file), "--out", "out", "--games", "2", "--seed", "7",
        "--concurrency", "1", "--report-every", "2", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == "playing 4 of 4 matches"  # --games 2: two sets of two matches
    played = [ln for ln in lines if ln.startswith("match ")]
    assert [ln.split(":")[0] for ln in played] == [f"match {i}/4" for i in range(1, 5)]
    assert all(re.search(r": (random vs easy|easy vs random) (1-0|0-1|½-½) \(normal\)$", ln)
               for ln in played), played  # fmt: skip
    assert sum("Standings" in ln for ln in lines) == 1  # after match 2 (not repeated at 4)
    results = Results.open_existing(tmp_path / "out")
    rows = results.matches()
    results.close()
    assert {row.seed for row in rows} == {deal_seed(7, 0), deal_seed(7, 1)}  # --seed 7


# -- what the person watching sees ---------------------------------------------------------------


def _spec(key: str) -> MatchSpec:
    return MatchSpec(key, key, 0, 0, 1, ("a", "b"), ("a", "b"))


def _last_frame(output: str) -> str:
    """What a terminal shows of a rich Live display once it stopped: its last frame, after
    the last line it erased."""
    return output.rsplit("\x1b[2K", 1)[-1]


def test_the_live_standings_leave_the_screen_and_a_skipped_match_is_not_played() -> None:
    """On a terminal the standings drawn while playing are a preview (fewer bootstrap
    samples): once the run ends only the progress and the notes stay, so the one table left
    on screen is the final one printed after it. A match skipped because its bot was
    disqualified is counted as skipped, not as one of the matches played."""
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100, color_system=None)
    display = LiveDisplay("club", lambda _: Text("PREVIEW STANDINGS"), console=console)
    display.begin(4, 0, skipped=1)
    display.match_finished(_spec("m1"), "normal", "", "1-0")
    display.match_finished(_spec("m2"), "skipped", "a bot is disqualified")
    display.refresh(None)  # type: ignore[arg-type]  # the preview reads no results
    display.live.refresh()
    assert "PREVIEW STANDINGS" in screen.getvalue()  # it was drawn while playing
    display.end()
    last = _last_frame(screen.getvalue())
    assert "PREVIEW STANDINGS" not in last, last
    assert re.search(r"1/4 matches \(2 skipped\)", last), last


def test_off_a_terminal_a_skipped_match_is_not_numbered_as_played() -> None:
    log = io.StringIO()
    display = LineDisplay(lambda _: Text("standings"), Console(file=log, width=200))
    display.begin(4, 1, skipped=1)
    display.match_finished(_spec("m1"), "skipped", "a bot is disqualified")
    display.match_finished(_spec("m2"), "normal", "", "0-1")
    assert log.getvalue().splitlines() == [
        "playing 2 of 4 matches (1 kept from an earlier run) (1 skipped: a bot was disqualified)",
        "skipped: a vs b (a bot is disqualified)",
        "match 2/4: a vs b 0-1 (normal)",
    ]
