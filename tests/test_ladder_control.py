"""A ladder's control (docs/ladder.md, "Control"): the matchmaker under blocks,
challenges, gauntlets, a pause and a season's finals (pure, hypothesis), and real
``capicua ladder`` runs (built-in entries, in process, and a run in a subprocess written to
by the control commands while it plays, and a ladder served by ``capicua serve --ladder``):
a challenge played, a gauntlet kept private, a removed entry, a season's finals table kept,
the same store giving the same next sets, bad input as one line."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from capicua.arena.ladder.config import Matchmaking
from capicua.arena.ladder.control import Control, Finals, Request
from capicua.arena.ladder.matchmaker import History, Issued, choose, starvation_bound
from capicua.arena.store import CHALLENGE_SET, FINALS_SET, GAUNTLET_SET
from capicua.client import run as run_bot
from tests.clientkit import Proc
from tests.compliance.client import Lobby, until
from tests.ladderkit import LADDER_FILE, Counting
from tests.serverkit import server_process
from tests.test_arena_run import EVENT_BOUND_S, count_matches
from tests.test_ladder import ENTRIES, SMALL, check_sets, ladder_cli, simulate, write_ladder

PY = sys.executable

# -- the matchmaker under control, pure -----------------------------------------------------------

blocked_ladders = st.tuples(
    st.integers(2, 3),  # sides
    st.integers(1, 4),  # entries beyond the sides
    st.integers(0, 2**31),  # seed
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=6),  # blocks
)


@settings(max_examples=15, deadline=None)
@given(blocked_ladders)
def test_a_blocked_pair_never_meets_and_blocks_starve_no_one_else(
    case: tuple[int, int, int, list[tuple[int, int]]],
) -> None:
    sides, extra, seed, pairs = case
    names = [f"e{i}" for i in range(sides + extra)]
    blocks = frozenset(
        (names[a % len(names)], names[b % len(names)])
        for a, b in pairs
        if a % len(names) != b % len(names)
    )
    control = Control(blocks=blocks)
    # the entries that have some group the blocks allow (the others wait: never chosen)
    meeting = {
        e for combo in itertools.combinations(names, sides) if control.allows(combo) for e in combo
    }
    if not meeting:
        for seq in range(3):
            assert choose(seq, names, [], {}, sides, Matchmaking(), seed, control=control) is None
        return
    mm = Matchmaking(pair_cap=2, throttle=3, placement=1, top=1, top_every=5)
    n = len(names)
    bound = starvation_bound(n) + n * 3
    issued = simulate(names, sides, mm, seed, bound + 2 * n, 0, control)
    for s in issued:
        assert control.allows(s.group), (s, blocks)
        assert set(s.group) <= meeting
    for name in meeting:  # every entry a block leaves opponents plays, and is not starved
        seqs = [s.seq for s in issued if name in s.group]
        assert seqs, (name, blocks)
        gaps = [b - a for a, b in zip([-1, *seqs], [*seqs, len(issued)], strict=True)]
        assert max(gaps) <= bound, (name, gaps, blocks)


def test_an_entry_its_blocks_leave_without_opponents_waits_and_the_others_play() -> None:
    names = ["a", "b", "c"]
    control = Control(blocks=frozenset({("a", "b"), ("c", "a")}))
    issued = simulate(names, 2, Matchmaking(), 1, 12, 0, control)
    assert all("a" not in s.group for s in issued)
    assert {s.group for s in issued if s.validation} == {("b", "c"), ("c", "b")}


challenged_ladders = st.tuples(
    st.integers(3, 6),  # entries
    st.integers(0, 2**31),  # seed
    # challenges: (entry, opponent, sets); gauntlets take the same shape
    st.lists(st.tuples(st.integers(0, 5), st.integers(1, 5), st.integers(1, 4)), max_size=4),
    st.booleans(),  # gauntlets rather than challenges
)


@settings(max_examples=15, deadline=None)
@given(challenged_ladders)
def test_challenges_and_gauntlets_are_all_played_taking_every_other_set_at_most(
    case: tuple[int, int, list[tuple[int, int, int]], bool],
) -> None:
    n, seed, asked, gauntlets = case
    names = [f"e{i}" for i in range(n)]
    kind = GAUNTLET_SET if gauntlets else CHALLENGE_SET
    requests = tuple(
        Request(i + 1, kind, names[a % n], (names[(a + b) % n],), sets)
        for i, (a, b, sets) in enumerate(asked)
        if (a + b) % n != a % n
    )
    total = sum(r.sets for r in requests)
    issued = simulate(
        names, 2, Matchmaking(), seed, n + 2 * total + 2, 0, Control(requests=requests)
    )
    wanted: dict[tuple[str, str], int] = {}
    for r in requests:
        wanted[(r.entry, r.opponents[0])] = wanted.get((r.entry, r.opponents[0]), 0) + r.sets
    got: dict[tuple[str, str], int] = {}
    for s in issued:
        if s.kind == kind and not s.validation:
            got[(s.group[0], s.group[1])] = got.get((s.group[0], s.group[1]), 0) + 1
    assert got == wanted
    kinds = [s.kind for s in issued if not s.validation]
    assert all(kinds[i] != kind or kinds[i + 1] != kind for i in range(len(kinds) - 1)), kinds
    # a gauntlet's sets are private and unrated: the public counts never see them
    public = History.of(s for s in issued if s.kind != GAUNTLET_SET)
    history = History.of(issued)
    assert (history.sets, history.pair_sets) == (public.sets, public.pair_sets)


def test_a_paused_ladder_hands_out_nothing_and_a_removed_entry_is_not_scheduled() -> None:
    names = ["a", "b", "c"]
    history = simulate(names, 2, Matchmaking(), 3, 9, 0)
    paused = Control(paused=True, requests=(Request(1, CHALLENGE_SET, "a", ("b",), 3),))
    assert choose(9, names, history, {}, 2, Matchmaking(), 3, control=paused) is None
    gone = Control(removed=frozenset({"a"}))
    later = simulate(names, 2, Matchmaking(), 3, 20, 0, gone)
    assert all("a" not in s.group for s in later)


def test_a_seasons_finals_are_a_round_robin_played_before_anything_else() -> None:
    names = ["a", "b", "c", "d"]
    before = simulate(names, 2, Matchmaking(), 5, 12, 0)
    finals = Finals(season=1, field=("a", "b", "c"), sets=2, first_seq=12)
    control = Control(finals=finals, requests=(Request(1, CHALLENGE_SET, "d", ("a",), 2),))
    issued = list(before)
    for seq in range(12, 18):
        chosen = choose(seq, names, issued, {}, 2, Matchmaking(), 5, control=control)
        assert chosen is not None and chosen.kind == FINALS_SET, chosen
        issued.append(chosen)
    played = sorted(tuple(sorted(s.group)) for s in issued[12:])
    assert played == sorted(2 * [("a", "b"), ("a", "c"), ("b", "c")])
    after = choose(18, names, issued, {}, 2, Matchmaking(), 5, control=control)
    assert after is not None and after.kind == CHALLENGE_SET  # then the ladder goes on
    # a finals set lost to an interrupt is handed out again
    lost = [s for s in issued if s.seq != 14]
    again = choose(18, names, lost, {}, 2, Matchmaking(), 5, control=control)
    assert again == Issued(18, issued[14].group, kind=FINALS_SET)
    # an entry of the field that has left the ladder since, or was removed, plays no finals
    # set (a run starts no process for it): its groups are skipped, the others are played
    for names_now, removed in ((["a", "b", "d"], frozenset()), (names, frozenset("c"))):
        state = Control(finals=finals, removed=removed)
        history = list(before)
        for seq in range(12, 15):
            chosen = choose(seq, names_now, history, {}, 2, Matchmaking(), 5, control=state)
            assert chosen is not None
            history.append(chosen)
        assert [s.kind for s in history[12:]] == [FINALS_SET, FINALS_SET, "L"]
        assert all(s.key == ("a", "b") for s in history[12:14])


# -- capicua ladder, for real -------------------------------------------------------------------


def rows(out: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(out / "results.sqlite") as conn:
        return list(conn.execute(sql, args))


def sets_of(out: Path, prefix: str) -> list[tuple[str, ...]]:
    """The groups (as handed out: side 0 first) of the stored sets of a kind, in order."""
    found = rows(
        out,
        "SELECT sides_json FROM matches WHERE rotation = 0 AND set_key LIKE ? ORDER BY seq",
        f"{prefix}%",
    )
    return [tuple(json.loads(sides)) for (sides,) in found]


def ran(tmp_path: Path, matches: int) -> tuple[Path, Path]:
    """A small ladder's file, and its directory once it holds ``matches`` matches."""
    f = write_ladder(tmp_path / "l.toml", SMALL)
    out = tmp_path / "out"
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", str(matches), "--quiet")
    assert r.exit_code == 0, r.output + r.stderr
    return f, out


