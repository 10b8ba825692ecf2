"""From stored facts to the experiment's answer: every metric of every arm, the paired
differences against the base with their intervals, and the significant ones named.

A pure function of the results (:func:`analyze`), like the arena's standings: the same
results always give the same numbers, and ``capicua experiment show DIR`` recomputes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from rich.table import Table

from capicua.engine.rules import NextOpener, Ruleset, load_preset

from ..facts import MatchFacts
from ..output import disqualified_lines
from ..store import DB_NAME, EXPERIMENT, Results, holds_other
from . import legacy
from .config import (
    PLURAL,
    all_pairings,
    skill_names,
    skill_plays,
    trace_names,
    trace_rungs,
    unmeasured_knobs,
)
from .legacy import StoreError
from .metrics import (
    LATER_HANDS_ONLY,
    MIN_PAIRS,
    STUDENT_T,
    Comparison,
    Estimate,
    Metric,
    Side,
    compare,
    estimate,
    holm,
    holm_adjusted,
    metrics_for,
    pairing_name,
    sides_of,
)

#: The win rates a skill trace shows for each rung (the second at the match unit only).
TRACE_MEASURES = ("hand_win_rate", "match_win_rate")


@dataclass(frozen=True)
class Analysis:
    """An experiment's comparisons: ``rows[c][m]`` is metric ``m`` of candidate ``c``."""

    kind: str
    unit: str
    knob: str | None
    labels: tuple[str, ...]  # every arm, the base first
    pairs: int  # pairs counted
    excluded: int  # pairs left out: an arm did not end by the rules
    metrics: tuple[Metric, ...]
    rows: tuple[tuple[Comparison, ...], ...]
    planned: int  # pairs the experiment plays in full
    #: bot -> why it was disqualified: the experiment cannot finish (over the protocol)
    disqualified: Mapping[str, str] = field(default_factory=dict)
    sides: tuple[Side, ...] = ()  # each side's seats and bots
    #: changed knobs the unit cannot measure (at the hand unit, those acting after hand 1)
    unmeasured: tuple[str, ...] = ()
    #: metrics left out because the unit cannot show them (defer_rate at the hand unit)
    left_out: tuple[str, ...] = ()
    #: ``estimates[arm][m]``: metric ``m`` of each arm on its own, with its interval
    estimates: tuple[tuple[Estimate, ...], ...] = ()
    #: the levels of the skill trace by their bots' names, weakest first (none: no trace)
    trace: tuple[str, ...] = ()

    @property
    def recorded(self) -> int:
        """Pairs with every arm recorded, counted or left out."""
        return self.pairs + self.excluded

    @property
    def complete(self) -> bool:
        """Whether every planned pair is recorded: an interrupted run (or one that stopped
        on a failure) is not, and its numbers are those of the pairs played so far."""
        return self.recorded >= self.planned

    @property
    def incomplete_text(self) -> str:
        """ "incomplete: 750 of 5,000 pairs recorded", or "" for a complete result."""
        if self.complete:
            return ""
        return f"incomplete: {self.recorded:,} of {self.planned:,} pairs recorded"

    def significant(self) -> list[tuple[str, Comparison]]:
        """(candidate label, comparison) of every significant difference."""
        return [
            (self.labels[c + 1], comp)
            for c, row in enumerate(self.rows)
            for comp in row
            if comp.significant
        ]

    @property
    def tested(self) -> int:
        """Comparisons in Holm's family (every one between different rules; none without a
        counted pair, where nothing was compared)."""
        if not self.pairs:
            return 0
        return sum(1 for row in self.rows for comp in row if not comp.same_rules)

    @property
    def rough(self) -> bool:
        """Whether a t interval rests on fewer than :data:`MIN_PAIRS` pairs (an exact one
        holds at any number)."""
        if not 0 < self.pairs < MIN_PAIRS:
            return False
        comps = [c for row in self.rows for c in row if not (c.exact or c.same_rules)]
        # an arm's own values are shown by a measure, and for the skill metrics
        means = [
            e
            for arm in self.estimates
            for m, e in zip(self.metrics, arm, strict=True)
            if e.method == STUDENT_T and (self.kind == "measure" or m.skill)
        ]
        return bool(comps or means)

    @property
    def even_share(self) -> float:
        """What a bot wins when it is no stronger than its opponents, ties aside: one
        side's share (50% one against one)."""
        return 1.0 / max(1, len(self.sides))

    def rungs(self) -> list[Rung]:
        """The skill trace's rungs, the weakest first, each with its win rates' metrics."""
        index = {m.name: i for i, m in enumerate(self.metrics)}
        out = []
        for strong, weak in trace_rungs(self.trace):
            names = [pairing_name(measure, strong, weak) for measure in TRACE_MEASURES]
            out.append(Rung(strong, weak, tuple(index[n] for n in names if n in index)))
        return out

    def in_trace(self) -> set[int]:
        """The metrics the skill trace shows (its own table and chart, not the skill one)."""
        return {i for rung in self.rungs() for i in rung.metrics}


