"""From stored facts to the experiment's answer: every metric of every arm, the paired
differences against the base with their intervals, and the significant ones named.

A pure function of the results (:func:`analyze`), like the arena's standings: the same
results always give the same numbers, and ``capicua experiment show DIR`` recomputes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from capicua.engine.rules import Ruleset, load_preset

from ..output import disqualified_lines
from .config import PLURAL
from .metrics import MIN_PAIRS, Comparison, MatchFacts, Metric, compare, holm, metrics_for
from .store import ExperimentStore, disqualified_bots


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
        """Comparisons in Holm's family (those that vary at all)."""
        return sum(1 for row in self.rows for comp in row if not comp.identical)


def analyze(
    kind: str,
    unit: str,
    labels: Sequence[str],
    rulesets: Sequence[Ruleset],
    facts: Mapping[int, Sequence[MatchFacts]],
    knob: str | None,
    planned: int,
    disqualified: Mapping[str, str] | None = None,
) -> Analysis:
    """Compare every candidate arm with the base over the pairs of ``facts`` that count
    (``planned``: the pairs the experiment plays in full, to tell a partial result;
    ``disqualified``: the bots it disqualified, and why)."""
    counted = [arms for _, arms in sorted(facts.items()) if all(f.counted for f in arms)]
    metrics = tuple(metrics_for(unit, rulesets))
    rows: list[list[Comparison]] = []
    for c in range(1, len(labels)):
        row = []
        for m in metrics:
            base = [m.pair_value(arms[0]) for arms in counted]
            cand = [m.pair_value(arms[c]) for arms in counted]
            row.append(compare(m.name, base, cand) if counted else _empty(m.name))
        rows.append(row)
    # Holm over every comparison that varies; identical arms are not a test.
    family = [
        (c, i) for c, row in enumerate(rows) for i, comp in enumerate(row) if not comp.identical
    ]
    flags = holm([rows[c][i].p for c, i in family])
    for (c, i), flag in zip(family, flags, strict=True):
        comp = rows[c][i]
        rows[c][i] = Comparison(
            comp.metric, comp.base, comp.candidate, comp.diff, comp.se, comp.ci95, comp.p, flag
        )
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
    )


@dataclass(frozen=True)
class Stored:
    """An experiment directory read back: its configuration, facts and analysis."""

    config: dict[str, Any]
    info: dict[str, str]
    facts: dict[int, list[MatchFacts]]
    analysis: Analysis


def load(directory: Path) -> Stored:
    """Read and analyse the experiment stored in ``directory`` (raises StoreError)."""
    store = ExperimentStore(directory, create=False)
    try:
        config = store.config()
        info = store.info()
        arms = config["arms"]
        facts = store.facts(len(arms))
    finally:
        store.close()
    rulesets = [load_preset(a["preset"], a["overrides"]) for a in arms]
    labels = [a["label"] for a in arms]
    result = analyze(
        config["kind"], config["unit"], labels, rulesets, facts, config["knob"], config["pairs"],
        disqualified_bots(directory),
    )  # fmt: skip
    return Stored(config, info, facts, result)


def _empty(name: str) -> Comparison:
    return Comparison(name, 0.0, 0.0, 0.0, 0.0, (0.0, 0.0), 1.0)


# -- output -----------------------------------------------------------------------------------


def _r(x: float) -> float:
    return round(x, 6)


def _comparison_json(comp: Comparison) -> dict[str, Any]:
    return {
        "candidate": _r(comp.candidate),
        "diff": _r(comp.diff),
        "ci95": [_r(comp.ci95[0]), _r(comp.ci95[1])],
        "p": _r(comp.p),
        "significant": comp.significant,
    }


def to_dict(a: Analysis) -> dict[str, Any]:
    """The machine-readable result (``--json``): for an A/B experiment,
    ``metrics[name] = {base, candidate, diff, ci95, p, significant}``; for a sweep,
    ``metrics[name] = {base, by_value: {label: {candidate, diff, ci95, p, significant}}}``.
    ``complete`` is false while fewer than ``planned_pairs`` pairs are recorded."""
    metrics: dict[str, Any] = {}
    for i, m in enumerate(a.metrics):
        base = a.rows[0][i].base if a.rows else 0.0
        if a.kind == "ab":
            metrics[m.name] = {"base": _r(base)} | _comparison_json(a.rows[0][i])
        else:
            metrics[m.name] = {
                "base": _r(base),
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
    }
    if a.knob is not None:
        out["knob"] = a.knob
        out["values"] = list(a.labels)
    out["metrics"] = metrics
    out["significant"] = [
        {"arm": label, "metric": comp.metric, "diff": _r(comp.diff)}
        for label, comp in a.significant()
    ]
    out["holm_family"] = a.tested
    return out


def to_json(a: Analysis) -> str:
    return json.dumps(to_dict(a), separators=(",", ":"))


def value_text(m: Metric, x: float) -> str:
    return f"{100 * x:.2f}%" if m.rate else f"{x:.3f}"


def diff_text(m: Metric, x: float) -> str:
    return f"{100 * x:+.2f}" if m.rate else f"{x:+.3f}"


def table(a: Analysis, candidate: int = 0, *, show_all: bool = False) -> Table:
    """Base against one candidate, a metric per row (rates in %, their differences in
    percentage points). Metrics that are identical in both arms are left out unless
    ``show_all``."""
    label = a.labels[candidate + 1]
    t = Table(
        title=f"{a.labels[0]} vs {label}: {a.pairs} pairs of {PLURAL[a.unit]}{_partial(a)}",
        title_justify="left",
    )
    for head, justify in (("metric", "left"), (a.labels[0], "right"), (label, "right"),
                          ("diff", "right"), ("95% interval", "right"), ("", "left")):  # fmt: skip
        t.add_column(head, justify=justify)  # type: ignore[arg-type]
    for i, m in enumerate(a.metrics):
        comp = a.rows[candidate][i]
        if comp.identical and not show_all and comp.base == 0.0:
            continue
        lo, hi = comp.ci95
        t.add_row(
            m.name,
            value_text(m, comp.base),
            value_text(m, comp.candidate),
            diff_text(m, comp.diff),
            f"[{diff_text(m, lo)}, {diff_text(m, hi)}]",
            "significant" if comp.significant else ("identical" if comp.identical else ""),
        )
    return t


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
    if a.pairs < MIN_PAIRS:
        lines.append(f"only {a.pairs} pairs: the normal intervals are rough below {MIN_PAIRS}")
    if a.excluded:
        lines.append(f"{a.excluded} pairs left out: an arm ended by forfeit or cancellation")
    sig = a.significant()
    head = (
        f"significant at 5% after Holm's correction over {a.tested} comparisons"
        if a.tested
        else "no metric differs between the arms in any pair"
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


def sweep_table(a: Analysis, *, show_all: bool = False) -> Table:
    """A sweep: a metric per row, a value per column (the first is the base); each other
    value shows its difference from the base, ``*`` when significant."""
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
        if not show_all and all(c.identical and c.base == 0.0 for c in comps):
            continue
        cells = [value_text(m, comps[0].base)]
        for c in comps:
            mark = "*" if c.significant else ""
            cells.append(f"{value_text(m, c.candidate)} ({diff_text(m, c.diff)}{mark})")
        t.add_row(m.name, *cells)
    t.caption = "(difference from the first value; * significant after Holm's correction)"
    return t