def ok(*args: str) -> str:
    r = ladder_cli(*args)
    assert r.exit_code == 0, (args, r.output, r.stderr)
    return str(r.output)


def test_blocks_removal_and_a_private_gauntlet_over_real_runs(tmp_path: Path) -> None:
    f, out = ran(tmp_path, 12)
    assert ok("block", str(out), "random", "easy") == "random blocks easy\n"
    assert ok("gauntlet", str(out), "medium", "easy,random", "--sets", "2").startswith(
        "medium plays a gauntlet of 2 sets against each of easy, random"
    )
    ok("gauntlet", str(out), "easy", "medium", "--sets", "10")
    before = len(sets_of(out, "L"))
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "90", "--quiet")
    assert r.exit_code == 0, r.output + r.stderr
    check_sets(out)
    assert ("random", "easy") not in {
        tuple(sorted(g, reverse=True)) for g in sets_of(out, "L")[before:]
    }
    assert sorted(sets_of(out, GAUNTLET_SET)) == sorted(
        2 * [("medium", "easy"), ("medium", "random")] + 10 * [("easy", "medium")]
    )
    # the gauntlets are private: the public table counts none of their matches
    shown = json.loads(ok("show", str(out), "--json"))
    stored = rows(out, "SELECT count(*) FROM matches")[0][0]
    assert shown["matches"] == stored - 28  # 14 sets of 2 matches
    (theirs,) = json.loads(ok("gauntlet-results", str(out), "easy", "--json"))["opponents"]
    assert theirs["opponent"] == "medium" and theirs["sets"] == 10  # 10 sets: an interval
    assert theirs["lo"] <= theirs["elo"] <= theirs["hi"]
    mine = json.loads(ok("gauntlet-results", str(out), "medium", "--json"))
    lines = {x["opponent"]: x for x in mine["opponents"]}
    assert set(lines) == {"easy", "random"}
    assert all(x["sets"] == 2 and x["wins"] + x["draws"] + x["losses"] == 4 for x in lines.values())
    assert all(
        x["lo"] is None and x["elo"] is not None for x in lines.values()
    )  # 2 sets: no interval
    assert "Gauntlets of medium" in ok("gauntlet-results", str(out), "medium")
    # removed: no new set, results kept, shown as removed
    assert ok("remove", str(out), "random") == "random is removed\n"
    kept = {k for (k,) in rows(out, "SELECT key FROM matches")}
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "60", "--quiet")
    assert r.exit_code == 0, r.output + r.stderr
    new = rows(out, "SELECT key, sides_json FROM matches")
    assert len(new) >= 60 and not any("random" in s for k, s in new if k not in kept)
    status = {e["name"]: e["status"] for e in json.loads(ok("show", str(out), "--json"))["entries"]}
    assert status == {"random": "removed", "easy": "playing", "medium": "playing"}


