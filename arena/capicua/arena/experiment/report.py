"""``capicua experiment report DIR``: one self-contained HTML page about an experiment.

The page needs nothing but a browser (inline CSS and SVG, no script, no external URL) and
fits any screen down to a 390 px phone (charts scale or reflow, tables scroll in their own
box). It shows the experiment's settings and, for every candidate against the base:

* the comparison table (the same numbers as ``capicua experiment show``);
* a **forest plot** of the paired differences (candidate - base) with their 95% intervals,
  significant ones in red, on scales that cannot explode for a base value near 0: one
  panel for the rates in **percentage points**, and one panel per unit for the means **in
  their own units** (points, moves, hands...), so a metric's large scale never squeezes
  another's. An interval is drawn inside what the metric can be (a rate's difference lies
  in ``[-base, 1 - base]``) and an end on that bound is marked with a bar;
* **distributions per arm**: points per hand and moves per hand (and hands per match with
  ``unit = "match"``), one line per arm over the same bins;
* for a sweep, **one chart per metric against the value**: the difference from the base
  value (the first one given, ringed and labelled) with its 95% interval as a band, in
  the same units as the forest plot, the values in numeric order (:func:`sweep_order`);
* with ``--skill``, every arm's own value of what it measures with its interval; with a
  **skill trace**, each level's win rate against the level below, a line per arm
  (:func:`trace_charts`), so that a deeper or flatter skill ladder shows at a glance.

The page is ``capicua/arena/templates/experiment.html.j2`` (Jinja2, autoescaped) in the
layout and style every report page shares (``base.html.j2``, ``report.css``), rendered by
:func:`capicua.arena.report.render_page`; the charts are drawn by :mod:`capicua.arena.charts`,
which the tournament and SPRT reports share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..charts import Interval, distribution_svg, forest_html, sweep_svg, trace_svg, within
from ..facts import MatchFacts
from ..report import ReportError, render_page, write_page
from .analysis import (
    TRACE_MEASURES,
    Analysis,
    diff_text,
    estimate_text,
    flag,
    interval_text,
    load,
    measure_rows,
    metric_label,
    rung_text,
    value_text,
    verdict_lines,
)
from .config import PLURAL
from .legacy import StoreError
from .metrics import Comparison, Metric

REPORT_NAME = "report.html"


@dataclass(frozen=True)
class Distribution:
    """A per-unit quantity whose distribution is drawn for every arm."""

    name: str
    label: str
    values: Callable[[MatchFacts], list[int]]


DISTRIBUTIONS = (
    Distribution("points_per_hand", "points scored in a hand",
                 lambda m: [h.points for h in m.hands]),
    Distribution("moves_per_hand", "turns taken in a hand (plays and passes)",
                 lambda m: [h.plays + h.passes for h in m.hands]),
)  # fmt: skip
MATCH_DISTRIBUTIONS = (
    Distribution("hands_per_match", "hands in a match", lambda m: [len(m.hands)]),
)


# -- the charts' values (drawn by capicua.arena.charts) --------------------------------------


def hidden(c: Comparison) -> bool:
    """0 in every pair of both arms (drawing without a stock): left out of the table and
    the charts, as ``capicua experiment show`` leaves it out."""
    return c.base == 0.0 and c.candidate == 0.0


def possible(m: Metric, base: float) -> tuple[float, float | None]:
    """The range of a difference from ``base``: what the candidate's value can be, minus
    the base (a rate's ``[-base, 1 - base]``; a mean has no upper bound)."""
    return m.low - base, None if m.high is None else m.high - base


def diff_interval_text(m: Metric, c: Comparison) -> str:
    """``+2.00 pp [+0.06, +4.30]``: the difference with its unit and its 95% interval, in
    ``show``'s numbers."""
    low, high = (diff_text(m, v) for v in c.ci95)
    return f"{diff_text(m, c.diff)} {m.diff_unit} [{low}, {high}]"


@dataclass(frozen=True)
class Panel:
    """One panel of a forest plot: the metrics drawn on one axis."""

    name: str
    caption: str
    unit: str
    scale: float  # from the metric's values to the axis (100: shares to percentage points)
    rows: list[Interval]

    def html(self) -> Markup:
        return forest_html(self.name, self.caption, self.unit, self.rows, self.scale)


def forest_panels(a: Analysis, candidate: int) -> list[Panel]:
    """The paired differences of one candidate, grouped by scale: the rates in percentage
    points first, then the means, a panel per unit. Absolute differences, never relative
    ones: a % of a base near 0 explodes (+300% [-30.7, +630.7] squeezed every other metric
    onto 0), a rate's in pp cannot leave [-100, +100]; and a unit per panel keeps a mean's
    large scale (hands per match) from squeezing another's (passes per hand)."""
    rates: list[Interval] = []
    means: dict[str, list[Interval]] = {}
    for m, c in zip(a.metrics, a.rows[candidate], strict=True):
        if m.skill or c.same_rules or hidden(c):  # its own section; 0; nothing to see
            continue
        text = diff_interval_text(m, c)
        note = flag(c)
        tip = (
            f"{metric_label(a, m)}: {value_text(m, c.base)} → {value_text(m, c.candidate)} "
            f"({text}){f'; {note}' if note else ''}"
        )
        row = within(
            Interval(metric_label(a, m), c.diff, *c.ci95, c.significant, tip, text, m.name),
            *possible(m, c.base),
        )
        (rates if m.rate else means.setdefault(m.unit or "units", [])).append(row)
    panels = []
    if rates:
        caption = "Rates: candidate − base, in percentage points (pp)"
        panels.append(Panel("rates", caption, "pp", 100.0, rates))
    for unit, rows in means.items():
        caption = f"Means in {unit}: candidate − base, in {unit}"
        panels.append(Panel(f"mean-{unit}", caption, unit, 1.0, rows))
    return panels


def _numbers(texts: Sequence[str]) -> list[float] | None:
    """Every text as a finite number, or None if one is not."""
    out = []
    for text in texts:
        try:
            value = float(text)
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
        out.append(value)
    return out


def sweep_keys(labels: Sequence[str]) -> list[float] | None:
    """The number of every sweep value when each is a number, or each is ``word:number``
    with the same word (``add:25``); else None (the values keep the order given)."""
    keys = _numbers(labels)
    if keys is None:
        split = [label.partition(":") for label in labels]
        if len({word for word, _, _ in split}) == 1 and all(colon for _, colon, _ in split):
            keys = _numbers([tail for _, _, tail in split])
    return keys


def sweep_order(labels: Sequence[str]) -> list[int]:
    """The arms' indices in the order a sweep's x axis shows them: by :func:`sweep_keys`
    (``100,50,200`` is drawn 50, 100, 200: in the given order it was a V), else as given."""
    keys = sweep_keys(labels)
    if keys is None:
        return list(range(len(labels)))
    return sorted(range(len(labels)), key=lambda i: keys[i])


def sweep_chart(
    a: Analysis, metric: Metric, comps: Sequence[Comparison], order: Sequence[int]
) -> Markup:
    """The difference from the base value against the value (the arms in ``order``), with
    its 95% band: rates in percentage points, means in their own units, as the forest."""
    labels = a.labels
    base = comps[0].base  # every candidate is compared with the same base arm
    floor, ceiling = possible(metric, base)
    points = [
        Interval(labels[0], 0.0, 0.0, 0.0, False,
                 f"{labels[0]} (base): {value_text(metric, base)}", base=True)
    ]  # fmt: skip
    for label, c in zip(labels[1:], comps, strict=True):
        tip = f"{label}: {value_text(metric, c.candidate)}, {diff_interval_text(metric, c)}"
        points.append(within(Interval(label, c.diff, *c.ci95, c.significant, tip), floor, ceiling))
    unit = metric.diff_unit or "units"
    title = f"{metric_label(a, metric)} ({unit})"
    return sweep_svg(metric.name, title, 100.0 if metric.rate else 1.0, [points[i] for i in order])


def arm_interval(a: Analysis, arm: int, i: int, label: str) -> Interval:
    """Metric ``i`` of one arm with its 95% interval, as a chart draws it (significant: a
    candidate that differs significantly from the base), its tooltip with the difference."""
    m = a.metrics[i]
    est = a.estimates[arm][i]
    comp = a.rows[arm - 1][i] if arm else None
    text = estimate_text(m, est)
    if comp is not None:
        text += f"; {diff_interval_text(m, comp)}"
    return Interval(label, est.value, *est.ci95, bool(comp and comp.significant),
                    f"{a.labels[arm]}: {text}", estimate_text(m, est), m.name)  # fmt: skip


def skill_panels(a: Analysis) -> list[Panel]:
    """What ``--skill`` measured but the trace's rungs (:func:`trace_charts`), a panel per
    metric: every arm's own value with its 95% interval (red: a candidate significantly
    different from the base), rates in %."""
    panels = []
    shown = a.in_trace()
    for i, m in enumerate(a.metrics):
        if not m.skill or i in shown:
            continue
        rows = [arm_interval(a, arm, i, label) for arm, label in enumerate(a.labels)]
        unit = "%" if m.rate else m.unit
        panels.append(Panel(m.name, f"{m.name}: {m.description}", unit,
                            100.0 if m.rate else 1.0, rows))  # fmt: skip
    return panels


def _arm_cells(a: Analysis, i: int) -> list[str]:
    """Metric ``i`` of every arm with its interval; a candidate's with its difference from
    the base (the numbers of ``show``'s skill and trace tables)."""
    m = a.metrics[i]
    cells = [estimate_text(m, a.estimates[0][i])]
    cells += [
        f"{estimate_text(m, a.estimates[c + 1][i])}; {diff_interval_text(m, row[i])}"
        + (" significant" if row[i].significant else "")
        for c, row in enumerate(a.rows)
    ]
    return cells


def skill_rows(a: Analysis) -> list[dict[str, Any]]:
    """The skill table: a metric per row (the trace's rungs have their own), each arm's
    value and, for a candidate, its difference from the base."""
    shown = a.in_trace()
    return [
        {"metric": m.name, "description": m.description, "cells": _arm_cells(a, i)}
        for i, m in enumerate(a.metrics)
        if m.skill and i not in shown
    ]


def trace_rows(a: Analysis) -> list[dict[str, Any]]:
    """The skill trace's table: a row per rung and win rate, as ``show`` prints it."""
    return [
        {"rung": rung_text(rung, a.metrics[i]), "metric": a.metrics[i].name,
         "cells": _arm_cells(a, i)}
        for rung in a.rungs()
        for i in rung.metrics
    ]  # fmt: skip


def trace_charts(a: Analysis) -> list[Markup]:
    """The skill trace drawn: per win rate (hands; matches at the match unit) the stronger
    level's rate at every rung with its 95% interval, a line per arm, and the even line."""
    rungs = a.rungs()
    charts = []
    for k, measure in enumerate(TRACE_MEASURES):
        if not rungs or len(rungs[0].metrics) <= k:
            continue
        series = [
            (label, [arm_interval(a, arm, rung.metrics[k], label) for rung in rungs])
            for arm, label in enumerate(a.labels)
        ]
        what = "hands" if k == 0 else "matches"
        charts.append(trace_svg(
            measure, f"{what} won by each level against the level below (%)",
            [(rung.strong, rung.weak) for rung in rungs], series, a.even_share,
        ))  # fmt: skip
    return charts


def measure_table_rows(a: Analysis) -> list[dict[str, str]]:
    """One ruleset on its own: every metric's value with its interval and what the
    interval rests on (the rows and numbers of ``show``)."""
    return [
        {"metric": metric_label(a, m), "description": m.description,
         "value": value_text(m, est.value), "ci": interval_text(m, est),
         "unit": "%" if m.rate else m.unit, "interval": est.note}
        for m, est in measure_rows(a)
    ]  # fmt: skip


# -- the page ---------------------------------------------------------------------------------


def _rows(a: Analysis, c: int) -> list[dict[str, str]]:
    rows = []
    for m, comp in zip(a.metrics, a.rows[c], strict=True):
        if m.skill or hidden(comp):
            continue
        rows.append(
            {
                "metric": metric_label(a, m),
                "description": m.description,
                "base": value_text(m, comp.base),
                "candidate": value_text(m, comp.candidate),
                "diff": f"{diff_text(m, comp.diff)} {m.diff_unit}",
                "ci": f"[{diff_text(m, comp.ci95[0])}, {diff_text(m, comp.ci95[1])}]",
                "flag": flag(comp),
            }
        )
    return rows


def render_report(directory: Path) -> str:
    """The report page of the experiment stored in ``directory``."""
    try:
        stored = load(directory)
    except StoreError as e:
        raise ReportError(str(e)) from None
    config, info, facts, a = stored.config, stored.info, stored.facts, stored.analysis
    arms = config["arms"]
    labels = list(a.labels)
    order = sweep_order(labels) if a.kind == "sweep" else list(range(len(labels)))
    counted = [f for _, f in sorted(facts.items()) if all(x.counted for x in f)]
    dists = DISTRIBUTIONS + (MATCH_DISTRIBUTIONS if a.unit == "match" else ())
    distributions = [
        {
            "label": d.label,
            "svg": distribution_svg(
                d.name,
                d.label,
                [labels[i] for i in order],  # a sweep's arms in the order of its charts
                [[v for f in counted for v in d.values(f[i])] for i in order],
            ),
        }
        for d in dists
    ]
    candidates = [
        {
            "label": labels[c + 1],
            "rows": _rows(a, c),
            "forest": [panel.html() for panel in forest_panels(a, c)],
            "same_rules": all(comp.same_rules for comp in a.rows[c]),
        }
        for c in range(len(a.rows))
    ]
    sweeps = []
    if a.kind == "sweep":
        for i, m in enumerate(a.metrics):
            comps = [row[i] for row in a.rows]
            if all(c.same_rules or hidden(c) for c in comps):
                continue
            sweeps.append(sweep_chart(a, m, comps, order))
    if not a.pairs:  # nothing was measured: the verdict says so, and no table or chart
        distributions, candidates, sweeps = [], [], []
    return render_page(
        "experiment.html.j2",
        name=config["name"],
        info=info,
        config=config,
        arms=arms,
        analysis=a,
        candidates=candidates,
        distributions=distributions,
        sweeps=sweeps,
        skill=[panel.html() for panel in skill_panels(a)] if a.pairs else [],
        skill_rows=skill_rows(a),
        trace=trace_charts(a) if a.pairs else [],
        trace_rows=trace_rows(a) if a.pairs else [],
        measure_rows=measure_table_rows(a) if a.kind == "measure" and a.pairs else [],
        sweep_numeric=sweep_keys(labels) is not None,
        verdict=verdict_lines(a),
        plural=PLURAL[a.unit],
    )


def write_report(directory: Path, out: Path | None = None) -> Path:
    """Write the report (atomically) to ``out`` (default ``DIRECTORY/report.html``)."""
    return write_page(out or directory / REPORT_NAME, render_report(directory))
