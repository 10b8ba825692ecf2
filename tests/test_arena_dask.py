"""The dask backend: a real dask.distributed LocalCluster of worker processes, each hosting
a real ``capicua serve`` and real bot processes. Same matches and results as the local
backend, resume across backends, a worker killed mid-run, the scheduler going away."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster

from capicua.arena.cluster import DaskArena, units
from capicua.arena.config import Tournament, tournament_from_mapping
from capicua.arena.errors import ArenaError
from capicua.arena.runner import Arena
from capicua.arena.schedule import schedule
from capicua.arena.store import Results
from capicua.engine.replay import verify
from capicua.wire.codec import read_replay
from tests.clientkit import until

PY = sys.executable


LAST = """import asyncio
import os
import pathlib

from capicua.client import Bot, current_decision


class Last(Bot):
    async def choose(self, observation, legal_actions):
        return legal_actions[-1]


class Crashy(Last):
    # Its process dies on its first decision in a tournament match, every time it starts:
    # it plays only the worker's one-hand check, the first match it ever sees (noted in a
    # file, so that a restarted process knows it too).

    async def choose(self, observation, legal_actions):
        checked = pathlib.Path(__file__).with_name("crashy-checked")
        if not checked.exists():
            checked.write_text(current_decision().match)
        if checked.read_text() != current_decision().match:
            os._exit(3)
        return legal_actions[-1]


class Slow(Last):
    async def choose(self, observation, legal_actions):
        await asyncio.sleep(0.05)
        return legal_actions[-1]


class Gate(Last):
    # Holds its first decision in a tournament match (not in the worker's one-hand check,
    # the first match its process sees) until the test creates gate-open: that match is
    # in flight, surely, until then; the others play on. gate-held says it is held.
    seen = []
    held = False

    async def choose(self, observation, legal_actions):
        here = pathlib.Path(__file__).parent
        match = current_decision().match
        if match not in Gate.seen:
            Gate.seen.append(match)
        if match != Gate.seen[0] and not Gate.held and not (here / "gate-open").exists():
            Gate.held = True
            (here / "gate-held").write_text(match)
            while not (here / "gate-open").exists():
                await asyncio.sleep(0.05)
        return legal_actions[-1]
