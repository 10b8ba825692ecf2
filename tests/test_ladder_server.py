"""Ladders on the server (issue: a standing ladder): LadderService over real gRPC on
loopback (joining, versions and their lineage, leaving, limits, what survives a restart),
and `capicua serve --ladder FILE` as a subprocess: bots that join get their ladder matches
on their usual Play stream, within their declared limit, and the ladder's results directory
rates them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from capicua.arena.runner import tag_of
from capicua.arena.store import Results
from capicua.client import run as run_bot
from capicua.client.lobby import LobbyError
from capicua.server.faults import Faults
from capicua.server.ladders import LadderDef
from capicua.v1 import game_pb2, ladder_pb2, match_pb2
from tests.compliance.client import Bot, Lobby, auth, until
from tests.ladderkit import LADDER_FILE, Counting, committed, run_capicua, stored
from tests.serverkit import running, server_process

CLUB = LadderDef("club", "Club ladder", "iq-1v1", ("target=20",), 1500, ("random", "easy"))
ENTRY = "ladders/club/entries/"


def _states(got: ladder_pb2.GetLadderResponse) -> dict[str, tuple[int, str]]:
    """Entry id -> (state, predecessor id) of the joined entries."""
    return {
        e.name.removeprefix(ENTRY): (e.state, e.predecessor.removeprefix(ENTRY))
        for e in got.entries
        if not e.built_in
    }


async def test_joining_versions_leaving_and_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running(data, ladders=(CLUB,)) as (_, lobby):
        listed = (await lobby.list_ladders()).ladders
        assert [
            (d.name, d.title, d.preset, list(d.overrides), d.turn_timer_ms) for d in listed
        ] == [("ladders/club", "Club ladder", "iq-1v1", ["target=20"], 1500)]
        got = await lobby.get_ladder(CLUB.name)
        assert [(e.name, e.built_in) for e in got.entries] == [
            (ENTRY + "random", True),
            (ENTRY + "easy", True),
        ]
        greedy, token = await lobby.register("greedy")
        first = await lobby.join_ladder(CLUB.name, "v1", max_concurrent_matches=2, token=token)
        assert (first.name, first.bot, first.version, first.predecessor) == (
            f"{ENTRY}{greedy}@v1", f"bots/{greedy}", "v1", ""
        )  # fmt: skip
        assert first.state == ladder_pb2.ENTRY_STATE_ACTIVE
        assert first.max_concurrent_matches == 2 and not first.connected
        assert first.uptime == 0.0  # its bot has had no stream yet
        again = await lobby.join_ladder(CLUB.name, "v1", max_concurrent_matches=3, token=token)
        assert again.name == first.name and again.max_concurrent_matches == 3

        # its Play stream open: the roster says it is connected
        stream = Bot(lobby.address, token)
        playing = asyncio.create_task(stream.run(timeout=60))
        await until(lambda: stream.welcome is not None, what="the welcome")
        got = await lobby.get_ladder(CLUB.name)
        assert [e.connected for e in got.entries if not e.built_in] == [True]
        [online] = [e.uptime for e in got.entries if not e.built_in]
        assert 0.0 < online <= 1.0  # online for part of the time since it joined
        playing.cancel()

        second = await lobby.join_ladder(CLUB.name, "v2", token=token)
        assert second.predecessor == f"{ENTRY}{greedy}@v1"
        assert _states(await lobby.get_ladder(CLUB.name)) == {
            f"{greedy}@v1": (ladder_pb2.ENTRY_STATE_SUPERSEDED, ""),
            f"{greedy}@v2": (ladder_pb2.ENTRY_STATE_ACTIVE, f"{greedy}@v1"),
        }
        with pytest.raises(LobbyError) as back:  # a superseded version does not come back
            await lobby.join_ladder(CLUB.name, "v1", token=token)
        assert back.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "superseded" in back.value.details

        left = await lobby.leave_ladder(CLUB.name, token=token)
        assert left.name == f"{ENTRY}{greedy}@v2" and left.state == ladder_pb2.ENTRY_STATE_LEFT
        assert (await lobby.list_ladders()).ladders[0].active_entries == 2  # the built-ins

    async with running(data, ladders=(CLUB,)) as (_, lobby):  # the same store, restarted
        assert _states(await lobby.get_ladder(CLUB.name)) == {
            f"{greedy}@v1": (ladder_pb2.ENTRY_STATE_SUPERSEDED, ""),
            f"{greedy}@v2": (ladder_pb2.ENTRY_STATE_LEFT, f"{greedy}@v1"),
        }
        rejoined = await lobby.join_ladder(CLUB.name, "v2", token=token)  # the token too
        assert rejoined.state == ladder_pb2.ENTRY_STATE_ACTIVE
        assert rejoined.predecessor == f"{ENTRY}{greedy}@v1"


@pytest.mark.parametrize(
    ("version", "matches", "field"),
    [
        ("", 1, "version"),
        ("v 2", 1, "version"),
        ("x" * 33, 1, "version"),
        ("v1", 33, "max_concurrent_matches"),
        ("v1", -1, "max_concurrent_matches"),
    ],
)
async def test_a_bad_join_names_its_field(version: str, matches: int, field: str) -> None:
    async with running(None, ladders=(CLUB,)) as (_, lobby):
        _, token = await lobby.register("greedy")
        with pytest.raises(LobbyError) as refused:
            await lobby.join_ladder(CLUB.name, version, max_concurrent_matches=matches, token=token)
        assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert refused.value.details.startswith(f"{field}: ")
        assert _states(await lobby.get_ladder(CLUB.name)) == {}


async def test_joining_takes_a_bot_token_and_versions_are_limited() -> None:
    async with running(None, ladders=(CLUB,), max_versions_per_day=2) as (_, lobby):
        request = ladder_pb2.JoinLadderRequest(ladder=CLUB.name, version="v1")
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await lobby.ladder_service.JoinLadder(request)
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        churn, token = await lobby.register("churn")
        for version in ("v1", "v2"):
            await lobby.join_ladder(CLUB.name, version, token=token)
        with pytest.raises(LobbyError) as limited:
            await lobby.join_ladder(CLUB.name, "v3", token=token)
        assert limited.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-versions-per-day" in limited.value.details
        # its other ladder entries untouched, anyone may read the roster
        assert _states(await lobby.get_ladder(CLUB.name))[f"{churn}@v2"][0] == (
            ladder_pb2.ENTRY_STATE_ACTIVE
        )
        extra = ladder_pb2.GetLadderRequest(name=CLUB.name)
        assert len((await lobby.ladder_service.GetLadder(extra, metadata=auth(token))).entries)


async def _join_and_play(address: str, name: str, version: str, matches: int) -> Counting:
    """Register ``name``, join the club as ``version`` (one match at a time), and play
    ``matches`` of its matches."""
    lobby = Lobby(address)
    try:
        bot_id, token = await lobby.register(name)
        await lobby.join_ladder(
            "ladders/club-ladder", version, max_concurrent_matches=1, token=token
        )
    finally:
        await lobby.close()
    bot = Counting(bot_id)
    await run_bot(bot, server=address, token=token, matches=matches)
    return bot


async def test_serve_with_a_ladder_gives_joined_bots_their_matches(tmp_path: Path) -> None:
    """Two bots join `capicua serve --ladder FILE`; their ladder matches come on their Play
    stream, one at a time as they asked, and the ladder's directory rates them."""
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE)
    data = tmp_path / "data"
    with server_process(["--data", str(data), "--ladder", str(file)], tmp_path / "logs") as srv:
        bots = await asyncio.gather(
            _join_and_play(srv.address, "alpha", "v1", 5),
            _join_and_play(srv.address, "beta", "v1", 5),
        )
        # what they played is committed once the runner has its replay: wait for it
        out = data / "ladders" / "club-ladder"
        entries = [f"{bot.bot_id}@v1" for bot in bots]
        await until(lambda: all(stored(out, e) >= 5 for e in entries), what="the commits")
        listed = await _listed(srv.address, tag_of("Club ladder"))
        assert srv.stop() == 0
    # a set's earlier matches are unlisted (they deal its later ones' tiles), its last is
    results = Results(out, read_only=True)
    try:
        rows = {m.server_match: m for m in results.matches() if m.server_match}
    finally:
        results.close()
    last = {n for n, m in rows.items() if m.rotation == 1 and m.set_key.startswith("L")}
    assert last and listed & rows.keys() <= last and last <= listed
    for bot in bots:
        assert len(bot.ended) == 5 and bot.most == 1  # its limit held
    shown = run_capicua("ladder", "show", str(data / "ladders" / "club-ladder"), "--json")
    assert shown.returncode == 0, shown.stderr
    table = {row["name"]: row for row in json.loads(shown.stdout)["entries"]}
    names = [f"{bot.bot_id}@v1" for bot in bots]
    assert {*names, "random", "easy"} == table.keys()
    for bot, name in zip(bots, names, strict=True):
        assert table[name]["matches"] >= 4  # the validation match is not rated
        assert table[name]["spec"] == f"remote:{bot.bot_id} version v1"
        assert table[name]["status"] == "playing"


