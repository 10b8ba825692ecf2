"""Several `capicua serve --db postgresql://...` processes on one real PostgreSQL server
(tests/pgkit.py): they share the bots and the ladders' rosters, and each ladder's
matchmaker runs in exactly one of them, moving to another when that one is killed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from capicua.arena.ladder.board import LadderBoard
from capicua.arena.store import location
from capicua.client import run as run_bot
from capicua.client.lobby import LobbyError
from capicua.common.sqldb import connect_postgres
from capicua.v1 import play_pb2
from tests.compliance.client import Lobby, until
from tests.ladderkit import LADDER_FILE, Counting, committed, run_capicua, stored
from tests.serverkit import ServerProcess, server_process

CLUB = "ladders/club-ladder"
BOUND = 1200  # polls of 0.05 s: a minute


@contextlib.contextmanager
def cluster(
    tmp_path: Path, url: str, names: tuple[str, ...], *extra: str
) -> Iterator[list[ServerProcess]]:
    """One server process per name on the database ``url``, each with its own --data, all
    running the ladder of LADDER_FILE (with ``extra`` arguments); started one after
    another."""
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE)
    with contextlib.ExitStack() as stack:
        servers = []
        for name in names:
            args = ["--data", str(tmp_path / name), "--db", url, "--ladder", str(file), *extra]
            servers.append(stack.enter_context(server_process(args, tmp_path / "logs")))
        yield servers


def leaders(url: str) -> dict[str, str]:
    """ladder id -> the peer address of its live leader, as the database says (none while
    no process has made the table yet: a server says its address before its thread for
    the shared tables has made them, which a busy machine shows)."""
    db = connect_postgres(url, schema="capicua")
    try:
        if db.execute("SELECT to_regclass('ladder_leaders')").fetchone() == (None,):
            return {}
        rows = db.execute(
            "SELECT l.ladder_id, l.address FROM ladder_leaders l "
            "WHERE l.pid IN (SELECT pid FROM pg_stat_activity)"
        ).fetchall()
        return {str(k): str(v) for k, v in rows}
    finally:
        db.close()


async def test_processes_share_bots_and_rosters(tmp_path: Path, postgres_url: str) -> None:
    """A bot registered on one process works on the other at once (its token is looked up
    when unknown); a join on one is in the other's roster; two processes registering one
    id: the second is told it exists."""
    with cluster(tmp_path, postgres_url, ("a", "b")) as (a, b):
        on_a, on_b = Lobby(a.address), Lobby(b.address)
        try:
            bot_id, token = await on_b.register("shared")
            joined = await on_a.join_ladder(CLUB, "v1", token=token)  # known to a at once
            assert joined.bot == f"bots/{bot_id}"

            for _ in range(BOUND):  # b reads the rosters again every 0.5 s
                got = await on_b.get_ladder(CLUB)
                if [e.name for e in got.entries if not e.built_in] == [joined.name]:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("b's roster never held the join made on a")
            again = play_pb2.RegisterBotRequest(bot_id=bot_id, description="again")
            with pytest.raises(LobbyError) as taken:  # the same id, on the other process
                await on_a.register_bot(again, token="")
            assert taken.value.code == grpc.StatusCode.ALREADY_EXISTS
            # a version made on b supersedes the one made on a (one roster)
            second = await on_b.join_ladder(CLUB, "v2", token=token)
            assert second.predecessor == joined.name
        finally:
            await on_a.close()
            await on_b.close()


async def test_one_leader_per_ladder_and_another_when_it_is_killed(
    tmp_path: Path, postgres_url: str
) -> None:
    with cluster(tmp_path, postgres_url, ("a", "b")) as (a, b):
        await until(lambda: "club-ladder" in leaders(postgres_url), what="a leader")
        first = leaders(postgres_url)["club-ladder"]
        assert first in (a.address, b.address)
        killed, other = (a, b) if first == a.address else (b, a)
        await until(lambda: '"ladder_runner_starting"' in killed.logs(), what="its runner")
        assert '"ladder_runner_starting"' not in other.logs()  # one runner
        # nor a `ladder run` beside them: one lock says who plays the ladder
        beside = run_capicua(
            "ladder", "run", str(tmp_path / "club.toml"), "--out", f"{postgres_url}#club-ladder"
        )
        assert beside.returncode != 0
        assert f"in use by another run (capicua serve pid {killed.proc.pid}" in beside.stderr
        await _kill_and_await(killed, other, postgres_url)
        await until(lambda: '"ladder_runner_starting"' in other.logs(), what="its runner")


def test_a_bad_db_is_one_line(tmp_path: Path) -> None:
    nowhere = f"postgresql://me:secret@/nothing?host={tmp_path}"
    done = run_capicua("serve", "--port", "0", "--db", nowhere)
    assert done.returncode != 0
    [line] = done.stderr.strip().splitlines()
    assert "cannot connect" in line and "secret" not in line
    done = run_capicua("serve", "--port", "0", "--db", "sqlite:///x")
    assert done.returncode == 2 and "expected a postgresql:// URL" in done.stderr


async def test_a_bot_on_a_follower_plays_and_the_ladder_survives_its_leader(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two processes on one PostgreSQL; bots connected only to the follower play the
    ladder's matches, which the leader hosts (relayed); the leader killed (kill -9), the
    follower leads, voids what was in flight, and the same bots play on: every match
    committed before the kill is kept, and none is stored twice."""
    where = location(f"{postgres_url}#club-ladder")
    with cluster(tmp_path, postgres_url, ("a", "b"), "--http", "0") as (a, b):
        await until(lambda: "club-ladder" in leaders(postgres_url), what="a leader")
        leader, follower = (a, b) if leaders(postgres_url)["club-ladder"] == a.address else (b, a)
        bots = [await _joined(follower.address, name) for name in ("alpha", "beta")]
        runs = [
            asyncio.create_task(run_bot(Counting(bot_id), server=follower.address, token=token))
            for bot_id, token in bots
        ]
        try:
            alpha = f"{bots[0][0]}@v1"
            await until(lambda: stored(where, alpha) >= 3, timeout=120, what="relayed matches")
            before = committed(where)
            # each process serves the leaderboard, from the shared results
            assert follower.proc.stdout is not None
            said = follower.proc.stdout.readline().decode()
            table = f"{said.split('leaderboard on ')[1].strip()}api/ladders/club-ladder"
            await until(lambda: alpha in _read_json(table), 120, "alpha on the follower's table")
            # played on the leader (it alone creates the ladder's matches), through relays
            assert '"relay_connected"' in follower.logs()
            assert all(
                name and name.removeprefix("matches/") in leader.logs() for _, name in before
            )
            assert not any(
                name and name.removeprefix("matches/") in follower.logs() for _, name in before
            )
            await _kill_and_await(leader, follower, postgres_url)
            await until(
                lambda: len(committed(where)) >= len(before) + 3, timeout=120, what="play to go on"
            )
        finally:
            for run in runs:
                run.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
    after = committed(where)
    assert before <= after  # nothing committed before the kill was lost
    names = [name for _, name in after]
    assert all(names) and len(set(names)) == len(names)  # no server match stored twice