"""


def _tournament(tmp_path: Path, games: int = 3, **extra: Any) -> Tournament:
    """Deterministic bots whose every choice depends on the position only (medium and
    random break ties with a generator that runs on across matches, so their choices depend
    on the order a process plays them in): both backends play alike."""
    (tmp_path / "last_bot.py").write_text(LAST)
    data = {
        "name": "dask",
        "preset": "iq-1v1",
        "overrides": ["target=30"],
        "games": games,
        "seed": 5,
        "concurrency": 2,
        "time_limit_ms": 10_000,
        "bots": {"easy": "builtin:easy", "last": "python:last_bot:Last"},
        **extra,
    }
    return tournament_from_mapping(data, tmp_path)


def _played(out: Path) -> dict[str, tuple[Any, ...]]:
    """Each recorded match: its result, and the actions of its replay."""
    results = Results.open_existing(out)
    try:
        rows = results.matches()
        found = {}
        for row in rows:
            replay = read_replay(out / str(row.replay_path))
            # the deals, every event and each hand's result (not the think times: a clock)
            actions = tuple((hand.deals, hand.events, hand.result) for hand in replay.hands)
            found[row.key] = (row.termination, row.winner_side, row.ranking, actions)
        assert len(rows) == len(found), "a match was recorded twice"
        return found
    finally:
        results.close()


async def test_the_same_file_gives_the_same_results_on_both_backends(tmp_path: Path) -> None:
    t = _tournament(tmp_path)
    local = await Arena(t, tmp_path / "local").run()
    dask = await DaskArena(t, tmp_path / "dask", workers=2).run()
    assert (local.played, dask.played) == (len(schedule(t)), len(schedule(t)))
    assert _played(tmp_path / "dask") == _played(tmp_path / "local")
    results = Results.open_existing(tmp_path / "dask")
    try:
        for row in results.matches():  # every replay is the server's, and verifies
            verify(read_replay(tmp_path / "dask" / str(row.replay_path)))
    finally:
        results.close()


async def test_a_run_resumes_on_the_other_backend(tmp_path: Path) -> None:
    t = _tournament(tmp_path, games=4)
    everything = schedule(t)
    half = [m for unit in units(everything)[:2] for m in unit]
    # started locally, finished on dask
    first = await Arena(t, tmp_path / "a", matches=half).run()
    assert first.played == len(half)
    rest = await DaskArena(t, tmp_path / "a", workers=2).run()
    assert (rest.already, rest.played) == (len(half), len(everything) - len(half))
    # started on dask, finished locally
    first = await DaskArena(t, tmp_path / "b", workers=1, matches=half).run()
    assert first.played == len(half)
    rest = await Arena(t, tmp_path / "b").run()
    assert (rest.already, rest.played) == (len(half), len(everything) - len(half))
    assert _played(tmp_path / "a") == _played(tmp_path / "b")


async def test_a_killed_worker_loses_nothing_and_counts_nothing_twice(tmp_path: Path) -> None:
    t = _tournament(tmp_path, games=8)
    total = len(schedule(t))
    async with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=True,
            dashboard_address=None,
            asynchronous=True,
        ) as cluster,
        Client(cluster, asynchronous=True) as client,
    ):
        pids: dict[str, int] = await client.run(os.getpid)
        victim = sorted(pids.values())[0]
        killed: list[int] = []

        def kill_one(_: Results) -> None:
            if not killed:  # after the first match is committed: work is in flight
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        arena = DaskArena(t, tmp_path / "out", scheduler=cluster.scheduler_address)
        arena.on_progress = kill_one
        summary = await arena.run()
        assert killed == [victim]
        assert summary.played == total and summary.abandoned == 0
        # the run over, each worker's server and bots are stopped (the cluster lives on)
        left: dict[str, list[str]] = await client.run(_capicua_children)
        assert left and all(found == [] for found in left.values()), left
    played = _played(tmp_path / "out")  # once each (the primary key, and the count)
    assert sorted(played) == sorted(m.key for m in schedule(t))
    reference = await Arena(t, tmp_path / "local").run()
    assert reference.played == total
    assert played == _played(tmp_path / "local")


def _kill_servers() -> int:
    """On a worker: SIGKILL its embedded game server (its arena's), as a crash would."""
    import psutil

    killed = 0
    for p in psutil.Process().children(recursive=True):
        try:
            if "serve" in p.cmdline() and "--data" in p.cmdline():
                p.kill()
                killed += 1
        except psutil.Error:  # gone meanwhile, or a zombie
            continue
    return killed


async def test_a_worker_whose_server_dies_starts_another(tmp_path: Path) -> None:
    """One worker's embedded server killed mid-run: the worker starts a new server and
    bots, dask runs the failed sets again, and the run ends with every match once.

    The server is killed once a set is committed while the gate bot holds a match in
    flight (its time limit never runs out here), then the gate opens: whatever the order
    the sets run in, work was done before the kill and was in flight at it."""
    bots = {"easy": "builtin:easy", "gate": "python:last_bot:Gate"}
    t = _tournament(tmp_path, games=4, bots=bots, time_limit_ms=3_600_000)
    total = len(schedule(t))
    async with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
            asynchronous=True,
        ) as cluster,
        Client(cluster, asynchronous=True) as client,
    ):  # fmt: skip
        arena = DaskArena(t, tmp_path / "out", scheduler=cluster.scheduler_address)
        committed: list[int] = []
        arena.on_progress = lambda _: committed.append(arena.summary.played)

        async def kill_server() -> int:
            held = tmp_path / "gate-held"
            await until(lambda: committed and held.exists(), 120, "a commit and a held match")
            killed: dict[str, int] = await client.run(_kill_servers)
            (tmp_path / "gate-open").write_text("")
            return sum(killed.values())

        killer = asyncio.create_task(kill_server())
        try:  # the bound keeps a run that never gets there from hanging the suite
            summary = await asyncio.wait_for(arena.run(), 600)
        finally:
            (tmp_path / "gate-open").write_text("")
        assert await killer == 1  # one server was killed, with a match in flight
    assert 1 <= committed[0] < total and summary.played == total
    assert sorted(_played(tmp_path / "out")) == sorted(m.key for m in schedule(t))