def test_a_ladder_file_with_a_remote_entry_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE + 'friend = "remote:friend"\n')
    done = run_capicua("serve", "--port", "0", "--ladder", str(file))
    assert done.returncode != 0
    assert "entries.friend: on a server's ladder, bots join by themselves" in done.stderr
    assert "Traceback" not in done.stderr


class Stalling(Counting):
    """Plays ``before`` matches, then holds its next decision until ``release`` is set."""

    def __init__(self, bot_id: str, before: int) -> None:
        super().__init__(bot_id)
        self.before = before
        self.release = threading.Event()
        self.stalled: str | None = None  # the match it holds a decision of
        self.current = ""

    def on_match_started(self, match: str, seat: int, observation: Any) -> None:
        super().on_match_started(match, seat, observation)
        self.current = match

    def choose(self, observation: Any, legal_actions: Sequence[Any]) -> Any:
        if len(self.ended) >= self.before and self.stalled is None:
            self.stalled = self.current
            self.release.wait(120)
        return legal_actions[0]


async def _registered(address: str, name: str) -> tuple[str, str]:
    lobby = Lobby(address)
    try:
        bot_id, token = await lobby.register(name)
        await lobby.join_ladder("ladders/club-ladder", "v1", token=token)
        return bot_id, token
    finally:
        await lobby.close()