@dataclass(frozen=True)
class Rung:
    """One rung of a skill trace: a level against the level below it."""

    strong: str
    weak: str
    metrics: tuple[int, ...]  # into Analysis.metrics: its hand, then match, win rate


def analyze(
    kind: str,
    unit: str,
    labels: Sequence[str],
    rulesets: Sequence[Ruleset],
    facts: Mapping[int, Sequence[MatchFacts]],
    knob: str | None,
    planned: int,
    disqualified: Mapping[str, str] | None = None,
    seat_bots: Sequence[str] | None = None,
    skill: Sequence[tuple[str, str]] = (),
    trace: Sequence[str] = (),
) -> Analysis:
    """Compare every candidate arm with the base over the pairs of ``facts`` that count
    (``planned``: the pairs the experiment plays in full, to tell a partial result;
    ``disqualified``: the bots it disqualified, and why; ``seat_bots``: every seat's bot,
    to name the sides; ``skill``: every (stronger, weaker) pairing played, whose games
    follow the arms' own in ``facts``; ``trace``: the skill trace's levels, weakest first,
    its rungs among those pairings)."""
    counted = [arms for _, arms in sorted(facts.items()) if all(f.counted for f in arms)]
    metrics = tuple(metrics_for(unit, rulesets, seat_bots, skill))
    sides = rulesets[0].num_sides

    def values(m: Metric, arm: int) -> list[tuple[float, float]]:
        """Metric ``m`` of ``arm`` in every counted pair (a skill metric: from the arm's
        skill games of the metric's pairing, one per side)."""
        if m.games is None:
            return [m.pair_value(arms[arm]) for arms in counted]
        first = len(labels) + (arm * len(skill) + (m.pairing or 0)) * sides
        return [m.games(arms[first : first + sides]) for arms in counted]

    rows: list[list[Comparison]] = []
    for c in range(1, len(labels)):
        same = rulesets[c].knobs() == rulesets[0].knobs()
        row = []
        for m in metrics:
            comp = compare(m, values(m, 0), values(m, c)) if counted else _empty(m.name)
            if same:  # an A/A experiment: the difference is 0 by construction
                comp = replace(comp, ci95=(0.0, 0.0), p=1.0, same_rules=True)
            row.append(comp)
        rows.append(row)
    estimates = tuple(
        tuple(estimate(m, values(m, arm)) for m in metrics) for arm in range(len(labels))
    )
    # Holm over every comparison of different rules, a metric in which no pair differed
    # included (its effect is bounded, not known to be 0).
    family = [
        (c, i) for c, row in enumerate(rows) for i, comp in enumerate(row) if not comp.same_rules
    ]
    ps = [rows[c][i].p for c, i in family]
    for (c, i), flag, adjusted in zip(family, holm(ps), holm_adjusted(ps), strict=True):
        comp = rows[c][i]
        # an exact bound's p-value is the sign test's: a call needs the bound to agree
        agrees = not comp.exact or comp.ci95[0] > 0 or comp.ci95[1] < 0
        rows[c][i] = replace(comp, significant=flag and agrees, p_holm=adjusted)
    return Analysis(
        kind=kind,
        unit=unit,
        knob=knob,
        labels=tuple(labels),
        pairs=len(counted),
        excluded=len(facts) - len(counted),
        metrics=metrics,
        rows=tuple(tuple(r) for r in rows),
        planned=planned,
        disqualified=dict(disqualified or {}),
        sides=tuple(sides_of(rulesets[0], seat_bots)),
        unmeasured=tuple(unmeasured_knobs(unit, rulesets)),
        estimates=estimates,
        left_out=tuple(sorted(LATER_HANDS_ONLY)) if unit == "hand" and _defers(rulesets) else (),
        trace=tuple(trace),
    )


