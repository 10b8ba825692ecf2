"""The standing ladder (docs/ladder.md): the matchmaker's rules over simulated results
(hypothesis), the published table on constructed results, and real runs of
``capicua ladder`` (built-in entries, in-process): resume after Ctrl-C, entries joining,
bad files as one line."""

from __future__ import annotations

import json
import math
import re
import signal
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from capicua.arena import standings
from capicua.arena.facts import MatchFacts
from capicua.arena.ladder import table
from capicua.arena.ladder.config import Matchmaking, ladder_from_mapping, load_ladder
from capicua.arena.ladder.control import NO_CONTROL, Control
from capicua.arena.ladder.matchmaker import Issued, choose, starvation_bound
from capicua.arena.ladder.plan import Online, specs
from capicua.arena.ladder.table import failed_validation
from capicua.arena.ratings import Skill, openskill_ratings, rank_bands
from capicua.arena.recorder import Finished, commit_matches
from capicua.arena.store import LADDER, Results, ladder_rated
from capicua.cli import main
from tests.clientkit import Proc, until
from tests.clirunner import cli_runner
from tests.test_arena_run import EVENT_BOUND_S, HANG_CLOCK_MS, LATER_BOTS, count_matches

PY = sys.executable

# -- the matchmaker over simulated results ------------------------------------------------------


class Row:
    """A simulated match, as the ratings read one."""

    def __init__(self, key: str, sides: tuple[str, ...], winner: int) -> None:
        self.set_key = key
        self.sides = sides
        self.termination = "normal"
        self.winner_side: int | None = winner
        self.scores = tuple(50 if s == winner else 0 for s in range(len(sides)))
        self.forfeited_side: int | None = None


def simulate(
    names: Sequence[str],
    sides: int,
    mm: Matchmaking,
    seed: int,
    sets: int,
    luck: int,
    control: Control = NO_CONTROL,
) -> list[Issued]:
    """``sets`` choices, each set's matches won by the entry listed first in ``names`` among
    its sides (a fixed order of strength), but for ``luck``'s bits flipping some;
    ``control``: the ladder's control state throughout."""
    issued: list[Issued] = []
    rows: list[Row] = []
    for seq in range(sets):
        skills: dict[str, Skill] = openskill_ratings(rows)
        chosen = choose(seq, names, issued, skills, sides, mm, seed, control=control)
        assert chosen is not None
        again = choose(seq, names, issued, skills, sides, mm, seed, control=control)
        assert again == chosen, "the same history gives the same choice"
        issued.append(chosen)
        if not chosen.rated:
            continue
        for r in range(sides):
            order = tuple(chosen.group[(i + r) % sides] for i in range(sides))
            best = min(range(sides), key=lambda s: names.index(order[s]))
            if (luck >> ((seq + r) % 30)) & 1:
                best = (best + 1) % sides
            rows.append(Row(f"L{seq}", order, best))
    return issued


ladders = st.tuples(
    st.integers(2, 4),  # sides
    st.integers(0, 5),  # entries beyond the sides
    st.integers(1, 6),  # pair_cap
    st.integers(1, 15),  # throttle
    st.integers(0, 2),  # placement
    st.integers(0, 2**31),  # seed
    st.integers(0, 2**30),  # luck
)


@settings(max_examples=15, deadline=None)
@given(ladders)
def test_the_matchmaker_starves_no_one_respects_caps_and_never_pairs_an_entry_with_itself(
    case: tuple[int, int, int, int, int, int, int],
) -> None:
    sides, extra, cap, throttle, placement, seed, luck = case
    names = [f"e{i}" for i in range(sides + extra)]
    mm = Matchmaking(pair_cap=cap, throttle=throttle, placement=placement, top=2, top_every=6)
    n = len(names)
    bound = starvation_bound(n) + n * (placement + 2)  # once the entries are all placed
    issued = simulate(names, sides, mm, seed, bound + 2 * n, luck)
    assert issued == simulate(names, sides, mm, seed, bound + 2 * n, luck)  # deterministic
    for s in issued:
        assert len(set(s.group)) == len(s.group) == sides, s  # never against itself
    # every entry plays its validation match before any rated set
    for name in names:
        checked = next(s.seq for s in issued if s.validation and s.group[0] == name)
        assert all(s.seq > checked for s in issued if name in s.group and not s.validation)
    # no entry waits more than the bound
    for name in names:
        seqs = [s.seq for s in issued if name in s.group]
        gaps = [b - a for a, b in zip([-1, *seqs], [*seqs, len(issued)], strict=True)]
        assert max(gaps) <= bound, (name, gaps, bound)
    # past its cap a group waits its spacing between two sets
    spacing = max(1, min(throttle, math.comb(n - 1, sides - 1)))
    by_group: dict[tuple[str, ...], list[int]] = {}
    for s in issued:
        if not s.validation:
            by_group.setdefault(s.key, []).append(s.seq)
    for group, seqs in by_group.items():
        for a, b in zip(seqs[cap - 1 :], seqs[cap:], strict=False):
            assert b - a >= spacing, (group, seqs, cap, spacing)


