"""The experiment's statistics where few pairs differ, the units and ranges of its metrics,
and what an experiment says it cannot measure (docs/regression-testing.md)."""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

import pytest
from scipy import stats

from capicua.arena.experiment.analysis import analyze, to_dict, verdict_lines
from capicua.arena.experiment.analysis import tables as analysis_tables
from capicua.arena.experiment.config import ExperimentError, build, make_arm
from capicua.arena.experiment.intervals import (
    beta_cdf,
    beta_quantile,
    clopper_pearson,
    t_quantile,
    t_two_sided,
)
from capicua.arena.experiment.metrics import (
    Metric,
    compare,
    estimate,
    holm,
    holm_adjusted,
    lower_share,
    metrics_for,
    sign_test,
    upper_share,
)
from capicua.arena.facts import HandFacts, MatchFacts
from capicua.cli import main
from capicua.engine.rules import load_preset
from tests.clirunner import cli_runner

RATE = Metric("r", "a rate")
MEAN = Metric("m", "a mean", rate=False, unit="points", high=None)


def hands(*values: float) -> list[tuple[float, float]]:
    """One hand per pair: ``(y, 1)``."""
    return [(v, 1.0) for v in values]


def test_the_exact_share_bounds_are_clopper_pearson() -> None:
    for k, n in ((0, 500), (1, 500), (7, 500), (3, 20), (19, 20)):
        assert upper_share(k, n) == pytest.approx(stats.beta.ppf(0.975, k + 1, n - k), abs=1e-9)
        if k:
            assert lower_share(k, n) == pytest.approx(stats.beta.ppf(0.025, k, n - k + 1), abs=1e-9)
    assert upper_share(5, 5) == 1.0 and lower_share(0, 9) == 0.0


def test_the_sign_test_is_the_exact_binomial_test() -> None:
    for pos, neg in ((0, 0), (5, 0), (7, 2), (3, 3), (0, 9)):
        want = 1.0 if pos + neg == 0 else stats.binomtest(pos, pos + neg).pvalue
        assert sign_test(pos, neg) == pytest.approx(want, abs=1e-12)


def test_no_pair_differing_bounds_the_effect_instead_of_calling_it_zero() -> None:
    """500 pairs, no pair differs in a 0/1 metric: |effect| < 1 - 0.025^(1/500) = 0.74 pp."""
    c = compare(RATE, hands(*[1, 0] * 250), hands(*[1, 0] * 250))
    bound = 1 - 0.025 ** (1 / 500)
    assert c.identical and c.exact and c.differing == 0 and c.p == 1.0
    assert c.ci95 == pytest.approx((-bound, bound))
    assert bound == pytest.approx(0.00735, abs=1e-5)


def test_the_exact_bound_covers_rare_effects() -> None:
    """Rare discordant pairs (the audit's case: zero-width intervals covered the truth 0
    times in 48): the interval covers the true difference at least 95% of the time."""
    rng = random.Random(7)
    n, p_up, p_down = 500, 0.004, 0.001
    truth = p_up - p_down
    covered = runs = 0
    for _ in range(400):
        base, cand = [], []
        for _ in range(n):
            # a 0/1 metric whose per-pair difference is +1 w.p. p_up and -1 w.p. p_down
            u = rng.random()
            b = c = float(rng.random() < 0.5)
            if u < p_up:
                b, c = 0.0, 1.0
            elif u < p_up + p_down:
                b, c = 1.0, 0.0
            base.append((b, 1.0))
            cand.append((c, 1.0))
        comp = compare(RATE, base, cand)
        runs += 1
        covered += comp.ci95[0] <= truth <= comp.ci95[1]
    assert covered / runs >= 0.95, covered / runs


def test_a_clear_rare_effect_is_significant_and_its_bound_agrees() -> None:
    """Eight pairs out of 500 gain one point of a 0/1 metric and none lose: the sign test
    and the exact interval both exclude 0."""
    base = hands(*([0.0] * 500))
    cand = hands(*([1.0] * 8 + [0.0] * 492))
    c = compare(RATE, base, cand)
    assert c.exact and c.differing == 8 and c.p == pytest.approx(2 * 0.5**8)
    assert 0 < c.ci95[0] < c.diff < c.ci95[1]