def _defers(rulesets: Sequence[Ruleset]) -> bool:
    """Whether an arm lets a winning side defer the next opening to a partner."""
    return any(r.next_opener is NextOpener.WINNING_SIDE and r.num_sides < r.seats for r in rulesets)


@dataclass(frozen=True)
class Stored:
    """An experiment directory read back: its configuration, facts and analysis."""

    config: dict[str, Any]
    info: dict[str, str]
    facts: dict[int, list[MatchFacts]]
    analysis: Analysis


def load(directory: Path) -> Stored:
    """Read and analyse the experiment stored in ``directory`` (raises StoreError)."""
    stored = _read(directory)
    config = stored.config
    arms = config["arms"]
    rulesets = [load_preset(a["preset"], a["overrides"]) for a in arms]
    # the pairings played, in the order of their games: --skill-bots', then the trace's
    # (results written before the trace have only the first)
    levels = list(config.get("skill_trace", []))
    pairings = all_pairings([(s, w) for s, w in config.get("skill", [])], levels)
    try:
        facts = stored.facts(len(skill_plays(len(arms), pairings, rulesets[0])) + len(arms))
        disqualified = stored.disqualified()
    finally:
        stored.close()
    labels = [a["label"] for a in arms]
    seat_bots = [spec.removeprefix("builtin:") for spec in config["seats"]]
    result = analyze(
        config["kind"], config["unit"], labels, rulesets, facts, config["knob"], config["pairs"],
        disqualified, seat_bots, skill_names(pairings), trace_names(pairings, levels),
    )  # fmt: skip
    return Stored(config, stored.info, facts, result)


class _Reader(Protocol):
    """An experiment directory open to read: the one results store, or the earlier layout
    (:class:`~capicua.arena.experiment.legacy.OldResults`)."""

    config: dict[str, Any]
    info: dict[str, str]

    def facts(self, games: int) -> dict[int, list[MatchFacts]]: ...
    def disqualified(self) -> dict[str, str]: ...
    def close(self) -> None: ...


class _Results:
    """An experiment in the one results store, open to read."""

    def __init__(self, directory: Path) -> None:
        if not (directory / DB_NAME).is_file():
            raise StoreError(f"{directory}: no experiment results here ({DB_NAME} is missing)")
        self.results = Results.open_existing(directory)
        try:
            kind = self.results.study()
            if kind != EXPERIMENT:
                raise StoreError(holds_other(directory, kind))
            row = self.results.tournament()
        except BaseException:
            self.results.close()
            raise
        self.config: dict[str, Any] = row["config"]
        self.info = {k: row[k] for k in ("name", "created", "capicua_version")}

    def facts(self, games: int) -> dict[int, list[MatchFacts]]:
        return self.results.facts(games)

    def disqualified(self) -> dict[str, str]:
        return self.results.disqualified()

    def close(self) -> None:
        self.results.close()


def _read(directory: Path) -> _Reader:
    if legacy.holds(directory):
        return legacy.OldResults(directory)
    try:
        return _Results(directory)
    except FileNotFoundError as e:  # nothing recorded yet
        raise StoreError(f"{directory}: no experiment results here ({e})") from None


def _empty(name: str) -> Comparison:
    return Comparison(name, 0.0, 0.0, 0.0, 0.0, (0.0, 0.0), 1.0)


# -- output -----------------------------------------------------------------------------------


def _r(x: float) -> float:
    return round(x, 6)


def _ci(ci: tuple[float, float]) -> list[float | None]:
    """An interval for the JSON: null ends where there is none (a mean of one pair)."""
    return [_r(v) if math.isfinite(v) else None for v in ci]


def _comparison_json(comp: Comparison) -> dict[str, Any]:
    return {
        "candidate": _r(comp.candidate),
        "diff": _r(comp.diff),
        "ci95": _ci(comp.ci95),
        "interval": "same_rules" if comp.same_rules else ("exact" if comp.exact else "t"),
        "differing_pairs": comp.differing,
        "p": _r(comp.p),
        "p_holm": _r(comp.p_holm),
        "significant": comp.significant,
    }