def test_control_commands_refuse_bad_input_in_one_line_and_change_nothing(tmp_path: Path) -> None:
    _, out = ran(tmp_path, 6)
    ok("block", str(out), "easy", "medium")
    ok("challenge", str(out), "random", "medium", "--sets", "1")
    d = str(out)
    bad = [
        (("challenge", d, "nobody", "easy"), rf"no entry 'nobody' in {out}"),
        (("challenge", d, "easy", "easy"), r"an entry cannot challenge itself \(easy\)"),
        (("challenge", d, "random", "easy", "--sets", "0"),
         r"sets: expected an integer from 1 to 50, got 0"),
        (("challenge", d, "random", "easy", "--sets", "x"), r"Invalid value for '--sets'"),
        (("challenge", d, "medium", "easy"), r"easy blocks medium: they do not meet"),
        (("gauntlet", d, "random", "easy,easy"), r"an opponent is named twice: easy, easy"),
        (("unblock", d, "medium", "easy"), r"medium does not block easy"),
        (("season", "end", d), r"no season is open; capicua ladder season start DIR opens one"),
        (("season", "start", d, "42"), r"a season named by digits is season number 42"),
        (("show", d, "--season", "spring"), r"no season 'spring' \(seasons: none yet\)"),
        (("pause", str(tmp_path / "nowhere")),
         r".*nowhere: no ladder results here \(does not exist\)"),
        (("remove", d, "ghost"), rf"no entry 'ghost' in {out}"),
    ]  # fmt: skip
    for _ in range(2):  # the third open challenge is the last one allowed
        ok("challenge", str(out), "random", "easy", "--sets", "1")
    bad.append(
        (("challenge", d, "random", "easy"), r"random has 3 open challenges, the most it may have")
    )
    log = rows(out, "SELECT * FROM ladder_control")
    for args, message in bad:
        r = ladder_cli(*args)
        lines = r.stderr.splitlines()
        assert r.exit_code == 2 and len(lines) == 1, (args, r.output, r.stderr)
        assert re.match(rf"(capicua: error: |Error: ){message}", lines[0]) or message in lines[0], (
            args,
            lines,
        )
        assert "Traceback" not in r.stderr
    assert rows(out, "SELECT * FROM ladder_control") == log
    assert not (tmp_path / "nowhere").exists()
    ok("season", "start", d, "spring")
    r = ladder_cli("season", "start", d)
    assert (
        r.exit_code == 2
        and "season spring is open (capicua ladder season end DIR ends it)" in r.stderr
    )