def test_intervals_stay_inside_what_a_rate_can_be() -> None:
    """A share's interval lies in [0, 1]; a difference of two rates in [-1, +1], never cut
    at -base or 1 - base: the base's value is an estimate too."""
    base = hands(*([1.0] * 40 + [0.0] * 1960))
    cand = hands(*([0.0] * 2000))
    c = compare(RATE, base, cand)
    assert -1.0 <= c.ci95[0] < -0.02 < c.ci95[1] < 0.0  # the normal spread of a 2% base
    est = estimate(RATE, base)
    assert 0.0 <= est.ci95[0] <= 0.02 <= est.ci95[1] <= 1.0
    every = compare(RATE, hands(*[0.0] * 12), hands(*[1.0] * 12))
    assert every.ci95[1] <= 1.0 and every.ci95[0] > 0


def _paired_rate_pairs(
    rng: random.Random, n: int, p_up: float, p_down: float
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """``n`` pairs of a 0/1 metric: the candidate gains the point with probability ``p_up``,
    loses it with ``p_down``, else both arms have the same coin."""
    base, cand = [], []
    for _ in range(n):
        u, coin = rng.random(), float(rng.random() < 0.5)
        b, c = (0.0, 1.0) if u < p_up else (1.0, 0.0) if u < p_up + p_down else (coin, coin)
        base.append((b, 1.0))
        cand.append((c, 1.0))
    return base, cand


@pytest.mark.parametrize("n", [4, 8])
def test_paired_rate_intervals_cover_the_truth_at_a_few_pairs(n: int) -> None:
    """At a handful of pairs most of them differ: the exact bound (fewer than 10 differing
    pairs) holds whatever their share, where the normal interval, cut at the observed base,
    covered +0.6 from 4 pairs 70% of the time."""
    rng = random.Random(5)
    for p_up, p_down in ((0.6, 0.0), (0.5, 0.2)):
        runs = 600
        covered = sum(
            lo <= p_up - p_down <= hi
            for lo, hi in (
                compare(RATE, *_paired_rate_pairs(rng, n, p_up, p_down)).ci95 for _ in range(runs)
            )
        )
        assert covered / runs >= 0.95, (n, p_up, p_down, covered / runs)


def test_differences_from_ten_differing_pairs_are_the_paired_t() -> None:
    """From 10 differing pairs on: diff ± t(n - 1) se and the paired t-test's p-value,
    exactly scipy's, at 12 pairs as at 500."""
    rng = random.Random(2)
    for n in (12, 500):
        base = [(float(rng.randint(0, 30)), 1.0) for _ in range(n)]
        cand = [(y + rng.choice((-3.0, 0.0, 1.0, 4.0)), 1.0) for y, _ in base]
        c = compare(MEAN, base, cand)
        d = [b[0] - a[0] for a, b in zip(base, cand, strict=True)]
        assert not c.exact and c.differing >= 10
        want = stats.t.interval(0.95, n - 1, loc=stats.tmean(d), scale=stats.sem(d))
        assert c.ci95 == pytest.approx(want, abs=1e-9)
        assert c.p == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, abs=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 20, 37])
def test_a_share_of_single_trials_has_the_clopper_pearson_interval_at_every_count(n: int) -> None:
    """One hand (or one match) per pair: the exact Clopper-Pearson interval whatever the
    count, 8 wins in 20 included ([19.1%, 63.9%], not [0%, 63.9%])."""
    for k in range(n + 1):
        est = estimate(RATE, hands(*([1.0] * k + [0.0] * (n - k))))
        low = 0.0 if k == 0 else stats.beta.ppf(0.025, k, n - k + 1)
        high = 1.0 if k == n else stats.beta.ppf(0.975, k + 1, n - k)
        assert est.ci95 == pytest.approx((low, high), abs=1e-9), (k, n)
        assert est.method == "clopper_pearson" and est.n == n and est.note == f"exact (n {n})"
    eight = estimate(RATE, hands(*([1.0] * 8 + [0.0] * 12)))
    assert [round(100 * v, 1) for v in eight.ci95] == [19.1, 63.9]


def _match_of_hands(rng: random.Random, size: int, p: float, rho: float) -> tuple[float, float]:
    """``(events, hands)`` of one match: each hand an event with the match's own chance,
    drawn around ``p`` with intra-match correlation ``rho`` (beta-binomial)."""
    q = rng.betavariate(p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho) if rho else p
    return float(sum(rng.random() < q for _ in range(size))), float(size)