def _capicua_children() -> list[str]:
    import psutil

    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            line = " ".join(p.cmdline())
        except psutil.Error:  # gone meanwhile, or a zombie (it exited)
            continue
        if "capicua" in line:
            found.append(line)
    return found


async def test_a_bot_crashing_on_a_worker_meets_the_failure_policy(tmp_path: Path) -> None:
    """The worker restarts it and, after max_crashes, disqualifies it; the head records the
    crashes and the disqualification, and skips its sets not yet started.

    The bot crashes on its first decision of every process, so it is disqualified within
    the first matches it is in, whatever order the sets run in: of twenty matches (every
    one with it, two at a time on the worker) some are still to start then."""
    bots = {"easy": "builtin:easy", "crashy": "python:last_bot:Crashy"}
    t = _tournament(tmp_path, games=10, bots=bots, max_crashes=2, time_limit_ms=3000)
    total = len(schedule(t))
    arena = DaskArena(t, tmp_path / "out", workers=1)
    summary = await arena.run()
    assert list(summary.disqualified) == ["crashy"]
    assert summary.played + summary.skipped == total and summary.skipped > 0
    results = Results.open_existing(tmp_path / "out")
    try:
        [crashy] = [b for b in results.bots() if b.name == "crashy"]
        assert crashy.disqualified and "failed 2 times" in (crashy.disqualified_reason or "")
        kinds = Counter(f.kind for f in results.failures() if f.bot == "crashy")
        assert kinds["crash"] == 2, kinds  # each process died once, and was counted once
    finally:
        results.close()
    assert len(_played(tmp_path / "out")) == summary.played
    # the disqualification is kept: a resumed run plays none of its matches
    again = await Arena(t, tmp_path / "out").run()
    assert (again.already, again.played, again.skipped) == (summary.played, 0, summary.skipped)