def test_a_new_entry_is_validated_against_the_weakest_anchor_then_placed_first() -> None:
    names = ["hard", "mine", "random"]
    mm = Matchmaking(placement=2)
    history = [Issued(0, ("hard", "random"), True), Issued(1, ("random", "hard"), True)]
    history += [Issued(2 + i, ("hard", "random")) for i in range(4)]
    first = choose(6, names, history, {}, 2, mm, seed=1)
    assert first == Issued(6, ("mine", "random"), validation=True)
    second = choose(7, names, [*history, first], {}, 2, mm, seed=1)
    assert second is not None and not second.validation and second.group[0] == "mine"
    failed = choose(7, names, [*history, first], {}, 2, mm, seed=1, excluded=frozenset({"mine"}))
    assert failed is not None and "mine" not in failed.group


# -- the table on constructed results ------------------------------------------------------------


def test_rank_bands_tie_the_entries_whose_intervals_overlap() -> None:
    bands = rank_bands({"a": (100, 200), "b": (-50, 60), "c": (-40, 80), "d": (-300, -100)})
    assert bands == {"a": (1, 1), "b": (2, 3), "c": (2, 3), "d": (4, 4)}


LADDER_FILE = {
    "name": "t",
    "preset": "iq-1v1",
    "overrides": ["target=30"],
    "entries": {"random": "builtin:random", "easy": "builtin:easy", "star": "builtin:hard",
                "twin": "builtin:medium", "late": "builtin:medium"},
}  # fmt: skip


def constructed(out: Path) -> None:
    """A ladder's results: ``star`` wins every set; ``easy`` and ``twin`` split theirs; each
    beats ``random`` mostly; ``late`` played two sets; ``twin`` lost one match on time."""
    lad = ladder_from_mapping(dict(LADDER_FILE), Path("."))
    results = Results(out)
    results.bind(LADDER, "t", lad.canonical(), lad.digest(), "test")
    for b in lad.tournament.bots:
        results.add_bot(b.name, b.label)
    plan: list[tuple[tuple[str, str], int]] = []  # (group, winner in both matches or -1)
    for _ in range(12):
        plan += [(("star", "random"), 0), (("star", "easy"), 0), (("star", "twin"), 0)]
        plan += [(("easy", "twin"), -1), (("easy", "random"), 0), (("twin", "random"), 0)]
    plan += [(("late", "random"), 0), (("late", "easy"), -1)]
    batch = []
    for seq, (group, winner) in enumerate(plan):
        for spec in specs(lad, Issued(seq, group)):
            side = spec.sides.index(group[0]) if winner == 0 else 0  # -1: side 0, a split
            facts = MatchFacts("normal", side, None, (0, 0), ())
            if seq == 5 and spec.rotation == 0:  # twin vs random: twin (side 0) times out
                facts = MatchFacts("timeout", 1, None, (0, 0), (), forfeited=0)
            batch.append(Finished(spec, facts, None, None, "2026-12-06T00:00:00Z", 0.0))
    commit_matches(results, batch)
    results.close()