def test_a_share_over_hands_of_matches_covers_at_its_effective_size() -> None:
    """A rate over the hands of 20 matches (5 to 18 hands each, hands of one match alike,
    from independent to correlated): the Clopper-Pearson interval at the effective number
    of hands covers the truth at least 93% of the time at every rate (94.6% at 2% and
    correlation 0.1 over 4,000 runs, the least; 95-99% elsewhere), and once an event is
    seen its lower end is above 0 (the rare-event bound [0, 24%] said nothing of 8 events
    in 237 hands)."""
    rng = random.Random(11)
    for p in (0.005, 0.02, 0.1, 0.4):
        for rho in (0.0, 0.1):  # intra-match correlation (beta-binomial)
            covered = runs = 0
            for _ in range(1000):
                values = [_match_of_hands(rng, rng.randint(5, 18), p, rho) for _ in range(20)]
                est = estimate(RATE, values)
                runs += 1
                covered += est.ci95[0] <= p <= est.ci95[1]
                if any(y for y, _ in values):
                    assert est.ci95[0] > 0.0, (p, rho, values)
                assert est.method == "clopper_pearson" and est.units == sum(x for _, x in values)
            assert covered / runs >= 0.93, (p, rho, covered / runs)


def test_a_share_whose_pairs_offset_is_known_better_than_from_independent_games() -> None:
    """The skill games: a deal played once with the stronger bot on each side, its luck
    favouring one side. Within the pair the two games offset each other, so the stronger
    bot's win rate is known better than from as many independent games: the interval is
    narrower than their Clopper-Pearson one (the effective number of games is above the
    games played), and still covers the truth."""
    rng = random.Random(3)
    lucky, unlucky = 0.9, 0.3  # the stronger bot's chance on the favoured side, and not
    truth, covered, narrower, runs = (lucky + unlucky) / 2, 0, 0, 1000
    for _ in range(runs):
        values = []
        for _ in range(50):
            first = rng.random() < 0.5  # the deal favours the side it plays first
            won = (rng.random() < (lucky if first else unlucky)) + (
                rng.random() < (unlucky if first else lucky)
            )
            values.append((float(won), 2.0))
        est = estimate(RATE, values)
        covered += est.ci95[0] <= truth <= est.ci95[1]
        low, high = clopper_pearson(sum(y for y, _ in values), 100)
        narrower += est.ci95[1] - est.ci95[0] < high - low and est.n > 100
    assert covered / runs >= 0.95 and narrower / runs >= 0.99, (covered, narrower)


def test_a_mean_has_the_t_interval_and_none_from_a_single_pair() -> None:
    values = [(float(v), 1.0) for v in (3, 9, 4, 7, 12, 5)]
    est = estimate(MEAN, values)
    ys = [v for v, _ in values]
    want = stats.t.interval(0.95, 5, loc=stats.tmean(ys), scale=stats.sem(ys))
    assert est.method == "t" and est.ci95 == pytest.approx(want, abs=1e-9)
    one = estimate(MEAN, [(7.0, 1.0)])
    assert one.value == 7.0 and all(math.isnan(v) for v in one.ci95) and one.note == "none (1 pair)"


def test_the_distributions_agree_with_scipy() -> None:
    """The incomplete beta, its inverse and Student's t, from 1 trial to 240,000."""
    for a, b in ((1, 1), (0.5, 3), (8, 13), (8.5, 12.5), (1, 240_000), (12_000, 228_000),
                 (100_000, 0.5)):  # fmt: skip
        for x in (1e-7, 1e-3, 0.05, 0.3, 0.5, 0.9, 0.999999):
            assert beta_cdf(x, a, b) == pytest.approx(stats.beta.cdf(x, a, b), abs=1e-9)
        for q in (0.025, 0.5, 0.975):
            assert beta_quantile(q, a, b) == pytest.approx(stats.beta.ppf(q, a, b), rel=1e-9)
    for df in (1, 2, 5, 19, 499, 19_999):
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-9)
        assert t_two_sided(2.1, df) == pytest.approx(2 * stats.t.sf(2.1, df), rel=1e-9)
    assert clopper_pearson(3.4, 231.7) == pytest.approx(
        (stats.beta.ppf(0.025, 3.4, 229.3), stats.beta.ppf(0.975, 4.4, 228.3)), rel=1e-9
    )