async def test_a_killed_ladder_server_voids_the_match_in_flight(tmp_path: Path) -> None:
    """kill -9 while a ladder match waits on a bot: at the next start the ladder cancels it
    (voided: never rated), keeps every match committed before, and numbers its sets on."""
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE.replace("time_limit_ms = 5000", "time_limit_ms = 600000"))
    data, out = tmp_path / "data", tmp_path / "data" / "ladders" / "club-ladder"
    args = ["--data", str(data), "--ladder", str(file)]
    with server_process(args, tmp_path / "logs") as srv:
        (alpha, alpha_token), (beta, beta_token) = [
            await _registered(srv.address, name) for name in ("alpha", "beta")
        ]
        stalling = Stalling(alpha, before=3)
        runs = [
            asyncio.create_task(run_bot(stalling, server=srv.address, token=alpha_token)),
            asyncio.create_task(run_bot(Counting(beta), server=srv.address, token=beta_token)),
        ]
        await until(lambda: stalling.stalled is not None, what="alpha holding a decision")
        await until(lambda: stored(out, f"{alpha}@v1") >= 3, what="its matches committed")
        before = committed(out)
        srv.proc.kill()
        srv.proc.wait(30)
        stalling.release.set()
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
    held = stalling.stalled
    assert held is not None

    with server_process(args, tmp_path / "logs") as srv:
        lobby = Lobby(srv.address)
        try:
            # bounded: without the voiding the match would wait on alpha for ten minutes
            voided = await asyncio.wait_for(_ended(lobby, held), 120)
        finally:
            await lobby.close()
        assert voided.outcome.termination == game_pb2.TERMINATION_CANCELLED
        assert "voided" in voided.outcome.reason
        again = [
            run_bot(Counting(alpha), server=srv.address, token=alpha_token, matches=2),
            run_bot(Counting(beta), server=srv.address, token=beta_token, matches=2),
        ]
        await asyncio.gather(*again)
        await until(lambda: len(committed(out)) >= len(before) + 2, what="new commits")
        assert srv.stop() == 0
    after = committed(out)
    assert before <= after  # nothing committed before the kill was lost
    rated = {m for _, m in after}
    assert held not in rated and held.removeprefix("matches/") not in rated  # never rated
    newest = max(seq for (seq, _), _ in before)
    assert all(seq > newest for (seq, _), _ in after - before)  # sets numbered on