def test_the_table_bands_anchors_provisional_flags_and_forfeits(tmp_path: Path) -> None:
    constructed(tmp_path / "l")
    t = table.load(tmp_path / "l")
    by = {e.name: e for e in t.entries}
    # late (2 rated sets) has no interval and may be anywhere: star, first by far of the
    # others, may be second to it
    assert [e.name for e in t.entries][0] == "star" and by["star"].band == (1, 2)
    assert standings.band_text(by["easy"].band) == standings.band_text(by["twin"].band) != "#2"
    assert by["late"].provisional and by["late"].sets == 2
    assert by["late"].lo is by["late"].hi is None and by["late"].band == (1, 5)
    assert by["late"].rating is not None
    assert all(e.lo is not None for e in t.entries if e.sets >= table.MIN_INTERVAL_SETS)
    assert not by["star"].provisional
    assert t.anchored == ("random", "easy") or set(t.anchored) == {"random", "easy"}
    mean = (by["random"].rating or 0) + (by["easy"].rating or 0)
    fixed = table.ANCHOR_ELO["random"] + table.ANCHOR_ELO["easy"]
    assert abs(mean - fixed) < 1e-6  # the anchors' mean is fixed, their gap fitted
    assert by["twin"].forfeits == {"timeout": 1}
    assert by["random"].anchor and not by["star"].anchor
    shown = json.loads(table.to_json(t))
    bands = {e["name"]: e["rank_band"] for e in shown["entries"]}
    assert bands["star"] == "#1-#2" and bands["late"] == "#1-#5"
    late = next(e for e in shown["entries"] if e["name"] == "late")
    assert late["lo"] is None and late["hi"] is None and late["provisional"]


# -- capicua ladder, for real --------------------------------------------------------------------


def write_ladder(path: Path, data: dict[str, Any]) -> Path:
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


ENTRIES = {"random": "builtin:random", "easy": "builtin:easy", "medium": "builtin:medium"}
SMALL: dict[str, Any] = {
    "name": "small",
    "preset": "iq-1v1",
    "overrides": ["target=30"],
    "entries": ENTRIES,
}


def stored(out: Path) -> list[tuple[str, str, int, str]]:
    """(key, set key, seed, sides as JSON) of every stored match."""
    with sqlite3.connect(out / "results.sqlite") as conn:
        return list(conn.execute("SELECT key, set_key, seed, sides_json FROM matches"))


def check_sets(out: Path) -> dict[str, list[tuple[str, ...]]]:
    """Every set complete (a validation match alone, a rated set once per rotation, one
    deal), no entry against itself; set key -> its matches' sides."""
    sets: dict[str, list[tuple[str, ...]]] = {}
    seeds: dict[str, set[int]] = {}
    for _, set_key, seed, sides in stored(out):
        sets.setdefault(set_key, []).append(tuple(json.loads(sides)))
        seeds.setdefault(set_key, set()).add(seed)
    for key, matches in sets.items():
        assert len(seeds[key]) == 1
        first = matches[0]
        assert len(set(first)) == len(first), (key, matches)  # never against itself
        if key.startswith("V"):
            assert len(matches) == 1
        else:  # once per rotation of one group over the sides
            k = len(first)
            assert sorted(matches) == sorted(first[r:] + first[:r] for r in range(k)), key
    return sets


def ladder_cli(*args: str) -> Any:
    return cli_runner().invoke(main, ["ladder", *args])


def test_ladder_run_plays_validated_duplicate_sets_and_show_prints_the_table(
    tmp_path: Path,
) -> None:
    f = write_ladder(tmp_path / "l.toml", SMALL)
    out = tmp_path / "out"
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "24", "--quiet")
    assert r.exit_code == 0, r.output + r.stderr
    sets = check_sets(out)
    assert sorted(k for k in sets if k.startswith("V")) == ["V000000", "V000001", "V000002"]
    assert {sets[k][0][0] for k in sets if k.startswith("V")} == set(SMALL["entries"])
    assert count_matches(out) >= 24
    shown = ladder_cli("show", str(out), "--json")
    assert shown.exit_code == 0, shown.stderr
    data = json.loads(shown.output)
    assert {e["name"] for e in data["entries"]} == set(SMALL["entries"])
    assert all(e["sets"] > 0 and e["rank_band"].startswith("#") for e in data["entries"])
    assert data["anchored"] and data["rated_sets"] == sum(k.startswith("L") for k in sets)
    text = ladder_cli("show", str(out))
    assert "rank" in text.output and "95% CI" in text.output