def test_holm_adjusted_p_values_call_what_holm_calls() -> None:
    rng = random.Random(3)
    for _ in range(200):
        ps = [rng.random() ** 3 for _ in range(rng.randint(1, 12))]
        assert [a <= 0.05 for a in holm_adjusted(ps)] == holm(ps)


def _match(termination: str, winner: int | None) -> MatchFacts:
    hand = HandFacts(0, False, winner, 0, 10, (), None, 20, 2, 0, 0, 0)
    return MatchFacts(termination, winner, None, (10, 0), (hand,))


def test_a_match_stopped_by_max_hands_is_won_by_nobody() -> None:
    """Its leader is reported, but it did not reach the target: side win rates, the first
    opener's and no-winner rates count finished matches; hand_limit_rate the rest."""
    rules = load_preset("jamaican-six-love")
    by_name = {m.name: m for m in metrics_for("match", [rules])}
    stopped, won = _match("hand_limit", 0), _match("normal", 0)
    for name in ("match_win_rate.side0", "first_opener_match_win_rate", "match_no_winner_rate"):
        assert by_name[name].pair_value(stopped) == (0.0, 1.0), name
    assert by_name["hand_limit_rate"].pair_value(stopped) == (1.0, 1.0)
    assert by_name["match_win_rate.side0"].pair_value(won) == (1.0, 1.0)


@pytest.mark.parametrize("kind", ["ab", "measure"])
def test_without_a_counted_pair_nothing_is_shown_as_measured(kind: str) -> None:
    """Every recorded pair had an arm forfeited (a bot was disqualified): no table title
    over an empty table, no "over 12 comparisons: none", no metric in the JSON; the
    verdict says that nothing was counted, and why."""
    rules = load_preset("block")
    other = load_preset("block", ["block_tie=opening_side"])
    arms = [rules, other] if kind == "ab" else [rules]
    forfeited = _match("forfeit", 0)
    facts = {0: [forfeited] * len(arms), 1: [forfeited] * len(arms)}
    result = analyze(kind, "hand", ["base", "candidate"][: len(arms)], arms, facts, None, 20)
    assert result.pairs == 0 and result.excluded == 2 and result.tested == 0
    assert analysis_tables(result) == []
    lines = verdict_lines(result)
    assert lines[-1] == (
        "no pair counted (every one of the 2 recorded ended by forfeit or cancellation): "
        "nothing to measure or compare"
    )
    assert not any("significant" in line or "rough" in line for line in lines), lines
    data = to_dict(result)
    assert data["metrics"] == {} and data["holm_family"] == 0 and data["pairs"] == 0


def test_sides_are_named_by_their_bots() -> None:
    rules = load_preset("block")
    result = analyze("ab", "hand", ["base", "candidate"], [rules, rules], {}, None, 10,
                     seat_bots=["hard", "random", "hard", "random"])  # fmt: skip
    assert [s.short for s in result.sides] == ["hard", "random"]
    metric = {m.name: m for m in result.metrics}["hand_win_rate.side1"]
    assert "random (seats 1, 3)" in metric.description


def run(args: list[str], code: int = 0) -> Any:
    res = cli_runner().invoke(main, ["experiment", *args])
    assert res.exit_code == code, (res.output, res.stderr)
    return res


def test_a_change_the_hand_unit_cannot_show_is_refused_before_the_run() -> None:
    res = run(["ab", "--base", "block", "--candidate-set", "target=50", "--hands", "10"], 2)
    assert "target cannot change anything there; use --unit match" in res.stderr
    with pytest.raises(ExperimentError, match="reply_resets"):
        build(kind="ab", bots=["random"], unit="hand", hands=5, matches=None, seed=1, arms=[
            make_arm("base", "jamaican-six-love", [], "b"),
            make_arm("candidate", "jamaican-six-love", ["reply_resets=false"], "c"),
        ])  # fmt: skip


