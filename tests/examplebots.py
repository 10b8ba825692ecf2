"""The compiled example bots (clients/go's and clients/cpp's ``randombot``) on a real ``capicua
serve`` and in a real arena: one scenario per thing the protocol asks of a bot, shared by
tests/test_go_client.py and tests/test_cpp_client.py, which build the binaries. The ladder's
scenarios (a bot that joins ``capicua serve --ladder FILE`` with ``--ladder``/``--version``)
also run ``capicua bot`` (tests/test_bot_ladder.py).

Both bots take the same flags (``--matches N``; Go's flag package reads ``--flag`` too) and
the same variables, and log the same lines on stderr, which is what the scenarios read:
``connected to ADDRESS as PRINCIPAL``, ``MATCH ended: NORMAL, ...``, ``server error: ...``,
``the stream ended (...); reconnecting in 0.1 s``, ``stopped after N match(es)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from capicua.arena import standings
from capicua.arena.config import tournament_from_mapping
from capicua.arena.runner import Arena
from capicua.arena.store import Results
from capicua.engine.records import Defer, Play, RedealChoice, Replay, Termination
from capicua.v1 import match_pb2
from tests.clientkit import Proc, until
from tests.compliance.client import OPEN, Lobby, bot_seat, cpu_seat, watch
from tests.ladderkit import LADDER_FILE, run_capicua, stored
from tests.serverkit import ServerProcess, server_process
from tests.test_arena_run import BASE

TIMER_MS = 30_000  # the default: a late answer would show as a timeout, not slow the test
ENDED = re.compile(r"(matches/\S+) ended: (\S+),")
TOKEN_VARIABLES = ("CAPICUA_TOKEN", "CAPICUA_BOT_TOKEN", "CAPICUA_SEAT_TOKEN")


def example_bot(
    binary: Path,
    address: str,
    token: str,
    *args: str,
    var: str = "CAPICUA_TOKEN",
    env: dict[str, str] | None = None,
) -> Proc:
    """``binary ARGS`` with the server in $CAPICUA_SERVER and ``token`` in ``var`` only."""
    full = {"CAPICUA_SERVER": address, **dict.fromkeys(TOKEN_VARIABLES, ""), var: token}
    return Proc([str(binary), *args], env={**full, **(env or {})})


def lines(bot: Proc, text: str) -> int:
    """How many lines of the bot's stderr so far hold ``text``."""
    return sum(text in line for line in list(bot.err))


def report(bot: Proc) -> str:
    return f"$ {' '.join(bot.args)}\n--- stderr\n{bot.stderr}"


def _asked(replay: Replay, seats: set[int]) -> list[tuple[int, type]]:
    """(seat, event type) of every decision the server asked a client of ``seats`` for."""
    out = []
    for hand in replay.hands:
        for think in hand.think_times:
            seat = hand.think_seat(think)
            if seat in seats:
                out.append((seat, type(hand.events[think.event])))
    return out


async def plays_every_decision_kind(binary: Path, server: ServerProcess) -> None:
    """Two cuban matches: a tile or DEFER when the bot's seat opens; REDEAL or KEEP when it
    is offered a redeal; seats 1 and 3 of one match on the bot token and seat 0 on a seat
    token. Every match ends NORMAL with no timeout, and each bot exits 0 at its end."""
    lobby = Lobby(server.address)
    bots: list[Proc] = []
    try:
        bot_id, token = await lobby.register("example")
        # Seed 0: seat 0 opens, a tile or DEFER; seed 15: seat 3 is offered a redeal first.
        defer_match, host1 = await lobby.create(
            "cuban", [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()],
            seed=0, timer_ms=TIMER_MS,
        )  # fmt: skip
        # The bot token holds seats 1 and 3 (partners); seat 0 is a seat token's.
        redeal_match, host2 = await lobby.create(
            "cuban", [OPEN, bot_seat(bot_id), cpu_seat(), bot_seat(bot_id)],
            seed=15, timer_ms=TIMER_MS,
        )  # fmt: skip
        joined = await lobby.join_match(
            match_pb2.JoinMatchRequest(name=redeal_match.name, seat=0, accept_chosen_seed=True)
        )
        bots.append(example_bot(binary, server.address, token, "--matches", "2"))
        bots.append(
            example_bot(binary, server.address, joined.seat_token, var="CAPICUA_SEAT_TOKEN")
        )
        for bot in bots:
            await bot.wait_for(r"connected to .* as (bots|matches)/")
        watches = [
            asyncio.create_task(watch(lobby, m.name, timeout=60))
            for m in (defer_match, redeal_match)
        ]
        await lobby.start(defer_match.name, host1)
        await lobby.start(redeal_match.name, host2)
        await asyncio.gather(*watches)
        # The bot token's bot stops after its two matches, the seat token's with its match:
        # each closes or is closed cleanly, exit 0.
        for bot in bots:
            assert await bot.wait(30) == 0, report(bot)
        finished = {m.name: await lobby.get(m.name) for m in (defer_match, redeal_match)}
        replays = {name: await lobby.replay(name) for name in finished}  # verified
    finally:
        for bot in bots:
            bot.stop()
        await lobby.close()

    for name, match in finished.items():
        replay = replays[name]
        assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
        late = [(s.seat, s.timeouts, s.auto_played) for s in match.seats if s.timeouts]
        assert late == [], f"{name} (seat, timeouts, auto-played): {late}"
        assert not any(s.auto_played for s in match.seats), match.seats
    main, seat_bot = bots
    for bot in bots:
        assert "server error" not in bot.stderr, report(bot)  # no illegal or stale answer
    assert sorted(ENDED.findall(main.stderr)) == sorted((n, "NORMAL") for n in finished)
    assert ENDED.findall(seat_bot.stderr) == [(redeal_match.name, "NORMAL")], report(seat_bot)

    # The first decision of each match was the bot's: a tile or DEFER; REDEAL or KEEP.
    first = replays[defer_match.name].hands[0]
    assert first.events[0].seat == 0 and isinstance(first.events[0], Defer | Play)
    assert _asked(replays[defer_match.name], {0})[0] == (0, type(first.events[0]))
    offered = replays[redeal_match.name].hands[0]
    assert isinstance(offered.events[0], RedealChoice) and offered.events[0].seat == 3
    bot_seats = _asked(replays[redeal_match.name], {0, 1, 3})
    assert bot_seats[0] == (3, RedealChoice)
    assert {seat for seat, _ in bot_seats} == {0, 1, 3}  # each of its seats was asked