def to_dict(a: Analysis) -> dict[str, Any]:
    """The machine-readable result (``--json``): for an A/B experiment,
    ``metrics[name] = {base, diff_unit, candidate, diff, ci95, interval, differing_pairs, p,
    p_holm, significant}``; for a sweep, ``metrics[name] = {base, diff_unit, by_value:
    {label: {candidate, diff, ...}}}``. ``complete`` is false while fewer than
    ``planned_pairs`` pairs are recorded; ``sides`` names each side's seats and bots; with
    a skill trace, ``skill_trace`` has its levels and, per rung, every arm's win rates with
    their intervals."""
    metrics: dict[str, Any] = {}
    # without a counted pair nothing was measured: no metric has a value to give
    for i, m in enumerate(a.metrics if a.pairs else ()):
        if a.kind == "measure":
            metrics[m.name] = _estimate_json(m, a.estimates[0][i])
            continue
        head = {"base": _r(a.rows[0][i].base if a.rows else 0.0), "diff_unit": m.diff_unit}
        if a.kind == "ab":
            metrics[m.name] = head | _comparison_json(a.rows[0][i])
        else:
            metrics[m.name] = head | {
                "by_value": {
                    a.labels[c + 1]: _comparison_json(row[i]) for c, row in enumerate(a.rows)
                },
            }
    out: dict[str, Any] = {
        "kind": a.kind,
        "unit": a.unit,
        "complete": a.complete,
        "disqualified": dict(a.disqualified),
        "pairs": a.pairs,
        "excluded_pairs": a.excluded,
        "planned_pairs": a.planned,
        "arms": list(a.labels),
        "sides": [
            {"side": i, "seats": list(side.seats), "bots": list(side.bots)}
            for i, side in enumerate(a.sides)
        ],
    }
    out["unmeasured_knobs"] = list(a.unmeasured)
    out["left_out_metrics"] = list(a.left_out)
    if a.knob is not None:
        out["knob"] = a.knob
        out["values"] = list(a.labels)
    out["metrics"] = metrics
    if a.trace and a.pairs:
        out["skill_trace"] = _trace_json(a)
    out["significant"] = [
        {"arm": label, "metric": comp.metric, "diff": _r(comp.diff)}
        for label, comp in a.significant()
    ]
    out["holm_family"] = a.tested
    return out


def _estimate_json(m: Metric, est: Estimate) -> dict[str, Any]:
    """An arm's own value with its interval: ``interval`` says how it was found
    (``clopper_pearson``, ``t``, ``bound``, or null: none), ``n`` what it rests on."""
    return {
        "value": _r(est.value),
        "ci95": _ci(est.ci95),
        "interval": est.method or None,
        "n": _r(est.n),
        "unit": "share" if m.rate else m.unit,
    }


def _trace_json(a: Analysis) -> dict[str, Any]:
    """The skill trace: per rung (weakest first) and win rate, its metric's name and every
    arm's value with its interval (the differences are under ``metrics``)."""
    rungs = []
    for rung in a.rungs():
        item: dict[str, Any] = {"strong": rung.strong, "weak": rung.weak}
        for i in rung.metrics:
            m = a.metrics[i]
            item[m.name.partition(".")[0]] = {
                "metric": m.name,
                "by_arm": {
                    label: _estimate_json(m, a.estimates[arm][i])
                    for arm, label in enumerate(a.labels)
                },
            }
        rungs.append(item)
    return {"levels": list(a.trace), "even_share": _r(a.even_share), "rungs": rungs}


def to_json(a: Analysis) -> str:
    return json.dumps(to_dict(a), separators=(",", ":"))


def value_text(m: Metric, x: float) -> str:
    if not math.isfinite(x):
        return "n/a"
    return f"{100 * x:.2f}%" if m.rate else f"{x:.3f}"


def diff_text(m: Metric, x: float) -> str:
    return f"{100 * x:+.2f}" if m.rate else f"{x:+.3f}"


def metric_label(a: Analysis, m: Metric) -> str:
    """The metric's name, a per-side one with its bots: ``match_win_rate.side0 (hard)``."""
    stem, _, last = m.name.rpartition(".side")
    if stem and last.isdigit() and int(last) < len(a.sides):
        side = a.sides[int(last)]
        # the same bots on every side tell the sides apart by nothing: name the seats
        alike = len({other.bots for other in a.sides}) == 1
        return f"{m.name} ({side.text if alike else side.short})"
    return m.name