def test_an_entry_added_to_the_file_joins_and_a_changed_one_is_refused(tmp_path: Path) -> None:
    f = write_ladder(tmp_path / "l.toml", SMALL)
    out = tmp_path / "out"
    assert ladder_cli("run", str(f), "--out", str(out), "--matches", "8", "--quiet").exit_code == 0
    grown = {**SMALL, "entries": {**ENTRIES, "newbie": "builtin:easy"}}
    write_ladder(f, grown)
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "24", "--quiet")
    assert r.exit_code == 0, r.output + r.stderr
    sets = check_sets(out)
    newbie = sorted((k for k, m in sets.items() if "newbie" in m[0]), key=lambda k: k[1:])
    assert newbie[0].startswith("V") and sets[newbie[0]][0][0] == "newbie"
    assert any(k.startswith("L") for k in newbie)
    changed = {**SMALL, "entries": {**ENTRIES, "easy": "builtin:hard"}}
    write_ladder(f, changed)
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "40", "--quiet")
    assert r.exit_code == 2
    assert re.fullmatch(r"capicua: error: entries\.easy: it was 'builtin:easy' in .* and is "
                        r"'builtin:hard' now; a new version is a new entry: give it a new "
                        r"name\n", r.stderr), r.stderr  # fmt: skip


BAD: list[tuple[dict[str, Any], str]] = [
    ({"colour": "red"}, r"colour: unknown key 'colour'; known: concurrency, entries, "),
    ({"entries": None}, r"entries: missing; add an \[entries\] table"),
    ({"entries": {"a": "builtin:random"}}, r"entries: a ladder needs at least 2 entries, got 1"),
    ({"entries": {"a": "builtin:nope", "b": "builtin:easy"}}, r"entries\.a: unknown built-in"),
    ({"preset": "iq-ffa"}, r"entries: .* has 4 sides and a ladder never sets an entry against "
                            r"itself: it needs at least 4 entries, got 3"),
    ({"matchmaking": {"pair_cap": 0}}, r"matchmaking\.pair_cap: expected an integer from 1 "),
    ({"matchmaking": {"speed": 1}}, r"matchmaking\.speed: unknown key 'speed'; known: "
                                    r"pair_cap, placement, throttle, top, top_every"),
    ({"time_limit_ms": 1}, r"time_limit_ms: expected an integer from 50 "),
]  # fmt: skip