def test_a_directory_written_before_control_takes_control_actions(tmp_path: Path) -> None:
    _, out = ran(tmp_path, 6)
    with sqlite3.connect(out / "results.sqlite") as conn:  # as results from before control
        conn.execute("DROP TABLE ladder_control")
        conn.execute("DROP TABLE ladder_seasons")
    shown = json.loads(ok("show", str(out), "--json"))  # read-only: the tables are TEMP
    assert {e["status"] for e in shown["entries"]} == {"playing"}
    assert ok("pause", str(out)) == "the ladder is paused\n"
    assert rows(out, "SELECT action FROM ladder_control") == [("pause",)]
    # paused, a run plays nothing and says so; resumed, the same command plays on
    f, kept = tmp_path / "l.toml", count_matches(out)
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "20", "--quiet")
    assert r.exit_code == 0 and count_matches(out) == kept, r.output + r.stderr
    paused = rf"the ladder is paused \(capicua ladder resume {out} lets it play\)"
    assert re.search(rf"done: 0 matches played; {kept} kept .*; {paused}", r.stderr), r.stderr
    assert ok("resume", str(out)) == "the ladder plays again\n"
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "20", "--quiet")
    assert r.exit_code == 0 and count_matches(out) >= 20, r.output + r.stderr
    assert "paused" not in r.stderr


def test_the_same_store_gives_the_same_next_sets(tmp_path: Path) -> None:
    f, out = ran(tmp_path, 12)
    ok("season", "start", str(out))
    ok("challenge", str(out), "easy", "medium", "--sets", "2")
    ok("gauntlet", str(out), "random", "medium", "--sets", "2")
    ok("block", str(out), "random", "easy")
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for d in (out, copy):
        r = ladder_cli("run", str(f), "--out", str(d), "--matches", "40", "--quiet")
        assert r.exit_code == 0, r.output + r.stderr
    played = "SELECT key, sides_json FROM matches ORDER BY key"
    assert rows(out, played) == rows(copy, played)
    assert len(sets_of(out, CHALLENGE_SET)) == 2 and len(sets_of(out, GAUNTLET_SET)) == 2