async def stops_as_the_lifecycle_table_says(binary: Path, server: ServerProcess) -> None:
    """Rows 9 and 4 of docs/protocol.md's table (a refused token; a replaced stream) stop
    the bot with exit 2; SIGTERM closes the stream and exits 0."""
    lobby = Lobby(server.address)
    bots: list[Proc] = []
    try:
        _, token = await lobby.register("example")
        # Row 9: an unknown token is refused at open: stop, say so, exit 2.
        refused = example_bot(
            binary, server.address, "bot_not-a-real-token", var="CAPICUA_BOT_TOKEN"
        )
        bots.append(refused)
        assert await refused.wait(30) == 2, report(refused)
        assert "UNAUTHENTICATED" in refused.stderr, report(refused)
        # Row 4: a newer stream with the same token replaces this one: stop, exit 2.
        older = example_bot(binary, server.address, token)
        bots.append(older)
        await older.wait_for("connected to")
        newer = example_bot(binary, server.address, token)
        bots.append(newer)
        assert await older.wait(30) == 2, report(older)
        assert "replaced" in older.stderr, report(older)
        assert "reconnecting" not in older.stderr, report(older)
        # SIGTERM: the stream is half-closed, the server ends it OK, exit 0.
        await newer.wait_for("connected to")
        newer.proc.send_signal(signal.SIGTERM)
        assert await newer.wait(30) == 0, report(newer)
        assert "stopped after 0 match(es)" in newer.stderr, report(newer)
    finally:
        for bot in bots:
            bot.stop()
        await lobby.close()


async def reconnects_when_the_server_comes_back(binary: Path, tmp_path: Path) -> None:
    """Row 5: a server that stops says ServerStopping and ends the stream UNAVAILABLE /
    SHUTTING_DOWN; the bot waits with backoff and takes its token back on the next server,
    and SIGTERM while it waits to reconnect exits 0."""
    data = tmp_path / "data"  # the bot token survives the restart
    with server_process(["--data", str(data)], tmp_path / "logs") as first:
        lobby = Lobby(first.address)
        try:
            _, token = await lobby.register("example")
        finally:
            await lobby.close()
        bot = example_bot(binary, first.address, token)
        try:
            await bot.wait_for("connected to")
            first.stop()
            await bot.wait_for("reconnecting in")
            port = first.address.rsplit(":", 1)[1]
            with server_process(["--data", str(data), "--port", port], tmp_path / "logs"):
                await until(lambda: lines(bot, "connected to") == 2, 30, report(bot))
                retries = lines(bot, "reconnecting in")
            await until(lambda: lines(bot, "reconnecting in") > retries, 30, report(bot))
            bot.proc.send_signal(signal.SIGTERM)  # while it waits to reconnect: exit 0
            assert await bot.wait(30) == 0, report(bot)
        finally:
            bot.stop()
    assert lines(bot, "connected to") == 2, report(bot)
    assert "server error" not in bot.stderr and "giving up" not in bot.stderr, report(bot)