def test_a_mixed_change_at_the_hand_unit_says_what_it_does_not_measure(tmp_path: Any) -> None:
    args = ["ab", "--base", "dominican", "--candidate-set", "target=100",
            "--candidate-set", "finish_bonus.capicua.effect=add:0", "--hands", "40",
            "--out", str(tmp_path / "x")]  # fmt: skip
    res = run(args)
    assert "note: not measured at --unit hand: target" in res.stderr  # before the run
    assert "not measured at --unit hand: target" in res.stdout
    assert "left out at --unit hand: defer_rate" in res.stdout
    data = json.loads(run(["show", str(tmp_path / "x"), "--json"]).stdout.splitlines()[-1])
    assert data["unmeasured_knobs"] == ["target"] and data["left_out_metrics"] == ["defer_rate"]
    assert "defer_rate" not in data["metrics"]


def test_the_table_names_sides_units_and_p_values(tmp_path: Any) -> None:
    out = str(tmp_path / "x")
    res = run(["ab", "--base", "block", "--candidate-set", "block_tie=opening_side",
               "--bots", "hard,random", "--bot-option", "hard.iterations=20", "--hands", "60",
               "--out", out, "--p-values"])  # fmt: skip
    table = res.stdout
    assert "hand_win_rate.side0 (hard)" in table and "hand_win_rate.side1 (random)" in table
    assert " pp " in table and " points " in table and " moves " in table
    assert "p (Holm)" in table
    data = json.loads(run(["show", out, "--json"]).stdout.splitlines()[-1])
    assert data["sides"] == [{"side": 0, "seats": [0, 2], "bots": ["hard"]},
                             {"side": 1, "seats": [1, 3], "bots": ["random"]}]  # fmt: skip
    block = data["metrics"]["block_rate"]
    assert (
        block["diff_unit"] == "pp" and data["metrics"]["points_per_hand"]["diff_unit"] == "points"
    )
    assert {"p_holm", "interval", "differing_pairs"} <= set(block)
    assert data["metrics"]["opener_side_advantage"]["diff_unit"] == "pp"


def test_measure_gives_one_ruleset_with_intervals(tmp_path: Any) -> None:
    out = str(tmp_path / "m")
    res = run(["measure", "--rules", "el-dominito", "--bots", "random", "--hands", "300",
               "--out", out, "--json"])  # fmt: skip
    data = json.loads(res.stdout.splitlines()[-1])
    assert data["kind"] == "measure" and data["pairs"] == 300 and data["complete"] is True
    block = data["metrics"]["block_rate"]
    assert block["ci95"][0] <= block["value"] <= block["ci95"][1]
    assert block["ci95"][0] >= 0.0 and block["ci95"][1] <= 1.0 and block["unit"] == "share"
    shown = run(["show", out]).stdout
    assert "rules: 300 hands" in shown and "block_rate" in shown and "95% interval" in shown
    res = run(["measure", "--rules", "el-dominito", "--bots", "random", "--hands", "300",
               "--out", out])  # fmt: skip
    assert "rules: 300 hands" in res.stdout  # resumed: complete, nothing played again


def test_the_issues_measure_gives_the_exact_interval_of_match_wins(tmp_path: Any) -> None:
    """``experiment measure --rules dominican --bots medium --unit match --matches 20``: a
    side's match win rate is k of 20 matches, with its Clopper-Pearson interval (8 of 20
    showed [0.00%, 63.95%]); the table says what each interval rests on."""
    args = ["measure", "--rules", "dominican", "--bots", "medium", "--unit", "match",
            "--matches", "20", "--out", str(tmp_path / "m")]  # fmt: skip
    data = json.loads(run([*args, "--json"]).stdout.splitlines()[-1])
    for side in (0, 1):
        metric = data["metrics"][f"match_win_rate.side{side}"]
        k = round(20 * metric["value"])
        low = 0.0 if k == 0 else stats.beta.ppf(0.025, k, 21 - k)
        high = 1.0 if k == 20 else stats.beta.ppf(0.975, k + 1, 20 - k)
        assert metric["ci95"] == pytest.approx([low, high], abs=1e-6), (side, k)
        assert metric["interval"] == "clopper_pearson" and metric["n"] == 20
    shown = run(["show", str(tmp_path / "m")]).stdout
    assert re.search(r"match_win_rate\.side0 .*│ exact \(n 20\)", shown), shown
    assert "fewer than 10 non-zero pairs" not in shown