def test_bad_ladder_files_are_one_line_each(tmp_path: Path) -> None:
    for change, message in BAD:
        data = {k: v for k, v in {**SMALL, **change}.items() if v is not None}
        f = write_ladder(tmp_path / "bad.toml", data)
        r = ladder_cli("run", str(f), "--out", str(tmp_path / "o"))
        assert r.exit_code == 2, (change, r.output, r.stderr)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and re.match(rf"capicua: error: {f}: {message}", lines[0]), lines
        assert not (tmp_path / "o").exists()
    (tmp_path / "broken.toml").write_text("entries = [")
    r = ladder_cli("run", str(tmp_path / "broken.toml"), "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "not valid TOML" in r.stderr and len(r.stderr.splitlines()) == 1
    r = ladder_cli("show", str(tmp_path / "nowhere"))
    assert r.exit_code == 2 and r.stderr.startswith("capicua: error: ")
    assert "no ladder results here" in r.stderr


async def interrupted_after(args: list[str], cwd: Path, matches: int) -> str:
    """Run ``capicua`` with ``args`` until the directory ``out`` holds ``matches`` matches,
    then Ctrl-C: its last line, once it has exited with 130 and no traceback."""
    proc = Proc([PY, "-m", "capicua", *args], cwd=cwd)
    try:
        await until(lambda: count_matches(cwd / "out") >= matches, EVENT_BOUND_S, "matches")
        proc.proc.send_signal(signal.SIGINT)
        code = await proc.wait(EVENT_BOUND_S)
    finally:
        proc.kill()
    assert code == 130, proc.report()
    assert "Traceback" not in proc.stderr
    return proc.stderr.strip().splitlines()[-1]


async def test_a_ladder_interrupted_by_ctrl_c_resumes_with_the_same_command(
    tmp_path: Path,
) -> None:
    # Without --matches the ladder runs until Ctrl-C, so each run is interrupted whatever
    # the speed (in process, 30 matches took less than the poll between two counts).
    f = write_ladder(tmp_path / "l.toml", SMALL)
    args = ["ladder", "run", str(f), "--out", "out", "--quiet"]
    last = await interrupted_after(args, tmp_path, 6)
    assert re.fullmatch(r"capicua: interrupted; \d+ matches played(; \d+ abandoned \(played "
                        r"again on resume\))?; results in out: the same command resumes",
                        last), last  # fmt: skip
    kept = {key for key, *_ in stored(tmp_path / "out")}
    last = await interrupted_after(args, tmp_path, len(kept) + 6)
    resumed = (rf"capicua: interrupted; \d+ matches played; {len(kept)} kept from an earlier "
               r"run(; \d+ abandoned \(played again on resume\))?; results in out: the same "
               r"command resumes")  # fmt: skip
    assert re.fullmatch(resumed, last), last
    now = {key for key, *_ in stored(tmp_path / "out")}
    assert kept < now
    check_sets(tmp_path / "out")  # every set whole (in process a set is committed whole)


def test_the_documented_example_ladder_loads() -> None:
    lad = load_ladder(Path(__file__).resolve().parent.parent / "docs/examples/ladder.toml")
    assert [b.name for b in lad.tournament.bots] == ["random", "easy", "medium", "hard"]
    assert lad.matchmaking == Matchmaking()  # the file states the defaults


def test_over_the_protocol_an_entry_that_times_out_fails_validation_and_is_not_rated(
    tmp_path: Path,
) -> None:
    # HangLater plays the arena's one-hand check, then hangs in every match: its validation
    # match is forfeited on time, recorded as such, and the matchmaker drops it.
    (tmp_path / "later.py").write_text(LATER_BOTS)
    entries = {**ENTRIES, "hang": "python:later:HangLater"}
    data = {**SMALL, "time_limit_ms": HANG_CLOCK_MS, "concurrency": 1, "entries": entries}
    f = write_ladder(tmp_path / "l.toml", data)
    out = tmp_path / "out"
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "12", "--quiet")
    assert r.exit_code == 0, r.output + r.stderr
    sets = check_sets(out)
    with sqlite3.connect(out / "results.sqlite") as conn:
        rows = list(conn.execute("SELECT set_key, termination, forfeited_side FROM matches"))
    checked = [(k, t, s) for k, t, s in rows if sets[k][0][0] == "hang" and k.startswith("V")]
    assert checked == [(checked[0][0], "timeout", 0)]
    assert not any("hang" in m[0] for k, m in sets.items() if k.startswith("L"))
    entry = {e.name: e for e in table.load(out).entries}["hang"]
    assert entry.status == "failed validation" and entry.rating is None and entry.band is None


def test_team_and_every_player_for_themselves_ladders(tmp_path: Path) -> None:
    more = {**ENTRIES, "random-2": "builtin:random", "easy-2": "builtin:easy"}
    for preset, entries, sides in (("iq-2v2", ENTRIES, 2), ("iq-ffa", more, 4)):
        data = {**SMALL, "preset": preset, "overrides": ["max_hands=2"], "entries": entries}
        f = write_ladder(tmp_path / f"{preset}.toml", data)
        out = tmp_path / preset
        r = ladder_cli("run", str(f), "--out", str(out), "--matches", "30", "--quiet")
        assert r.exit_code == 0, r.output + r.stderr
        sets = check_sets(out)
        rated = [m for k, m in sets.items() if k.startswith("L")]
        assert rated and all(len(m) == sides and len(m[0]) == sides for m in rated)
        with sqlite3.connect(out / "results.sqlite") as conn:
            for seats, sides_json in conn.execute("SELECT seats_json, sides_json FROM matches"):
                by_side = json.loads(sides_json)
                # on a team preset one entry holds both seats of its side
                assert json.loads(seats) == [by_side[seat % len(by_side)] for seat in range(4)]