async def plays_in_an_arena(binary: Path, tmp_path: Path) -> None:
    """As a ``cmd:`` bot of a tournament against ``builtin:random``: two normal matches, no
    error, the server timing its answers."""
    bots = {"example": f"cmd:{binary}", "random": "builtin:random"}
    t = tournament_from_mapping({**BASE, "bots": bots}, tmp_path)
    out = tmp_path / "out"
    summary = await Arena(t, out).run()
    assert summary.played == summary.total == 2
    results = Results.open_existing(out)
    try:
        rows = results.matches()
        assert all(r.termination == "normal" for r in rows), [(r.key, r.reason) for r in rows]
        assert results.failures() == []
        table = {b.name: b for b in standings.compute(results, samples=0).bots}
    finally:
        results.close()
    assert set(table) == {"example", "random"}
    example = table["example"]
    assert example.matches == 2 and example.errors == {} and not example.disqualified
    assert example.forfeits == 0
    assert example.think_decisions > 0  # the server timed the bot's own answers


# -- ladders -------------------------------------------------------------------------------

LADDER = "ladders/club-ladder"  # LADDER_FILE's ladder: its id comes from its name
#: A bot's process, started with the server's address, its token and these arguments.
StartBot = Callable[[str, str, Sequence[str]], Proc]
#: Joins a server refuses, or flags a bot refuses (the same words from every bot: Go reads
#: ``--flag`` as ``-flag``), and what the bot's one line says.
BAD_JOINS = [
    (["--ladder", LADDER], "version go together"),
    (["--version", "v1"], "version go together"),
    (["--ladder", LADDER, "--version", "v 1"], "INVALID_ARGUMENT: version: 'v 1' is not"),
    (["--ladder", "ladders/nope", "--version", "v1"], "NOT_FOUND"),
    (["--ladder", LADDER, "--version", "v1", "--max-matches-at-once", "33"],
     "max_concurrent_matches: 33 is not between 1 and 32"),
]  # fmt: skip


@contextlib.contextmanager
def ladder_server(tmp: Path) -> Iterator[tuple[ServerProcess, Path]]:
    """``capicua serve --ladder FILE`` (LADDER_FILE: two built-in entries, short matches)
    with its data in ``tmp``, and the ladder's results directory."""
    file = tmp / "club.toml"
    file.write_text(LADDER_FILE)
    data = tmp / "data"
    with server_process(["--data", str(data), "--ladder", str(file)], tmp / "logs") as srv:
        yield srv, data / "ladders" / "club-ladder"


async def joins_a_ladder_and_plays(
    start: StartBot, server: ServerProcess, out: Path, matches: int = 3
) -> Proc:
    """The bot, started with ``--ladder --version v1 --max-matches-at-once 2 --matches N``,
    joins with its token before its Play stream opens (it says so first), plays N of the
    ladder's matches and exits 0; the ladder's directory holds and rates them (the one-hand
    validation match rates nothing), and the roster keeps the limit it asked for. Returns
    the bot's process, for what else its log should say."""
    lobby = Lobby(server.address)
    bots: list[Proc] = []
    flags = ["--ladder", LADDER, "--version", "v1", "--max-matches-at-once", "2"]
    try:
        bot_id, token = await lobby.register("ladder")
        bot = start(server.address, token, [*flags, "--matches", str(matches)])
        bots.append(bot)
        assert await bot.wait(120) == 0, report(bot)
        entry = f"{bot_id}@v1"
        # committed once the runner has each match's replay
        await until(lambda: stored(out, entry) >= matches - 1, 60, "the ladder's commits")
        roster = {e.name: e for e in (await lobby.get_ladder(LADDER)).entries}
    finally:
        for started in bots:
            started.stop()
        await lobby.close()
    joined = roster[f"{LADDER}/entries/{entry}"]
    assert (joined.version, joined.max_concurrent_matches) == ("v1", 2)
    said = bot.stderr
    assert f"joined {LADDER} as {entry} (2 matches at once)" in said, report(bot)
    assert said.index("joined ") < said.index("connected to"), report(bot)
    shown = run_capicua("ladder", "show", str(out), "--json")
    assert shown.returncode == 0, shown.stderr
    table = {row["name"]: row for row in json.loads(shown.stdout)["entries"]}
    assert table[entry]["spec"] == f"remote:{bot_id} version v1"
    return bot


async def refuses_a_bad_join(
    start: StartBot, server: ServerProcess, flags: Sequence[str], says: str
) -> str:
    """The bot started with ``flags`` exits 2 with one line on stderr, saying ``says``,
    before its Play stream opens; nothing joined. Returns the line."""
    lobby = Lobby(server.address)
    try:
        bot_id, token = await lobby.register("bad-join")
        bot = start(server.address, token, flags)
        assert await bot.wait(60) == 2, report(bot)
        entries = (await lobby.get_ladder(LADDER)).entries
    finally:
        await lobby.close()
    lines = [line for line in bot.err if line.strip()]
    assert len(lines) == 1 and says in lines[0], report(bot)
    assert [e.name for e in entries if e.bot == f"bots/{bot_id}"] == []
    return lines[0]