# -- skill against luck -----------------------------------------------------------------------


def test_the_engine_counts_the_turns_with_a_real_choice() -> None:
    """Every turn the engine offered more than one legal action in the play phase, counted
    independently while playing, equals what the hand summaries say."""
    from capicua.engine.game import Game, Phase

    for preset, seed in (("block", 3), ("cuban", 5), ("iq-1v1", 8), ("draw", 2)):
        state = Game.from_preset(preset).new_match(seed)
        rng = random.Random(seed)
        counted: dict[int, list[int]] = {}
        while not state.is_terminal():
            legal = state.legal_actions()
            if len(legal) > 1 and state.phase is Phase.PLAY:
                tally = counted.setdefault(state.hand, [0, 0])
                tally[0] += 1
                tally[1] += len(legal)
            state.apply(legal[rng.randrange(len(legal))])
        for hand in range(state.log.hands_dealt):
            s = state.log.summary(hand)
            assert s is not None
            assert [s.choices, s.options] == counted.get(hand, [0, 0]), (preset, hand)


def test_lead_changes_follow_the_scores() -> None:
    def hand(winner: int | None, points: int, reset: str | None = None) -> HandFacts:
        return HandFacts(0, False, winner, 0, points, (), reset, 20, 0, 0, 0, 0)

    lead = {m.name: m for m in metrics_for("match", [load_preset("block")], skill=[("a", "b")])}
    metric = lead["lead_changes_per_match"]
    # 0 leads, 1 takes the lead, 1 extends, 0 ties (nobody leads), 0 leads: two changes
    hands_ = (hand(0, 10), hand(1, 15), hand(1, 5), hand(0, 10), hand(0, 3))
    assert metric.pair_value(MatchFacts("normal", 0, None, (23, 20), hands_)) == (2.0, 1.0)
    reset = (hand(0, 10), hand(1, 5, "reply"), hand(1, 4))  # back to 0, then 1 leads
    assert metric.pair_value(MatchFacts("normal", 1, None, (0, 4), reset)) == (1.0, 1.0)


def test_skill_games_rotate_the_stronger_bot_through_the_sides(tmp_path: Any) -> None:
    """The skill metric is the stronger bot's wins over its games on each pair's deal, one
    per side: recomputed here by playing those games one by one."""
    from capicua.arena.experiment.play import play_match
    from capicua.arena.schedule import deal_seed
    from capicua.engine.game import Game

    out = str(tmp_path / "s")
    args = ["measure", "--rules", "iq-1v1", "--bots", "random", "--hands", "40",
            "--skill", "--skill-bots", "easy:random", "--out", out, "--json"]  # fmt: skip
    data = json.loads(run(args).stdout.splitlines()[-1])
    got = data["metrics"]["hand_win_rate.easy_vs_random"]["value"]
    exp = build(kind="measure", arms=[make_arm("rules", "iq-1v1", [], "r")],
                bots=["random"], unit="hand", hands=40, matches=None, seed=1,
                skill=[("easy", "random")])  # fmt: skip
    game = Game.from_preset("iq-1v1", ["max_hands=1"])
    won = hands_played = 0
    for pair in range(40):
        for side, seats in enumerate((("easy", "random"), ("random", "easy"))):
            state = play_match(exp, game, deal_seed(1, pair), seats)
            summary = state.log.summary(0)
            assert summary is not None
            won += summary.winner == side
            hands_played += 1
    assert got == pytest.approx(won / hands_played, abs=1e-6)
    assert 0.5 < got < 1.0  # easy beats random, but not every deal
    assert {"choice_rate", "actions_per_choice"} <= set(data["metrics"])