def flag(comp: Comparison) -> str:
    """A comparison's note in the tables (and the report): significant, same rules, no
    pair differed, few pairs differ (an exact bound), or nothing."""
    if comp.significant:
        return "significant"
    if comp.same_rules:
        return "same rules"
    if comp.identical:
        return "no pair differed"
    return "few pairs differ" if comp.exact else ""


def _hidden(comps: Sequence[Comparison], show_all: bool) -> bool:
    """A metric that is 0 in every pair of every arm (drawing without a stock) is left out
    of the tables unless ``--all``."""
    return not show_all and all(c.base == 0.0 and c.candidate == 0.0 for c in comps)


def table(
    a: Analysis, candidate: int = 0, *, show_all: bool = False, p_values: bool = False
) -> Table:
    """Base against one candidate, a metric per row: rates in %, their differences in
    percentage points (pp), means and their differences in their own units. Metrics that
    are 0 in every pair are left out unless ``show_all``; ``p_values`` adds the raw and
    the Holm-adjusted p-values."""
    label = a.labels[candidate + 1]
    t = Table(
        title=f"{a.labels[0]} vs {label}: {a.pairs} pairs of {PLURAL[a.unit]}{_partial(a)}",
        title_justify="left",
    )
    heads = [("metric", "left"), (a.labels[0], "right"), (label, "right"), ("diff", "right"),
             ("95% interval", "right")]  # fmt: skip
    if p_values:
        heads += [("p", "right"), ("p (Holm)", "right")]
    for head, justify in [*heads, ("", "left")]:
        t.add_column(head, justify=justify)  # type: ignore[arg-type]
    for i, m in enumerate(a.metrics):
        comp = a.rows[candidate][i]
        if m.skill or _hidden([comp], show_all):
            continue
        lo, hi = comp.ci95
        cells = [
            metric_label(a, m),
            value_text(m, comp.base),
            value_text(m, comp.candidate),
            f"{diff_text(m, comp.diff)} {m.diff_unit}",
            f"[{diff_text(m, lo)}, {diff_text(m, hi)}]",
        ]
        if p_values:
            cells += [_p(comp.p), "" if comp.same_rules else _p(comp.p_holm)]
        t.add_row(*cells, flag(comp))
    return t


def tables(a: Analysis, *, show_all: bool = False, p_values: bool = False) -> list[Table]:
    """The tables of a result, as ``show`` prints them: the comparison (a sweep's, an A/B's
    or a measure's) and the skill table; none without a counted pair (a title over an empty
    table would say nothing: the verdict says why)."""
    if not a.pairs:
        return []
    if a.kind == "sweep":
        out = [sweep_table(a, show_all=show_all, p_values=p_values)]
    elif a.kind == "measure":
        out = [measure_table(a, show_all=show_all)]
    else:
        out = [table(a, show_all=show_all, p_values=p_values)]
    out += [extra for extra in (skill_table(a), trace_table(a)) if extra is not None]
    return out


def _p(p: float) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _partial(a: Analysis) -> str:
    return f" ({text})" if (text := a.incomplete_text) else ""