def _dask(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as err:
        return subprocess.Popen(
            [PY, "-m", *args], stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_scheduler_going_away_ends_the_run_resumably(tmp_path: Path) -> None:
    t = _tournament(
        tmp_path, games=12, bots={"easy": "builtin:easy", "slow": "python:last_bot:Slow"}
    )
    address = f"tcp://127.0.0.1:{_free_port()}"
    port = address.rsplit(":", 1)[1]
    scheduler = _dask(
        "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", port,
        "--dashboard-address", ":0", log=tmp_path / "scheduler.log",
    )  # fmt: skip
    worker = _dask(
        "distributed.cli.dask_worker", address, "--nthreads", "1", "--nworkers", "1",
        "--no-dashboard", log=tmp_path / "worker.log",
    )  # fmt: skip
    try:
        arena = DaskArena(t, tmp_path / "out", scheduler=address)
        arena.scheduler_timeout = 2.0

        def stop_scheduler(_: Results) -> None:
            if scheduler.poll() is None:
                scheduler.kill()

        arena.on_progress = stop_scheduler
        # the error names the cause: the run ended because the scheduler went away (the
        # bound only keeps a run that never notices from hanging the suite)
        with pytest.raises(ArenaError, match="went away; finished matches are kept"):
            await asyncio.wait_for(arena.run(), 600)
    finally:
        for proc in (worker, scheduler):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(20)
    kept = _played(tmp_path / "out")
    assert 1 <= len(kept) < len(schedule(t))
    rest = await Arena(t, tmp_path / "out").run()  # resumable, here on the local backend
    assert rest.already == len(kept) and rest.already + rest.played == len(schedule(t))


def test_the_command_line_runs_on_dask(tmp_path: Path) -> None:
    """``capicua arena run --backend dask --workers 1 --json``: the worker processes are
    spawned from the CLI's own entry point; the standings are the local backend's."""
    (tmp_path / "t.toml").write_text(
        'name = "cli"\npreset = "iq-1v1"\noverrides = ["target=20"]\ngames = 2\nseed = 1\n'
        '[bots]\neasy = "builtin:easy"\nlast = "python:last_bot:Last"\n'
    )
    (tmp_path / "last_bot.py").write_text(LAST)
    outs = {}
    for backend in (["--backend", "dask", "--workers", "1"], []):
        out = tmp_path / f"out-{len(backend)}"
        r = subprocess.run(
            [PY, "-m", "capicua", "arena", "run", "t.toml", "--out", str(out), "--json", *backend],
            cwd=tmp_path, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        table = json.loads(r.stdout.strip().splitlines()[-1])
        outs[len(backend)] = [
            (b["name"], b["wins"], b["losses"], b["hand_wins"]) for b in table["bots"]
        ]
    assert outs[4] == outs[0] and sum(wins for _, wins, _, _ in outs[0]) == 4
    r = subprocess.run(
        [PY, "-m", "capicua", "arena", "run", "t.toml", "--scheduler", "tcp://x:1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "--scheduler goes with --backend dask" in r.stderr


def _last_json(args: list[str], cwd: Path) -> dict[str, Any]:
    r = subprocess.run(
        [PY, "-m", "capicua", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    result: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    "bots",
    [
        pytest.param("random", id="in-process"),  # the engine alone, tasks on the workers
        pytest.param("python:last_bot:Last", id="over-the-protocol"),  # servers on workers
    ],
)
def test_an_experiment_gives_the_same_result_on_dask(tmp_path: Path, bots: str) -> None:
    (tmp_path / "last_bot.py").write_text(LAST)
    args = [
        "experiment", "ab", "--base", "dominican", "--candidate", "dominican",
        "--candidate-set", "finish_bonus.capicua.effect=add:25", "--bots", bots,
        "--hands", "60", "--json", "--workers", "2",
    ]  # fmt: skip
    local = _last_json([*args, "--out", "local"], tmp_path)
    dask = _last_json([*args, "--out", "dask", "--backend", "dask"], tmp_path)
    assert dask == local and local["pairs"] == 60


def test_an_sprt_decides_alike_on_dask(tmp_path: Path) -> None:
    """Over the protocol (a python: candidate): the sets come back in any order, the test
    counts them in order, so it reaches the same state."""
    (tmp_path / "last_bot.py").write_text(LAST)
    args = [
        "arena", "sprt", "--base", "easy", "--candidate", "python:last_bot:Last",
        "--rules", "iq-1v1", "--set", "target=30", "--max-pairs", "12", "--json",
        "--workers", "2",
    ]  # fmt: skip
    local = _last_json([*args, "--out", "local"], tmp_path)
    dask = _last_json([*args, "--out", "dask", "--backend", "dask"], tmp_path)
    assert dask == local and local["pairs"] == 12


def test_an_sprt_that_decides_stops_the_cluster_early(tmp_path: Path) -> None:
    """Drain on dask: once the test decides, no more sets are submitted; those in flight
    finish. Bounds wide apart, so that it decides within a few pairs of 400; bots whose
    choices depend on the position only (random's would depend on the order its process
    plays the sets in, so the decision could differ from run to run)."""
    (tmp_path / "last_bot.py").write_text(LAST)
    result = _last_json(
        [
            "arena", "sprt", "--base", "easy", "--candidate", "python:last_bot:Last",
            "--rules", "iq-1v1", "--set", "target=20", "--elo0", "-400", "--elo1", "-300",
            "--max-pairs", "400", "--out", "out", "--json", "--backend", "dask",
            "--workers", "2",
        ],
        tmp_path,
    )  # fmt: skip
    assert result["decision"] == "H1" and result["pairs"] < 100
    results = Results.open_existing(tmp_path / "out")
    try:
        recorded = len(results.matches())
    finally:
        results.close()
    assert recorded < 2 * 100  # far from the 800 matches of 400 pairs
