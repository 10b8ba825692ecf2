"""``capicua arena standings``: per-bot results, Elo over duplicate sets, openskill, the
crosstable, JSON and tables; real results played in-process (tests/arenakit.py) plus small
hand-computed inputs for the rating functions."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from rich.console import Console
from rich.table import Table

from capicua.arena import ratings
from capicua.arena.standings import (
    Standings,
    band_text,
    compute,
    compute_rows,
    crosstable_table,
    errors_table,
    render,
    render_live,
    standings_table,
    to_dict,
    to_json,
)
from capicua.arena.store import BotRow, FailureRow, HandRow, MatchRow, Results
from capicua.cli import main
from tests.arenakit import play_results, tournament
from tests.clirunner import cli_runner

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
TWO = {"random": "builtin:random", "easy": "builtin:easy"}
THREE = {"random": "builtin:random", "easy": "builtin:easy", "medium": "builtin:medium"}


def run(*args: str) -> Result:
    return cli_runner().invoke(main, list(args), env=ENV)


def match(
    key: str,
    sides: Sequence[str],
    winner: int | None,
    *,
    scores: Sequence[int] | None = None,
    termination: str = "normal",
    forfeited: int | None = None,
) -> MatchRow:
    """A stored-match row built by hand; ``key`` is ``SET-rR``."""
    set_key, _, rot = key.partition("-r")
    n = len(sides)
    if scores is None:
        scores = [1 if side == winner else 0 for side in range(n)]
    return MatchRow(
        key=key,
        set_key=set_key,
        seq=int(set_key.lstrip("s") or 0),
        seed=1,
        rotation=int(rot or 0),
        seats=tuple(sides),
        sides=tuple(sides),
        server_match=None,
        termination=termination,
        reason="",
        winner_side=winner,
        ranking=tuple(range(n)),
        scores=tuple(scores),
        forfeited_side=forfeited,
        hands=1,
        replay_path=None,
        started="",
        finished="",
        seconds=0.0,
    )


# -- real results, played once per module --------------------------------------------------


@pytest.fixture(scope="module")
def block3(tmp_path_factory: pytest.TempPathFactory) -> Results:
    """Round robin of random, easy and medium on block to 30, 2 sets per pairing."""
    t = tournament(preset="block", games=2, overrides=["target=30"], bots=THREE)
    return play_results(tmp_path_factory.mktemp("block3"), t)


@pytest.fixture(scope="module")
def easy_random(tmp_path_factory: pytest.TempPathFactory) -> Results:
    """easy against random on block to 30, 12 duplicate sets."""
    t = tournament(preset="block", games=12, overrides=["target=30"], bots=TWO)
    return play_results(tmp_path_factory.mktemp("easy_random"), t)


def test_totals_match_the_rows(block3: Results) -> None:
    s = compute(block3, samples=200)
    matches = block3.matches()
    hands = block3.hands()
    assert s.matches_total == len(matches) == 12
    assert s.sides == 2 and s.cancelled == 0 and s.abandoned == 0
    assert sum(s.terminations.values()) == len(matches)
    assert {b.name for b in s.bots} == set(THREE)
    by_key = {m.key: m for m in matches}
    for b in s.bots:
        mine = [m for m in matches if b.name in m.sides]
        assert b.matches == len(mine) == 8
        assert b.wins + b.draws + b.losses == b.matches
        assert b.wins == sum(1 for m in mine if m.winner_side is not None
                             and m.sides[m.winner_side] == b.name)  # fmt: skip
        own = [h for h in hands if b.name in by_key[h.match_key].sides]
        assert b.hands == len(own)
        assert b.hands_decided == sum(1 for h in own if h.winner_side is not None)
        gained = sum(p for h in own for side, p in enumerate(h.points)
                     if by_key[h.match_key].sides[side] == b.name)  # fmt: skip
        assert b.points == gained
        assert b.points_per_hand == pytest.approx(gained / len(own))
        assert b.match_score == pytest.approx((b.wins + b.draws / 2) / b.matches)
        assert b.hand_win_rate == pytest.approx(b.hand_wins / b.hands_decided)
        assert b.errors == {} and not b.disqualified
        assert b.elo is not None and b.elo_ci95 is not None and b.sets == 4
    # every match has one winner or none, every decided hand one winner: counts add up
    decided = sum(1 for m in matches if m.winner_side is not None)
    assert sum(b.wins for b in s.bots) == decided
    assert sum(b.losses for b in s.bots) == decided
    assert sum(b.hand_wins for b in s.bots) == sum(1 for h in hands if h.winner_side is not None)
    assert sum(b.points for b in s.bots) == sum(sum(h.points) for h in hands)
    # Elo is anchored at mean 0; the standings are sorted by it
    elos = [b.elo for b in s.bots if b.elo is not None]
    assert sum(elos) == pytest.approx(0.0, abs=1e-9)
    assert elos == sorted(elos, reverse=True)
    # the crosstable: both directions, scores add up to 1, 2 sets (4 matches) per pairing
    for row in THREE:
        assert set(s.crosstable[row]) == set(THREE) - {row}
        for col, cell in s.crosstable[row].items():
            back = s.crosstable[col][row]
            assert cell.score + back.score == pytest.approx(1.0)
            assert cell.match_score + back.match_score == pytest.approx(1.0)
            assert (cell.sets, cell.matches) == (back.sets, back.matches) == (2, 4)


def test_a_stronger_bot_rates_higher(easy_random: Results) -> None:
    s = compute(easy_random)
    easy, rnd = s.bot("easy"), s.bot("random")
    assert easy.match_score is not None and easy.match_score > 0.5
    assert easy.elo is not None and rnd.elo is not None
    assert easy.elo > rnd.elo
    assert s.bots[0].name == "easy"
    assert s.crosstable["easy"]["random"].sets == 12
    for b in (easy, rnd):
        assert b.elo is not None and b.elo_ci95 is not None
        lo, hi = b.elo_ci95
        assert lo < b.elo < hi
    # two bots: the ratings and intervals mirror each other
    assert easy.elo == pytest.approx(-rnd.elo)
    assert easy.elo_ci95 is not None and rnd.elo_ci95 is not None
    assert easy.elo_ci95[0] == pytest.approx(-rnd.elo_ci95[1])


def test_same_results_same_json(tmp_path: Path, easy_random: Results) -> None:
    first = to_json(compute(easy_random))
    assert to_json(compute(easy_random)) == first
    # the same tournament played again elsewhere gives byte-identical standings
    t = tournament(preset="block", games=12, overrides=["target=30"], bots=TWO)
    again = play_results(tmp_path / "again", t)
    assert to_json(compute(again)) == first
    assert "\n" not in first


def test_cli_json_schema(block3: Results) -> None:
    result = run("arena", "standings", str(block3.where), "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["matches_total"] == 12
    assert {"bots", "crosstable", "sides", "cancelled", "abandoned", "terminations"} <= set(data)
    assert len(data["bots"]) == 3
    for b in data["bots"]:
        assert {"name", "matches", "hand_win_rate", "elo", "elo_ci95", "wins", "draws",
                "losses", "match_score", "points", "points_per_hand", "openskill", "errors",
                "disqualified", "disqualified_reason"} <= set(b)  # fmt: skip
        assert isinstance(b["elo"], float)
        lo, hi = b["elo_ci95"]
        assert lo <= b["elo"] <= hi
        assert 0.0 <= b["hand_win_rate"] <= 1.0
        assert set(b["openskill"]) == {"mu", "sigma", "ordinal"}
    cell = data["crosstable"]["easy"]["random"]
    assert set(cell) == {"score", "match_score", "sets", "matches"}
    assert data == to_dict(compute(block3))


def test_rank_bands_follow_the_intervals(block3: Results) -> None:
    # a bot's band: 1 + the bots wholly above it, to the field's size - those wholly below
    s = compute(block3)
    for b in s.bots:
        assert b.elo_ci95 is not None and b.rank_band is not None
        lo, hi = b.elo_ci95
        others = [o.elo_ci95 for o in s.bots if o is not b and o.elo_ci95 is not None]
        above = sum(o_lo > hi for o_lo, _ in others)
        below = sum(o_hi < lo for _, o_hi in others)
        assert b.rank_band == (1 + above, len(s.bots) - below)
    text = run("arena", "standings", str(block3.where)).stdout
    for b in s.bots:
        assert re.search(rf"{re.escape(band_text(b.rank_band))}\s+{b.name}\b", text), text
    data = json.loads(run("arena", "standings", str(block3.where), "--json").stdout)
    assert [b["rank_band"] for b in data["bots"]] == [list(b.rank_band or ()) for b in s.bots]


def test_cli_tables(block3: Results) -> None:
    result = run("arena", "standings", str(block3.where))
    assert result.exit_code == 0, result.output
    for text in ("Standings", "Crosstable", "random", "easy", "medium", "95% CI"):
        assert text in result.stdout


@pytest.mark.parametrize("make", [False, True])
def test_cli_without_results_is_one_line(tmp_path: Path, make: bool) -> None:
    target = tmp_path / "nothing-here"
    if make:
        target.mkdir()
    for args in (["--json"], []):
        result = run("arena", "standings", str(target), *args)
        assert result.exit_code == 2
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("capicua: error: ")
        assert "no arena results" in lines[0]
    assert target.exists() == make  # nothing created


@pytest.mark.parametrize(
    ("preset", "bots", "sides"),
    [("cutthroat", TWO, 3), ("iq-ffa", THREE, 4)],
)
def test_openskill_with_more_than_two_sides(
    tmp_path: Path, preset: str, bots: dict[str, str], sides: int
) -> None:
    results = play_results(tmp_path, tournament(preset=preset, games=1, bots=bots))
    s = compute(results, samples=100)
    assert s.sides == sides
    assert s.matches_total == len(results.matches()) == sides  # one set: one match per rotation
    data = json.loads(to_json(s))
    for b in data["bots"]:
        skill = b["openskill"]
        assert skill is not None
        assert skill["ordinal"] == pytest.approx(skill["mu"] - 3 * skill["sigma"], abs=1e-3)
        assert 0 < skill["sigma"] < 25 / 3  # rated: less uncertain than a new rating
        assert isinstance(b["elo"], float)
        assert b["matches"] == sides  # copies count a match once
    # the wins are per match: one winner or none, whoever holds the winning side(s)
    decided = sum(1 for m in results.matches() if m.winner_side is not None)
    assert sum(b["wins"] for b in data["bots"]) == decided
    rendered = _text(standings_table(s))
    assert "openskill" in rendered


def test_empty_results(tmp_path: Path) -> None:
    results = Results(tmp_path)
    results.add_bot("a", "builtin:random")
    results.add_bot("b", "builtin:easy")
    s = compute(results)
    assert s.matches_total == 0 and s.sides == 0
    assert [b.name for b in s.bots] == ["a", "b"]
    for b in s.bots:
        assert b.matches == 0 and b.elo is None and b.elo_ci95 is None and b.openskill is None
        assert b.match_score is None and b.hand_win_rate is None
    data = json.loads(to_json(s))
    assert data["matches_total"] == 0 and data["bots"][0]["elo"] is None
    assert _text(*render(s))  # renders without a crosstable


# -- rows built by hand ---------------------------------------------------------------------


def test_placements_and_pair_scores() -> None:
    assert ratings.placements(match("s0-r0", ["a", "b"], 1)) == (1, 0)
    assert ratings.placements(match("s0-r0", ["a", "b"], None, scores=[5, 5])) == (0, 0)
    # three sides, hand limit: no winner, the two leaders tie, the third is last
    m = match("s0-r0", ["a", "b", "c"], None, scores=[4, 4, 1], termination="hand_limit")
    assert ratings.placements(m) == (0, 0, 1)
    # a forfeited side is last whatever its score
    m = match("s0-r0", ["a", "b", "c"], 1, scores=[9, 5, 1], termination="timeout", forfeited=0)
    assert ratings.placements(m) == (2, 0, 1)
    # a bot holding two sides (a copy) is placed by its best side
    m = match("s0-r0", ["a", "b", "a"], 2, scores=[0, 3, 6])
    assert ratings.bot_places(m) == {"a": 0, "b": 1}


def test_set_scores() -> None:
    rows = [
        match("s00000-r0", ["a", "b"], 0),  # a wins
        match("s00000-r1", ["b", "a"], None, scores=[3, 3], termination="hand_limit"),  # draw
        match("s00001-r0", ["a", "b"], 1),  # b wins
        match("s00001-r1", ["b", "a"], None, termination="cancelled"),  # not counted
        match("s00002-r0", ["a", "b"], None, termination="cancelled"),
    ]
    sets = ratings.duplicate_sets(rows)
    assert [(st.set_key, st.games) for st in sets] == [
        ("s00000", (ratings.PairGame("a", "b", 0.75, 2),)),
        ("s00001", (ratings.PairGame("a", "b", 0.0, 1),)),
    ]
    # three sides with a copy: every pair of different bots, by best-placed side
    rows = [
        match("s00000-r0", ["a", "b", "a"], 1, scores=[2, 6, 0]),  # b, a, a
        match("s00000-r1", ["b", "a", "a"], 2, scores=[1, 0, 6]),  # a, b, a
        match("s00000-r2", ["a", "a", "b"], 0, scores=[6, 0, 4]),  # a, b, a
    ]
    (st,) = ratings.duplicate_sets(rows)
    assert st.group == ("a", "b")
    assert st.games == (ratings.PairGame("a", "b", 2 / 3, 3),)


def test_elo_fit_by_hand() -> None:
    # 3 of 4 against one opponent: p = 3/4, a difference of 400 log10(3), split around 0
    half = 200 * math.log10(3)
    elo = ratings.fit_elo([("a", "b", 1.0)] * 3 + [("a", "b", 0.0)], prior_draws=0)
    assert elo["a"] == pytest.approx(half) and elo["b"] == pytest.approx(-half)
    # fractional scores carry the same information: four sets scored 0.75
    elo = ratings.fit_elo([("b", "a", 0.25)] * 4, prior_draws=0)
    assert elo["a"] == pytest.approx(half)
    # even results: everyone 0
    assert ratings.fit_elo([("a", "b", 0.5), ("b", "c", 0.5)], prior_draws=0) == pytest.approx(
        {"a": 0.0, "b": 0.0, "c": 0.0}, abs=1e-9
    )
    # a chain a > b > c with 3:1 each and 1:1 between a and c: the maximum likelihood
    # equations say every player's expected score equals its actual score
    games = [("a", "b", 0.75), ("b", "c", 0.75), ("a", "c", 0.5)]
    elo = ratings.fit_elo(games, prior_draws=0)
    assert sum(elo.values()) == pytest.approx(0.0, abs=1e-9)

    def expected(x: str, y: str) -> float:
        return 1 / (1 + 10 ** ((elo[y] - elo[x]) / 400))

    for player in "abc":
        actual = sum(s if a == player else 1 - s for a, b, s in games if player in (a, b))
        exp = sum(expected(a, b) if a == player else expected(b, a) for a, b, _ in games
                  if player in (a, b))  # fmt: skip
        assert exp == pytest.approx(actual, abs=1e-9)
    assert elo["b"] == pytest.approx(0.0, abs=1e-9)  # by symmetry
    assert elo["a"] == pytest.approx(-elo["c"])


def test_elo_prior_keeps_a_perfect_record_finite() -> None:
    elo = ratings.fit_elo([("a", "b", 1.0)] * 4)
    # a wins everything: with one draw each against a 0-rated opponent, a = -b = x where
    # 4 (1 - P(2x)) = P(x) - 1/2, P the logistic expectation on the Elo scale
    x = elo["a"]
    assert 0 < x < ratings.ELO_CAP and elo["b"] == pytest.approx(-x)

    def p(d: float) -> float:
        return 1 / (1 + 10 ** (-d / 400))

    assert 4 * (1 - p(2 * x)) == pytest.approx(p(x) - 0.5, abs=1e-9)
    # without the prior the fit is clamped, never infinite
    elo = ratings.fit_elo([("a", "b", 1.0)] * 4, prior_draws=0)
    assert all(math.isfinite(v) and abs(v) <= ratings.ELO_CAP for v in elo.values())


def test_elo_intervals_from_sets() -> None:
    rows = []
    for i in range(10):  # a wins 7 sets, splits 2 (one win each), loses 1
        won = (True, False) if i < 2 else (True, True) if i < 9 else (False, False)
        rows.append(match(f"s{i:05d}-r0", ["a", "b"], 0 if won[0] else 1))
        rows.append(match(f"s{i:05d}-r1", ["b", "a"], 1 if won[1] else 0))
    sets = ratings.duplicate_sets(rows)
    assert len(sets) == 10
    elo = ratings.elo_ratings(sets, samples=300)
    a, b = elo["a"], elo["b"]
    assert a.elo > 0 and a.elo == pytest.approx(-b.elo)
    assert a.lo < a.elo < a.hi and b.lo < b.elo < b.hi
    assert a.hi - a.elo == pytest.approx(a.elo - a.lo)  # elo ± 1.96 sd
    assert a.hi - a.lo == pytest.approx(b.hi - b.lo)
    assert (a.sets, b.sets) == (10, 10)
    assert ratings.elo_ratings(sets, samples=300) == elo  # seeded: reproducible
    assert sorted(g.score for st in sets for g in st.games) == [0.0, 0.5, 0.5] + [1.0] * 7
    # the point estimate is the fit of the set scores
    direct = ratings.fit_elo([("a", "b", g.score) for st in sets for g in st.games])
    assert a.elo == pytest.approx(direct["a"])
    # a single pair and a single set: a rating, an interval of zero width
    one = ratings.elo_ratings(sets[:1])
    assert one["a"].lo == pytest.approx(one["a"].elo) == pytest.approx(one["a"].hi)
    assert ratings.elo_ratings([]) == {}


def test_openskill_by_hand() -> None:
    rows = [
        match("s00000-r0", ["a", "b", "c"], 0, scores=[6, 2, 1]),
        match("s00000-r1", ["b", "c", "a"], 2, scores=[2, 1, 6]),
        match("s00000-r2", ["c", "a", "b"], 1, scores=[1, 6, 2]),
        match("s00001-r0", ["a", "b", "c"], None, termination="cancelled"),  # ignored
    ]
    skill = ratings.openskill_ratings(rows)
    assert skill["a"].mu > skill["b"].mu > skill["c"].mu
    assert skill["a"].matches == 3
    for s in skill.values():
        assert s.ordinal == pytest.approx(s.mu - 3 * s.sigma)
    # a copy: the bot is one team, ranked by its best side
    copy = ratings.openskill_ratings([match("s00000-r0", ["a", "b", "a"], 2, scores=[0, 3, 6])])
    assert set(copy) == {"a", "b"} and copy["a"].mu > copy["b"].mu
    assert copy["a"].matches == copy["b"].matches == 1


def test_compute_rows_counts_copies_cancellations_and_failures() -> None:
    rows = [
        match("s00000-r0", ["a", "b", "a"], 1, scores=[2, 6, 0]),
        match("s00000-r1", ["b", "a", "a"], 2, scores=[1, 0, 6]),
        match("s00000-r2", ["a", "a", "b"], None, termination="cancelled"),
    ]
    hands = [
        HandRow("s00000-r0", 0, 1, False, (0, 6, 0)),
        HandRow("s00000-r0", 1, None, True, (0, 0, 0)),
        HandRow("s00000-r1", 0, 2, False, (0, 0, 6)),
        HandRow("s00000-r2", 0, 0, False, (3, 0, 0)),  # of a cancelled match: not counted
    ]
    bots = [BotRow("a", "builtin:easy", False, None), BotRow("b", "cmd:x", True, "3 crashes")]
    failures = [
        FailureRow("b", "crash", None, "exit 1", ""),
        FailureRow("b", "crash", None, "exit 1", ""),
        FailureRow("b", "timeout", "s00000-r0", "slow", ""),
    ]
    s = compute_rows(bots=bots, matches=rows, hands=hands, failures=failures, abandoned=1)
    assert (s.matches_total, s.cancelled, s.abandoned, s.sides) == (3, 1, 1, 3)
    assert s.terminations == {"cancelled": 1, "normal": 2}
    a, b = s.bot("a"), s.bot("b")
    assert (a.matches, a.wins, a.losses, a.draws) == (2, 1, 1, 0)
    assert (b.matches, b.wins, b.losses, b.draws) == (2, 1, 1, 0)
    assert (a.hands, a.hands_decided, a.hand_wins, a.points) == (3, 2, 1, 6)
    assert (b.hands, b.hands_decided, b.hand_wins, b.points) == (3, 2, 1, 6)
    assert b.errors == {"crash": 2, "timeout": 1} and b.errors_total == 3
    assert b.disqualified and b.disqualified_reason == "3 crashes"
    assert not a.disqualified and a.errors == {}
    assert s.crosstable["a"]["b"].sets == 1 and s.crosstable["a"]["b"].matches == 2
    table = errors_table(s)
    assert table is not None
    text = _text(table)
    assert "crash" in text and "3 crashes" in text


def test_render_is_pure_tables(block3: Results) -> None:
    s: Standings = compute(block3, samples=100)
    tables = render(s)
    assert all(isinstance(t, Table) for t in tables)
    assert len(tables) == 2  # no errors table without failures
    assert errors_table(s) is None
    text = _text(*tables, crosstable_table(s))
    for name in THREE:
        assert name in text
    assert "medium" in _text(render_live(s))
    assert to_json(s) == to_json(compute(block3, samples=100))  # rendering changed nothing


def _text(*renderables: Any) -> str:
    console = Console(record=True, width=200, color_system=None, file=io.StringIO())
    for r in renderables:
        console.print(r)
    return console.export_text()