def test_skill_takes_any_bot_specs_over_the_protocol(tmp_path: Any) -> None:
    """``STRONGER vs WEAKER`` takes any bot specs: the skill games are then arena matches on
    an embedded server, the stronger bot (a real bot process) on each side in turn on every
    pair's deal; the metric is recomputed here from the stored matches."""
    from capicua.arena.store import Results

    out = tmp_path / "s"
    strong = "python:capicua.bots.easy:EasyBot"
    args = ["measure", "--rules", "iq-1v1", "--bots", "random", "--hands", "8", "--skill",
            "--skill-bots", f"{strong} vs random", "--out", str(out), "--json"]  # fmt: skip
    data = json.loads(run(args).stdout.splitlines()[-1])
    name = "python-capicua.bots.easy-EasyBot"
    got = data["metrics"][f"hand_win_rate.{name}_vs_random"]["value"]
    results = Results.open_existing(out)
    try:
        rows = {row.key: row for row in results.matches()}
    finally:
        results.close()
    assert len(rows) == 8 * 3  # per pair: the arm's own game, then one per side
    won = 0
    for pair in range(8):
        main = rows[f"a0-p{pair:07d}"]
        assert main.seats == ("random", "random")
        for side in (0, 1):
            game = rows[f"a{1 + side}-p{pair:07d}"]
            assert game.seed == main.seed  # the pair's deal
            assert game.seats[side] == name and game.seats[1 - side] == "random"
            assert game.termination == "hand_limit" and game.hands == 1  # one hand: the unit
            won += game.winner_side == side
    assert got == pytest.approx(won / 16, abs=1e-6)


def test_skill_pairings_are_checked_before_anything_is_played() -> None:
    for bad in ("hard", "hard:hard", "hard:wizard", "hard:random,hard:random",
                "random vs random", "python:mybot vs random", "hard vs"):  # fmt: skip
        res = run(["measure", "--rules", "block", "--skill", "--skill-bots", bad], 2)
        assert "--skill-bots" in res.stderr and len(res.stderr.strip().splitlines()) == 1, bad
    res = run(["measure", "--rules", "block", "--skill", "--skill-bots", "remote:x vs random"], 2)
    assert "a remote: bot needs --server" in res.stderr


# -- what the run prints -----------------------------------------------------------------------


def test_piped_progress_says_elapsed_and_time_left() -> None:
    """Off a terminal a line every few seconds: done, total, share, elapsed and an estimate
    of the time left from this run's own pace (pairs kept from an earlier run excluded)."""
    import io

    from rich.console import Console

    from capicua.arena.experiment.cli import ConsoleProgress

    out = io.StringIO()
    progress = ConsoleProgress(Console(file=out, width=200), [("header line", "")], "pairs")
    progress.begin(5000, 1000)
    progress.done = 2200  # 1,200 pairs in 60 s: 20 a second, 2,800 left: 2m 20s
    assert progress.line(60.0) == "2,200/5,000 pairs (44%), 1m 00s elapsed, about 2m 20s left"
    progress.done = 5000
    assert progress.line(700.0) == "5,000/5,000 pairs (100%), 11m 40s elapsed"
    printed = out.getvalue()
    assert printed.startswith("header line\nresuming: 1000 of 5000 pairs already recorded")


def test_a_refused_directory_prints_the_error_alone(tmp_path: Any) -> None:
    """The header ("dominican ab: 2 arms, ...; results in DIR") is printed only once the
    directory is accepted: a directory holding another experiment gets the error alone."""
    out = str(tmp_path / "x")
    run(["ab", "--base", "block", "--candidate-set", "block_tie=opening_side", "--hands", "5",
         "--out", out, "--quiet"])  # fmt: skip
    res = run(["ab", "--base", "draw", "--candidate-set", "block_tie=opening_side",
               "--hands", "5", "--out", out], 2)  # fmt: skip
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "holds a different experiment" in lines[0], res.stderr


def test_a_toml_file_measures_with_skill(tmp_path: Any) -> None:
    file = tmp_path / "m.toml"
    file.write_text(
        'unit = "hand"\nhands = 30\nbots = "random"\nskill = ["easy:random"]\n'
        '[measure]\npreset = "iq-1v1"\noverrides = ["stock=draw"]\n'
    )
    data = json.loads(run(["run", str(file), "--out", str(tmp_path / "r"), "--json"]).stdout
                      .splitlines()[-1])  # fmt: skip
    assert data["kind"] == "measure" and data["arms"] == ["rules"]
    assert "hand_win_rate.easy_vs_random" in data["metrics"]
    file.write_text('[measure]\npreset = "block"\n[sweep]\npreset = "block"\n')
    res = run(["run", str(file)], 2)
    assert "give one of [base] and [candidate], [sweep] or [measure]" in res.stderr
    file.write_text('skill = 3\n[measure]\npreset = "block"\n')
    assert "skill" in run(["run", str(file)], 2).stderr