def test_a_top_entry_idle_for_top_every_sets_is_chosen_next() -> None:
    names = ["a", "b", "c", "d", "e", "f"]
    mm = Matchmaking(placement=1, top=1, top_every=4)
    history = [Issued(i, (name, names[(i + 1) % 6]), True) for i, name in enumerate(names)]
    history += [Issued(6, ("a", "b"))]  # then a rests while the others play
    history += [Issued(7 + i, g) for i, g in enumerate([("c", "d"), ("e", "f"), ("b", "c")])]
    skills = {n: Skill(30.0 - i, 1.0, 27.0 - i, 4) for i, n in enumerate(names)}  # a is best
    for seed in range(20):  # whatever the mix would draw: a has waited top_every sets
        chosen = choose(10, names, history, skills, 2, mm, seed)
        assert chosen is not None and not chosen.validation and chosen.group[0] == "a", chosen


def test_a_set_stored_in_part_is_finished_first_unless_its_entry_has_left(tmp_path: Path) -> None:
    # Over the protocol a set's matches are committed one by one: an interrupt may leave
    # part of a set. Here the part is made by taking a stored match out again.
    f = write_ladder(tmp_path / "l.toml", SMALL)
    out = tmp_path / "out"
    args = ["run", str(f), "--out", str(out), "--matches", "12", "--quiet"]
    assert ladder_cli(*args).exit_code == 0

    def take_out(entry: str) -> str:
        with sqlite3.connect(out / "results.sqlite") as conn:
            key = next(
                k for k, sides in conn.execute("SELECT key, sides_json FROM matches ORDER BY seq")
                if k.startswith("L") and k.endswith("-r1") and entry in json.loads(sides)
            )  # fmt: skip
            conn.execute("DELETE FROM matches WHERE key = ?", (key,))
        return str(key)

    again = take_out("random")
    assert ladder_cli(*args).exit_code == 0
    assert again in {key for key, *_ in stored(out)}  # the same match, played again
    check_sets(out)
    gone = take_out("medium")
    before = {key for key, *_ in stored(out)}
    left = {**SMALL, "entries": {k: v for k, v in ENTRIES.items() if k != "medium"}}
    write_ladder(f, left)
    r = ladder_cli("run", str(f), "--out", str(out), "--matches", "20", "--quiet")
    assert r.exit_code == 0, r.output + r.stderr
    rows = stored(out)
    assert gone not in {key for key, *_ in rows} and len(rows) >= 20  # left half-played
    newer = [json.loads(sides) for key, _, _, sides in rows if key not in before]
    assert newer and not any("medium" in sides for sides in newer)
    results = Results.open_existing(out)
    try:
        entry = {e.name: e for e in table.compute(results, set(left["entries"])).entries}
    finally:
        results.close()
    assert entry["medium"].status == "left" and entry["random"].status == "playing"
    # ladder show reads who left from the directory (the run recorded its file's entries)
    shown = json.loads(ladder_cli("show", str(out), "--json").output)
    status = {e["name"]: e["status"] for e in shown["entries"]}
    assert status == {"medium": "left", "random": "playing", "easy": "playing"}, status
    assert "left" in ladder_cli("show", str(out)).output


def test_a_ladder_directory_asked_of_another_command_names_the_ladder_and_its_command(
    tmp_path: Path,
) -> None:
    out = tmp_path / "l"
    constructed(out)
    opens = f"holds a ladder's results (capicua ladder show {out} opens them)"
    tournament = tmp_path / "t.toml"
    tournament.write_text('name = "t"\npreset = "iq-1v1"\nformat = "round-robin"\ngames = 1\n'
                          '[bots]\nrandom = "builtin:random"\neasy = "builtin:easy"\n')  # fmt: skip
    refused = [
        ["arena", "run", str(tournament), "--out", str(out)],
        ["arena", "sprt", "--base", "easy", "--candidate", "random", "--rules", "block",
         "--out", str(out)],
        ["experiment", "ab", "--base", "block", "--hands", "3", "--out", str(out)],
        ["experiment", "show", str(out)],
    ]  # fmt: skip
    before = stored(out)
    for args in refused:
        r = cli_runner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output, r.stderr)
        assert r.stderr.splitlines()[-1] == f"capicua: error: {out} {opens}" + (
            "" if args[1] == "show" else "; use another --out"
        ), (args, r.stderr)
    assert stored(out) == before  # nothing written
    # and the other way round: a tournament's directory asked of ladder show
    t_out = tmp_path / "t"
    assert cli_runner().invoke(main, ["arena", "run", str(tournament), "--out", str(t_out),
                                      "--quiet"]).exit_code == 0  # fmt: skip
    r = ladder_cli("show", str(t_out))
    assert r.exit_code == 2 and r.stderr == (
        f"capicua: error: {t_out} holds a tournament's or an SPRT's results (capicua arena "
        f"standings {t_out} opens them), not a ladder's\n"
    ), r.stderr