def verdict_lines(a: Analysis) -> list[str]:
    """The plain-words summary under the tables (an incomplete result says so first)."""
    lines = disqualified_lines(a.disqualified)
    if a.disqualified:
        lines.append(
            "the experiment cannot finish: a bot was disqualified, so the pairs it had not "
            "played are missing (a rerun of this directory stops here too; fix the bot and "
            "start again with another --out)"
        )
    elif not a.complete:
        lines.append(
            f"{a.incomplete_text}: these numbers are those of the pairs played so far "
            "(running the experiment again resumes it)"
        )
    if a.rough:
        lines.append(f"only {a.pairs} pairs: the t intervals are rough below {MIN_PAIRS}")
    if a.excluded:
        lines.append(f"{a.excluded} pairs left out: an arm ended by forfeit or cancellation")
    if not a.pairs:
        return [*lines, _nothing_counted(a)]
    if a.unmeasured:
        lines.append(
            f"not measured at --unit hand: {', '.join(a.unmeasured)} (acting only after a "
            "match's first hand; --unit match measures them)"
        )
    if a.left_out:
        lines.append(
            f"left out at --unit hand: {', '.join(a.left_out)} (only after a won hand; "
            "--unit match measures it)"
        )
    if a.kind == "measure":
        return lines
    lines += _no_pair_differed(a)
    sig = a.significant()
    head = (
        f"significant at 5% after Holm's correction over {a.tested} comparisons"
        if a.tested
        else "the arms are the same rules: every difference is 0"
    )
    if not a.tested:
        return [*lines, head]
    if not sig:
        return [*lines, f"{head}: none"]
    by_name = {m.name: m for m in a.metrics}
    items = []
    for label, comp in sig:
        m = by_name[comp.metric]
        where = f"{label}: " if a.kind == "sweep" else ""
        lo, hi = (diff_text(m, v) for v in comp.ci95)
        items.append(f"{where}{comp.metric} {diff_text(m, comp.diff)} [{lo}, {hi}]")
    return [*lines, f"{head}: " + "; ".join(items)]


def _nothing_counted(a: Analysis) -> str:
    """The verdict of a result without a counted pair: nothing was measured."""
    if a.excluded:
        why = f"every one of the {a.excluded:,} recorded ended by forfeit or cancellation"
    else:
        why = "none is recorded yet"
    return f"no pair counted ({why}): nothing to measure or compare"


def measure_rows(a: Analysis, *, show_all: bool = False) -> list[tuple[Metric, Estimate]]:
    """The metrics a measure's table shows, with their estimates: every one but the skill
    metrics and, unless ``show_all``, those that are 0 in every unit."""
    return [
        (m, est)
        for m, est in zip(a.metrics, a.estimates[0], strict=True)
        if not m.skill and (show_all or est.ci95 != (0.0, 0.0))
    ]


def interval_text(m: Metric, est: Estimate) -> str:
    """``[19.12%, 63.95%]``, ``n/a`` where no interval can be given."""
    lo, hi = est.ci95
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "n/a"
    return f"[{value_text(m, lo)}, {value_text(m, hi)}]"


def measure_table(a: Analysis, *, show_all: bool = False) -> Table:
    """One ruleset on its own: every metric with its 95% interval and what that interval
    rests on (:attr:`Estimate.note`)."""
    t = Table(title=f"{a.labels[0]}: {a.pairs} {PLURAL[a.unit]}{_partial(a)}", title_justify="left")
    for head, justify in (("metric", "left"), ("value", "right"), ("95% interval", "right"),
                          ("unit", "left"), ("interval", "left")):  # fmt: skip
        t.add_column(head, justify=justify)  # type: ignore[arg-type]
    for m, est in measure_rows(a, show_all=show_all):
        t.add_row(metric_label(a, m), value_text(m, est.value), interval_text(m, est),
                  "%" if m.rate else m.unit, est.note)  # fmt: skip
    return t


def estimate_text(m: Metric, est: Estimate) -> str:
    """``63.00% [61.87%, 64.10%]``: an arm's own value with its 95% interval."""
    low, high = (value_text(m, v) for v in est.ci95)
    return f"{value_text(m, est.value)} [{low}, {high}]"


def _arm_cell(a: Analysis, arm: int, i: int) -> str:
    """Metric ``i`` of one arm with its interval; under a candidate's, its difference from
    the base (``*``: significant)."""
    m = a.metrics[i]
    text = estimate_text(m, a.estimates[arm][i])
    if arm:
        c = a.rows[arm - 1][i]
        lo, hi = (diff_text(m, v) for v in c.ci95)
        mark = "*" if c.significant else ""
        text += f"\n{diff_text(m, c.diff)}{mark} {m.diff_unit} [{lo}, {hi}]"
    return text


def _arms_caption(a: Analysis) -> str:
    return (
        "each value with its 95% interval; under a candidate its difference from "
        f"{a.labels[0]}, * significant after Holm's correction"
        if len(a.labels) > 1
        else "each value with its 95% interval"
    )


def _count_text(a: Analysis) -> str:
    """``500 pairs of hands``; ``500 hands`` when one ruleset is measured on its own."""
    if a.kind == "measure":
        return f"{a.pairs} {PLURAL[a.unit]}{_partial(a)}"
    return f"{a.pairs} pairs of {PLURAL[a.unit]}{_partial(a)}"