async def _listed(address: str, tag: str) -> set[str]:
    """The names of the finished matches the server lists with ``tag``."""
    lobby = Lobby(address)
    try:
        query = match_pb2.ListMatchesRequest(tag=tag)
        return {m.name async for m in lobby.list_matches(query)}
    finally:
        await lobby.close()


async def _ended(lobby: Lobby, name: str) -> match_pb2.Match:
    """Match ``name`` once it is over (WatchMatch: the server tells)."""
    async for message in lobby.watch_match(name):
        if message.HasField("match_ended"):
            break
    return await lobby.get_match(name)


async def test_a_join_that_changes_nothing_writes_nothing() -> None:
    """A bot repeating its join (a flood of them) costs the store nothing: with the disk
    failing, the same join still answers, and a join that changes the entry is refused."""
    faults = Faults()
    async with running(None, ladders=(CLUB,), faults=faults) as (_, lobby):
        _, token = await lobby.register("steady")
        await lobby.join_ladder(CLUB.name, "v1", max_concurrent_matches=2, token=token)

        def disk_full() -> None:
            raise sqlite3.OperationalError("database or disk is full")

        faults.store_write = disk_full
        for _ in range(3):
            same = await lobby.join_ladder(CLUB.name, "v1", max_concurrent_matches=2, token=token)
            assert same.max_concurrent_matches == 2
        with pytest.raises(LobbyError) as refused:
            await lobby.join_ladder(CLUB.name, "v1", max_concurrent_matches=3, token=token)
        assert refused.value.code == grpc.StatusCode.INTERNAL
        faults.store_write = None
        kept = [e for e in (await lobby.get_ladder(CLUB.name)).entries if not e.built_in]
        assert [e.max_concurrent_matches for e in kept] == [2]  # the refused change is not kept


ADMIN = "ladder-admin-token"


async def test_owners_and_the_admin_control_a_served_ladder(tmp_path: Path) -> None:
    """Over the protocol: an owner blocks, challenges and runs a private gauntlet with its
    bot token; the admin pauses, removes an entry and starts and ends a season; each is
    refused to the other's token, and the ladder plays what they asked."""
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE)
    data = tmp_path / "data"
    out = data / "ladders" / "club-ladder"
    args = ["--data", str(data), "--ladder", str(file)]
    with server_process(args, tmp_path / "logs", admin_token=ADMIN) as srv:
        lobby = Lobby(srv.address)
        try:
            await _control_scenario(lobby, srv.address, out)
        finally:
            await lobby.close()


async def _control_scenario(lobby: Lobby, address: str, out: Path) -> None:
    ladder = "ladders/club-ladder"
    (alpha, a_token), (beta, b_token) = [
        await lobby.register(name, admin=ADMIN) for name in ("alpha", "beta")
    ]
    for token in (a_token, b_token):
        await lobby.join_ladder(ladder, "v1", token=token)
    beta_entry, easy = f"{ladder}/entries/{beta}@v1", f"{ladder}/entries/easy"
    stub, a_auth = lobby.ladder_service, auth(a_token)
    runs = [
        asyncio.create_task(run_bot(Counting(alpha), server=address, token=a_token)),
        asyncio.create_task(run_bot(Counting(beta), server=address, token=b_token)),
    ]
    try:
        await until(lambda: stored(out, f"{alpha}@v1") >= 1, what="alpha's validation")
        block = ladder_pb2.BlockEntryRequest(opponent=beta_entry)
        assert (await stub.BlockEntry(block, metadata=a_auth)).changed
        assert not (await stub.BlockEntry(block, metadata=a_auth)).changed
        challenge = ladder_pb2.ChallengeEntryRequest(opponent=beta_entry, sets=2)
        with pytest.raises(grpc.aio.AioRpcError) as blocked:
            await stub.ChallengeEntry(challenge, metadata=a_auth)
        assert blocked.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "block" in (blocked.value.details() or "")
        unblock = ladder_pb2.BlockEntryRequest(opponent=beta_entry, unblock=True)
        assert (await stub.BlockEntry(unblock, metadata=a_auth)).changed
        await stub.ChallengeEntry(challenge, metadata=a_auth)
        gauntlet = ladder_pb2.StartGauntletRequest(ladder=ladder, opponents=[easy], sets=1)
        await stub.StartGauntlet(gauntlet, metadata=a_auth)
        await until(lambda: _sets_of(out, "C") >= 2 and _sets_of(out, "G") >= 1, 120, "asked sets")
        got = await stub.GetGauntlet(ladder_pb2.GetGauntletRequest(ladder=ladder), metadata=a_auth)
        assert [(r.opponent, r.sets) for r in got.results] == [(easy, 1)]

        pause = ladder_pb2.PauseLadderRequest(ladder=ladder)
        with pytest.raises(grpc.aio.AioRpcError) as not_admin:  # an owner is no admin
            await stub.PauseLadder(pause, metadata=a_auth)
        assert not_admin.value.code() == grpc.StatusCode.PERMISSION_DENIED
        paused = await stub.PauseLadder(pause, metadata=auth(ADMIN))
        assert not paused.ladder.open
        resumed = await stub.PauseLadder(
            ladder_pb2.PauseLadderRequest(ladder=ladder, resume=True), metadata=auth(ADMIN)
        )
        assert resumed.ladder.open
        remove = ladder_pb2.RemoveEntryRequest(entry=beta_entry)
        await stub.RemoveEntry(remove, metadata=auth(ADMIN))
        states = {e.name: e.state for e in (await lobby.get_ladder(ladder)).entries}
        assert states[beta_entry] == ladder_pb2.ENTRY_STATE_REMOVED
        with pytest.raises(LobbyError) as gone:  # a removed version does not come back
            await lobby.join_ladder(ladder, "v1", token=b_token)
        assert gone.value.code == grpc.StatusCode.INVALID_ARGUMENT
        started = await stub.StartSeason(
            ladder_pb2.StartSeasonRequest(ladder=ladder, season="winter"), metadata=auth(ADMIN)
        )
        assert started.season == "winter"
        ended = await stub.EndSeason(
            ladder_pb2.EndSeasonRequest(ladder=ladder, finals_sets=1), metadata=auth(ADMIN)
        )
        assert ended.season == "winter"
        await until(lambda: _sets_of(out, "F") >= 1, 120, "the finals")
    finally:
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)