def test_arena_standings_of_a_ladder_directory_rate_what_its_table_rates(tmp_path: Path) -> None:
    f = write_ladder(tmp_path / "l.toml", SMALL)
    out = tmp_path / "out"
    assert ladder_cli("run", str(f), "--out", str(out), "--matches", "14", "--quiet").exit_code == 0
    rows = stored(out)
    rated_keys = [key for key, set_key, *_ in rows if set_key.startswith("L")]
    assert len(rated_keys) < len(rows)  # the validation matches are there, and not rated
    r = cli_runner().invoke(main, ["arena", "standings", str(out), "--json"])
    assert r.exit_code == 0, r.stderr
    arena = json.loads(r.output)
    shown = json.loads(ladder_cli("show", str(out), "--json").output)
    assert arena["matches_total"] == len(rated_keys)
    ladder_lines = {e["name"]: e for e in shown["entries"]}
    arena_lines = {b["name"]: b for b in arena["bots"]}
    assert set(ladder_lines) == set(arena_lines)
    for name, line in ladder_lines.items():
        other = arena_lines[name]
        counts = ("sets", "matches", "wins", "draws", "losses")
        assert {k: other[k] for k in counts} == {k: line[k] for k in counts}, name
    # the same fit: the table's ratings are the standings' moved by one shift (its anchors)
    shifts = [ladder_lines[n]["rating"] - arena_lines[n]["elo"] for n in ladder_lines]
    assert max(shifts) - min(shifts) < 0.25, shifts  # (both rounded to 0.1)


#: A set as the strategy draws it: validation or not, two entries (indices into the
#: ladder's), and each match's outcome (0/1: that side wins; 2: no winner; 3: side 0
#: forfeits on time).
drawn_sets = st.lists(
    st.tuples(st.booleans(), st.integers(0, 4), st.integers(1, 4), st.integers(0, 3),
              st.integers(0, 3)),
    min_size=1, max_size=25,
)  # fmt: skip


def outcome(code: int) -> MatchFacts:
    if code == 3:
        return MatchFacts("timeout", 1, None, (0, 0), (), forfeited=0)
    return MatchFacts("normal", None if code == 2 else code, None, (0, 0), ())


@settings(max_examples=25, deadline=None)
@given(drawn_sets, st.lists(st.integers(1, 4), min_size=1), st.randoms())
def test_the_online_state_kept_set_by_set_equals_a_full_recomputation(
    drawn: list[tuple[bool, int, int, int, int]], batches: list[int], rnd: Any
) -> None:
    lad = ladder_from_mapping(dict(LADDER_FILE), Path("."))
    names = [b.name for b in lad.tournament.bots]
    with tempfile.TemporaryDirectory() as tmp:
        results = Results(Path(tmp))
        try:
            results.bind(LADDER, "t", lad.canonical(), lad.digest(), "test")
            units = []
            for seq, (validation, a, step, first, second) in enumerate(drawn):
                group = (names[a], names[(a + step) % len(names)])
                unit = specs(lad, Issued(seq, group, validation=validation))
                units.append([
                    Finished(spec, outcome(code), None, None, "2026-12-06T00:00:00Z", 0.0)
                    for spec, code in zip(unit, (first, second), strict=False)
                ])  # fmt: skip
            rnd.shuffle(units)  # sets in flight side by side end in any order
            online = Online()
            sizes = iter(batches * len(units))
            while units:
                size = next(sizes)
                batch, units = units[:size], units[size:]
                commit_matches(results, [m for unit in batch for m in unit])
                online.catch_up(results)
                everything, _ = results.matches_after(0)
                full = openskill_ratings(m for m in everything if ladder_rated(m))
                assert online.skills.skills() == full
                assert online.failed == failed_validation(everything)
        finally:
            results.close()
