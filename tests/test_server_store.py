"""Persistence: finished matches and their replays in SQLite under --data, surviving a
restart; every replay the server writes passes ``capicua replay verify``."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from capicua.cli import main
from capicua.v1 import game_pb2, match_pb2, play_pb2, replay_pb2
from capicua.wire import codec
from tests.compliance.client import OPEN, Bot, auth, bot_seat, cpu_seat, until
from tests.serverkit import running, wait_finished


def stored_replays(data: Path) -> dict[str, replay_pb2.Replay]:
    """The replays the store holds (as protobuf bytes), read as another process would."""
    with sqlite3.connect(data / "capicua.sqlite3") as db:
        rows = db.execute("SELECT match_id, replay FROM replay_protos")
        return {match_id: replay_pb2.Replay.FromString(blob) for match_id, blob in rows}


async def test_finished_matches_and_replays_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running(data) as (_, lobby):
        bot_id, token = await lobby.register("keeper")
        played, host = await lobby.create(
            "el-dominito-2p", [bot_seat(bot_id), cpu_seat()], tags=["exp-1"], seed=8
        )
        bot = Bot(lobby.address, token)
        run = asyncio.create_task(bot.run([played.name]))
        await until(lambda: bot.welcome is not None)
        await lobby.start(played.name, host)
        await asyncio.wait_for(run, 60)
        unstarted, unstarted_host = await lobby.create("block", [OPEN] * 4, tags=["exp-1"])
        await lobby.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=unstarted.name),
            metadata=auth(unstarted_host),
            timeout=10,
        )
        before = await lobby.get(played.name)

    replays = stored_replays(data)
    assert set(replays) == {played.name.removeprefix("matches/")}

    async with running(data) as (_, lobby):
        after = await lobby.get(played.name)
        assert after == before and after.state == match_pb2.MATCH_STATE_FINISHED
        replay = await lobby.replay(played.name)  # verified
        assert replay.tags == ("exp-1",) and replay.players[0] == bot_id
        listed = await lobby.matches.ListMatches(
            match_pb2.ListMatchesRequest(tag="exp-1"), timeout=10
        )
        assert [m.name for m in listed.matches] == [unstarted.name, played.name]
        gone = await lobby.get(unstarted.name)
        assert gone.outcome.termination == game_pb2.TERMINATION_CANCELLED
        # The bot's token still works after the restart.
        match, host = await lobby.create("iq-1v1", [bot_seat(bot_id), cpu_seat()], seed=1)
        again = Bot(lobby.address, token)
        run = asyncio.create_task(again.run([match.name]))
        await until(lambda: again.welcome is not None)
        assert again.welcome is not None
        assert again.welcome.principal == f"bots/{bot_id}"
        await lobby.start(match.name, host)
        await asyncio.wait_for(run, 60)


async def test_every_stored_replay_passes_capicua_replay_verify(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running(data, turn_timer_ms=200) as (_, lobby):
        names = []
        for preset, seats, overrides in [
            ("cutthroat", [cpu_seat()] * 3, []),
            ("cuban", [cpu_seat()] * 4, ["target=40"]),
            ("draw", [cpu_seat()] * 2, ["seats=2", "sides=individual", "target=30"]),
        ]:
            match, host = await lobby.create(preset, seats, overrides=overrides, seed=4)
            await lobby.start(match.name, host)
            names.append(match.name)
        # A forfeit by timeout and a cancel mid-match are recorded too.
        bot_id, token = await lobby.register("sleepy")
        silent = Bot(lobby.address, token, chooser=lambda b, d: None)
        run = asyncio.create_task(silent.run(timeout=30))
        await until(lambda: silent.welcome is not None)
        late, late_host = await lobby.create(
            "block",
            [bot_seat(bot_id)] + [cpu_seat()] * 3,
            on_timeout=match_pb2.TIMEOUT_POLICY_FORFEIT,
        )
        cancelled, cancel_host = await lobby.create(
            "block", [bot_seat(bot_id)] + [cpu_seat()] * 3, timer_ms=60_000
        )
        await lobby.start(late.name, late_host)
        await lobby.start(cancelled.name, cancel_host)
        await until(lambda: cancelled.name in {d.match for d in silent.decisions})
        await lobby.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=cancelled.name),
            metadata=auth(cancel_host),
            timeout=10,
        )
        for name in [*names, late.name]:
            await wait_finished(lobby, name)
        run.cancel()
        assert (await lobby.get(late.name)).outcome.termination == game_pb2.TERMINATION_TIMEOUT

    replays = stored_replays(data)
    assert len(replays) == 5
    files = []
    for match_id, pb in replays.items():
        path = tmp_path / f"{match_id}.json"
        codec.write_replay(path, codec.replay_from_proto(pb))
        files.append(str(path))
    result = CliRunner().invoke(main, ["replay", "verify", *files])
    assert result.exit_code == 0, result.output
    assert result.output.count(": OK (") == 5


async def test_a_replay_an_older_server_stored_as_json_is_still_served(tmp_path: Path) -> None:
    """A store written before replays were kept as protobuf bytes holds them as protobuf
    JSON in ``replays``: GetReplay reads those rows as it always did."""
    data = tmp_path / "data"
    async with running(data) as (_, lobby):
        match, host = await lobby.create("block", [cpu_seat()] * 4, overrides=["target=15"])
        await lobby.start(match.name, host)
        await wait_finished(lobby, match.name)
        before = await lobby.get_replay(match.name)
    match_id = match.name.removeprefix("matches/")
    (pb,) = stored_replays(data).values()
    with sqlite3.connect(data / "capicua.sqlite3") as db:  # as the older server wrote it
        db.execute("DELETE FROM replay_protos")
        legacy = codec.replay_to_json(codec.replay_from_proto(pb))
        db.execute("INSERT INTO replays (match_id, replay_json) VALUES (?, ?)", (match_id, legacy))
    async with running(data) as (_, lobby):
        assert await lobby.get_replay(match.name) == before
        await lobby.replay(match.name)  # verified by the engine


def test_play_request_has_no_secrets() -> None:
    """The client never needs to send more than a turn id and an action id."""
    fields = {f.name for f in play_pb2.ActionReply.DESCRIPTOR.fields}
    assert fields == {"match", "turn_id", "action_id"}