async def _joined(address: str, name: str) -> tuple[str, str]:
    lobby = Lobby(address)
    try:
        bot_id, token = await lobby.register(name)
        await lobby.join_ladder(CLUB, "v1", token=token)
        return bot_id, token
    finally:
        await lobby.close()


async def _kill_and_await(killed: ServerProcess, other: ServerProcess, url: str) -> None:
    """kill -9 the leading process, and wait for ``other`` to lead the ladder."""
    killed.proc.kill()
    killed.proc.wait(30)
    await until(
        lambda: leaders(url).get("club-ladder") == other.address,
        timeout=60,
        what="the other process to lead",
    )


def _read_json(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.dumps(json.load(answer))


async def test_a_leaderboard_waits_for_a_ladder_not_made_yet(
    tmp_path: Path, postgres_url: str
) -> None:
    """A process serving the leaderboard of a ladder whose leader has not made its tables
    yet waits for them, then shows it (it used to stop watching for good)."""
    where = location(f"{postgres_url}#club-ladder")
    board = LadderBoard(where, "Club ladder", refresh_seconds=0.05)
    board.start()
    try:
        file = tmp_path / "club.toml"
        file.write_text(LADDER_FILE)
        done = await asyncio.to_thread(
            run_capicua, "ladder", "run", str(file), "--out", str(where), "--matches", "4"
        )
        assert done.returncode == 0, done.stderr
        snapshot = await asyncio.wait_for(board.snapshot(), 60)
        assert snapshot.table.matches >= 4 and snapshot.table.entries
    finally:
        await board.close()