def skill_table(a: Analysis) -> Table | None:
    """What ``--skill`` measured, but the trace's rungs (:func:`trace_table`): every arm's
    value with its 95% interval, and for each candidate its difference from the base
    (None without ``--skill``)."""
    shown = a.in_trace()
    skill = [i for i, m in enumerate(a.metrics) if m.skill and i not in shown]
    if not skill:
        return None
    t = Table(title=f"skill against luck: {_count_text(a)}", title_justify="left")
    t.add_column("metric")
    for label in a.labels:
        t.add_column(label, justify="right")
    for i in skill:
        t.add_row(a.metrics[i].name, *(_arm_cell(a, arm, i) for arm in range(len(a.labels))))
    t.caption = f"({_arms_caption(a)})"
    return t


def rung_text(rung: Rung, m: Metric) -> str:
    """``easy vs random: hands won`` (or ``matches won``): what a trace's row shows."""
    won = "hands" if m.name.startswith("hand_") else "matches"
    return f"{rung.strong} vs {rung.weak}: {won} won"


def trace_table(a: Analysis) -> Table | None:
    """The skill trace: a row per rung (each level against the level below, the weakest
    first) and win rate, a column per arm (None without a trace)."""
    if not a.trace:
        return None
    t = Table(title=f"skill trace, each level against the level below: {_count_text(a)}",
              title_justify="left")  # fmt: skip
    t.add_column("rung")
    for label in a.labels:
        t.add_column(label, justify="right")
    for rung in a.rungs():
        for i in rung.metrics:
            cells = (_arm_cell(a, arm, i) for arm in range(len(a.labels)))
            t.add_row(rung_text(rung, a.metrics[i]), *cells)
    t.caption = (
        f"(the stronger level's win rate, once on each side of every deal; "
        f"{100 * a.even_share:.0f}% is even: no better than the level below, ties aside; "
        f"{_arms_caption(a)})"
    )
    return t


def _no_pair_differed(a: Analysis) -> list[str]:
    """ "no pair differed in 500 pairs: block_rate |effect| < 0.74 pp ... at 95%": a metric
    in which no pair differs has a bounded effect, not a zero one."""
    out = []
    for c, row in enumerate(a.rows):
        items = [
            f"{m.name} |effect| < {max(-comp.ci95[0], comp.ci95[1]) * (100 if m.rate else 1):.2f}"
            f" {m.diff_unit}"
            for m, comp in zip(a.metrics, row, strict=True)
            if comp.identical and not comp.same_rules and not _hidden([comp], False)
        ]
        if items:
            where = f"{a.labels[c + 1]}: " if a.kind == "sweep" else ""
            out.append(f"{where}no pair differed in {a.pairs:,} pairs for {', '.join(items)} (95%)")
    return out


def sweep_table(a: Analysis, *, show_all: bool = False, p_values: bool = False) -> Table:
    """A sweep: a metric per row, a value per column (the first is the base); each other
    value shows its difference from the base with its interval, ``*`` when significant."""
    t = Table(
        title=f"{a.knob} = {', '.join(a.labels)}: {a.pairs} pairs of {PLURAL[a.unit]}"
        + _partial(a),
        title_justify="left",
    )
    t.add_column("metric")
    for label in a.labels:
        t.add_column(label, justify="right")
    for i, m in enumerate(a.metrics):
        comps = [row[i] for row in a.rows]
        if m.skill or _hidden(comps, show_all):
            continue
        cells = [value_text(m, comps[0].base)]
        for c in comps:
            mark = "*" if c.significant else ""
            lo, hi = (diff_text(m, v) for v in c.ci95)
            p = f" p={_p(c.p_holm)}" if p_values and not c.same_rules else ""
            cells.append(
                f"{value_text(m, c.candidate)}\n{diff_text(m, c.diff)}{mark} [{lo}, {hi}]{p}"
            )
        t.add_row(f"{metric_label(a, m)}\n({m.diff_unit})", *cells)
    t.caption = (
        "(under each value: its difference from the first value with the 95% interval; "
        "* significant after Holm's correction" + ("; p Holm-adjusted)" if p_values else ")")
    )
    return t