async def test_a_challenge_and_a_season_end_written_while_a_run_plays_are_played(
    tmp_path: Path,
) -> None:
    f = write_ladder(tmp_path / "l.toml", SMALL)
    out = tmp_path / "out"
    proc = Proc(
        [PY, "-m", "capicua", "ladder", "run", str(f), "--out", "out", "--quiet"], cwd=tmp_path
    )
    try:
        await until(lambda: count_matches(out) >= 8, EVENT_BOUND_S, "a few sets")
        ok("season", "start", str(out), "spring")
        ok("challenge", str(out), "random", "medium", "--sets", "2")
        await until(lambda: len(sets_of(out, CHALLENGE_SET)) >= 2, EVENT_BOUND_S, "the challenge")
        ok("season", "end", str(out), "spring", "--finals-sets", "1", "--next", "summer")

        def published() -> bool:
            return bool(rows(out, "SELECT 1 FROM ladder_seasons WHERE table_json IS NOT NULL"))

        await until(published, EVENT_BOUND_S, "the finals table")
        assert ok("pause", str(out)) == "the ladder is paused\n"
        code = await proc.wait(EVENT_BOUND_S)  # paused: the sets in flight end, then the run
    finally:
        proc.kill()
    assert code == 0, proc.report()
    assert re.search(
        r"done: \d+ matches played; results in out; the ladder is paused", proc.stderr
    ), proc.report()
    check_sets(out)  # every set whole: those in flight were finished
    assert sets_of(out, CHALLENGE_SET) == [("random", "medium")] * 2
    assert sorted(tuple(sorted(g)) for g in sets_of(out, FINALS_SET)) == sorted(
        tuple(sorted(p)) for p in itertools.combinations(ENTRIES, 2)
    )
    finals = json.loads(ok("show", str(out), "--season", "spring", "--json"))
    assert finals["name"] == "small, season spring finals"
    assert finals["rated_sets"] == 3 and finals["matches"] == 6
    assert sorted(e["name"] for e in finals["entries"]) == sorted(ENTRIES)
    assert all(e["sets"] == 2 and e["rank_band"].startswith("#") for e in finals["entries"])
    assert "season spring finals" in ok("show", str(out), "--season", "spring")
    (state,) = rows(out, "SELECT state FROM ladder_seasons WHERE name = 'summer'")
    assert state == ("open",)
    summer = json.loads(ok("show", str(out), "--season", "summer", "--json"))
    assert summer["name"] == "small, season summer (open)"
    r = ladder_cli("season", "end", str(out), "spring")
    assert r.exit_code == 2 and "season spring is not the open one: season summer is" in r.stderr


async def test_a_hosted_ladder_plays_a_challenge_written_to_its_directory(tmp_path: Path) -> None:
    """`capicua serve --ladder FILE` keeps its ladder's results in DATA/ladders/ID: the same
    control commands act on it while the server's runner plays, as the server's own calls
    of the control functions will."""
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE)
    data = tmp_path / "data"
    out = data / "ladders" / "club-ladder"
    with server_process(["--data", str(data), "--ladder", str(file)], tmp_path / "logs") as srv:
        lobby = Lobby(srv.address)
        try:
            bot_id, token = await lobby.register("alpha")
            await lobby.join_ladder("ladders/club-ladder", "v1", token=token)
        finally:
            await lobby.close()
        alpha = f"{bot_id}@v1"
        playing = asyncio.create_task(run_bot(Counting(bot_id), server=srv.address, token=token))
        try:
            await until(lambda: count_matches(out) >= 2, EVENT_BOUND_S, "alpha's first sets")
            ok("challenge", str(out), alpha, "easy", "--sets", "2")
            await until(
                lambda: len(sets_of(out, CHALLENGE_SET)) >= 2, EVENT_BOUND_S, "the challenge"
            )
            # paused, its runner waits rather than ends: resumed, it plays again
            ok("pause", str(out))
            ok("challenge", str(out), alpha, "random", "--sets", "1")
            ok("resume", str(out))
            await until(lambda: len(sets_of(out, CHALLENGE_SET)) >= 3, EVENT_BOUND_S, "the second")
        finally:
            playing.cancel()
        assert srv.stop() == 0
    assert sets_of(out, CHALLENGE_SET) == [(alpha, "easy")] * 2 + [(alpha, "random")]