def _sets_of(out: Path, prefix: str) -> int:
    """Whole or partial sets of one kind (their key's letter) in a ladder's results."""
    results = Results(out, read_only=True)
    try:
        return len({m.set_key for m in results.matches() if m.set_key.startswith(prefix)})
    finally:
        results.close()


def test_http_without_a_ladder_is_refused() -> None:
    done = run_capicua("serve", "--port", "0", "--http", "0")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "capicua: error: --http serves the leaderboard of --ladder: give a ladder file "
        "(see 'capicua serve --help')"
    ]


async def test_a_served_leaderboard_shows_versions_and_uptime(tmp_path: Path) -> None:
    """`serve --ladder FILE --http 0`: an entry's page and API list its bot's versions,
    oldest first, and its uptime and whether it is connected (the server's roster)."""
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE)
    args = ["--data", str(tmp_path / "data"), "--ladder", str(file), "--http", "0"]
    with server_process(args, tmp_path / "logs") as srv:
        lobby = Lobby(srv.address)
        try:
            bot_id, token = await lobby.register("versioned")
            for version in ("v1", "v2"):
                await lobby.join_ladder("ladders/club-ladder", version, token=token)
                await run_bot(Counting(bot_id), server=srv.address, token=token, matches=2)
        finally:
            await lobby.close()
        assert srv.launched.process.stdout is not None
        said = srv.launched.process.stdout.readline().decode()
        url = said.split("leaderboard on ")[1].strip()
        entry = f"{bot_id}@v2"
        api = f"{url}api/ladders/club-ladder/entries/{entry}"
        got: dict[str, Any] = {}

        def read() -> bool:  # the entry shows once a set of it is whole and the table new
            try:
                with urllib.request.urlopen(api, timeout=30) as answer:
                    got.update(json.load(answer))
            except urllib.error.HTTPError as e:
                assert e.code == 404
            return bool(got)

        await until(read, 120, "the entry's page")
        assert [(v["entry"], v["version"]) for v in got["versions"]] == [
            (f"{bot_id}@v1", "v1"),
            (entry, "v2"),
        ]
        assert got["versions"][0]["line"]["status"] == "left"  # superseded: plays no more
        assert 0.0 < got["online"]["uptime"] <= 1.0
        page = f"{url}ladders/club-ladder/entries/{entry}"
        with urllib.request.urlopen(page, timeout=30) as answer:
            html = answer.read().decode()
        assert 'id="s-versions"' in html and "uptime" in html
