"""``capicua arena report DIR`` of an SPRT directory: the test itself, fishtest's test page
as the model. The verdict, the hypotheses and the LLR's bounds, the LLR after every counted
pair drawn against its bounds, Elo and nElo with their intervals, the pentanomial counts,
and the sets behind them (the latest :data:`MAX_SETS`).

Every number comes from the stored matches through :class:`~capicua.arena.sprt_runner.Scoreboard`
(the very bookkeeping the test ran on: complete sets in schedule order) and
:func:`capicua.arena.sprt.status`; nothing is computed a second way here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from html import escape
from pathlib import Path

from . import sprt
from .report import ReportError, write_page
from .sprt_runner import (
    SPRT_FILE,
    Scoreboard,
    SprtConfig,
    candidate_score,
    status_line,
    stored_scoreboard,
)
from .store import MatchRow, Results

MAX_SETS = 200  # sets listed at the end of the page: a long test's page stays small
PENTANOMIAL = ("0", "½", "1", "1½", "2")  # the pair scores, from the candidate's side


def is_sprt(directory: Path) -> bool:
    """Whether ``directory`` holds an SPRT (``capicua arena sprt``'s ``sprt.json``)."""
    return (directory / SPRT_FILE).is_file()


def _config(directory: Path) -> SprtConfig:
    try:
        data = json.loads((directory / SPRT_FILE).read_text(encoding="utf-8"))
        return SprtConfig(**data)
    except (OSError, ValueError, TypeError) as e:
        raise ReportError(f"{directory / SPRT_FILE}: unreadable ({e})") from None


def llr_path(test: SprtConfig, scores: Sequence[float]) -> list[float]:
    """The test's LLR after each counted pair (the pair scores in schedule order)."""
    path = []
    for n in range(1, len(scores) + 1):
        counts = sprt.pentanomial(scores[:n])
        path.append(sprt.status(counts, test.elo0, test.elo1, test.alpha, test.beta,
                                test.model).llr)  # fmt: skip
    return path


def _llr_svg(path: Sequence[float], lower: float, upper: float) -> str:
    """The LLR against the pairs, between its two bounds (a scalable SVG)."""
    w, h, pad = 640.0, 240.0, 30.0
    top = max([upper, *path]) + 0.3
    bottom = min([lower, *path]) - 0.3
    n = max(1, len(path))

    def x(i: float) -> float:
        return pad + (w - 2 * pad) * i / n

    def y(v: float) -> float:
        return pad / 2 + (h - pad) * (top - v) / (top - bottom)

    points = " ".join(f"{x(i + 1):.1f},{y(v):.1f}" for i, v in enumerate(path))
    lines = "".join(
        f'<line class="bound" x1="{x(0):.1f}" x2="{x(n):.1f}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
        f'<text x="{x(0) + 2:.1f}" y="{y(v) - 4:.1f}">{label} {v:+.2f}</text>'
        for v, label in ((upper, "H1 at"), (lower, "H0 at"))
    )
    zero = f'<line class="zero" x1="{x(0):.1f}" x2="{x(n):.1f}" y1="{y(0):.1f}" y2="{y(0):.1f}"/>'
    return (
        f'<svg class="llr" viewBox="0 0 {w:.0f} {h:.0f}" role="img" '
        f'aria-label="LLR after each pair">{zero}{lines}'
        f'<polyline class="path" points="{points}"/>'
        f'<text x="{x(n) - 2:.1f}" y="{h - 2:.1f}" text-anchor="end">pairs: {len(path)}</text>'
        "</svg>"
    )


def llr_text(st: sprt.SprtStatus) -> str:
    """Where the LLR stands against its bounds: ``+2.983, past the upper bound +2.944: H1
    accepted`` once decided, ``+1.204 within [-2.944, +2.944]`` while the test goes on."""
    if st.decision == "H1":
        return f"{st.llr:+.3f}, past the upper bound {st.upper:+.3f}: H1 accepted"
    if st.decision == "H0":
        return f"{st.llr:+.3f}, past the lower bound {st.lower:+.3f}: H0 accepted"
    return f"{st.llr:+.3f} within [{st.lower:+.3f}, {st.upper:+.3f}]"


def counted_text(board: Scoreboard) -> str:
    """``152``, and the sets left out when there are any: ``150 (2 sets left out: a match
    of each was cancelled)``."""
    if not board.skipped:
        return f"{board.pairs:,}"
    if board.skipped == 1:
        return f"{board.pairs:,} (1 set left out: a match of it was cancelled)"
    return f"{board.pairs:,} ({board.skipped:,} sets left out: a match of each was cancelled)"


def _pm(value: float, ci: tuple[float, float]) -> str:
    if not math.isfinite(value):
        return "n/a"
    if not all(math.isfinite(v) for v in ci):
        return f"{value:+.1f} (no interval: too few pairs)"
    return f"{value:+.1f} [{ci[0]:+.1f}, {ci[1]:+.1f}]"


def _sets(rows: Sequence[MatchRow], counted: int) -> list[tuple[int, list[str], float]]:
    """The first ``counted`` complete sets: (number, each match's result, pair score)."""
    by_seq: dict[int, list[MatchRow]] = {}
    for r in rows:
        by_seq.setdefault(r.seq, []).append(r)
    out = []
    for seq in sorted(by_seq)[:counted]:
        matches = sorted(by_seq[seq], key=lambda m: m.rotation)
        results = [{1.0: "win", 0.5: "draw", 0.0: "loss"}[candidate_score(m)] for m in matches]
        out.append((seq, results, sum(candidate_score(m) for m in matches)))
    return out


def render_sprt_report(directory: Path) -> str:
    """The report page of the SPRT stored in ``directory``."""
    test = _config(directory)
    try:
        results = Results.open_existing(directory)
    except FileNotFoundError as e:
        raise ReportError(str(e)) from None
    try:
        rows = results.matches()
        bots = {b.name: b.spec for b in results.bots()}
        disqualified = results.disqualified()
    finally:
        results.close()
    board = stored_scoreboard(rows, test)
    st = board.status
    est = st.estimate
    path = llr_path(test, board.scores)
    who = {name: f"{name} ({bots.get(name, '?')})" for name in ("candidate", "base")}
    if st.decision == "H1":
        verdict = f"H1 accepted after {board.pairs:,} pairs: {who['candidate']} is stronger"
    elif st.decision == "H0":
        verdict = (f"H0 accepted after {board.pairs:,} pairs: {who['candidate']} is not "
                   f"stronger than elo0 = {test.elo0:g}")  # fmt: skip
    elif disqualified:
        verdict = f"no decision after {board.pairs:,} pairs: a bot was disqualified"
    else:
        verdict = f"no decision yet after {board.pairs:,} pairs"
    dq = "".join(
        f"<li>disqualified: {escape(who.get(b, b))}: {escape(r)}</li>"
        for b, r in disqualified.items()
    )
    penta = "".join(
        f"<tr><th>{s}</th><td>{c:,}</td></tr>"
        for s, c in zip(PENTANOMIAL, board.counts, strict=True)
    )
    sets = _sets(rows, board.pairs)
    listed = sets[-MAX_SETS:]
    set_rows = "".join(
        f"<tr><td>{seq}</td><td>{escape(', '.join(res))}</td><td>{score:g}</td></tr>"
        for seq, res, score in reversed(listed)
    )
    more = (f"<p class='note'>The latest {len(listed):,} of {len(sets):,} sets; "
            "<code>capicua arena standings DIR</code> has every match.</p>"
            if len(sets) > len(listed) else "")  # fmt: skip
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>SPRT {escape(who["candidate"])} vs {escape(who["base"])} · capicua arena</title>
<style>
body{{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1c2330;background:#f4f6f9}}
main{{max-width:960px;margin:0 auto;padding:12px}}
section{{background:#fff;border:1px solid #dde3ea;border-radius:6px;padding:10px 14px;
margin:12px 0;min-width:0}}
h1{{font-size:1.3em;margin:8px 0}} h2{{font-size:1.1em;margin:4px 0 8px}}
.verdict{{font-size:1.15em;font-weight:600}} .note{{color:#5a6675;font-size:.9em}}
table{{border-collapse:collapse}} td,th{{padding:3px 10px;border-bottom:1px solid #e5e9ee;
text-align:right}} th{{text-align:left}}
.scroll{{overflow-x:auto;max-width:100%}}
svg.llr{{width:100%;height:auto;display:block}}
svg.llr .path{{fill:none;stroke:#2a62c9;stroke-width:2}}
svg.llr .bound{{stroke:#c0392b;stroke-dasharray:6 4}} svg.llr .zero{{stroke:#99a3ad}}
svg.llr text{{font-size:13px;fill:#5a6675}}
</style></head><body><main>
<h1>SPRT: {escape(who["candidate"])} vs {escape(who["base"])}</h1>
<section id="verdict"><p class="verdict">{escape(verdict)}</p><ul>{dq}</ul>
<p>{escape(status_line(board))}</p></section>
<section id="test"><h2>The test</h2><div class="scroll"><table>
<tr><th>H0</th><td>{test.elo0:g} {escape(test.model)} Elo</td></tr>
<tr><th>H1</th><td>{test.elo1:g} {escape(test.model)} Elo</td></tr>
<tr><th>alpha, beta</th><td>{test.alpha:g}, {test.beta:g}</td></tr>
<tr><th>LLR</th><td>{escape(llr_text(st))}</td></tr>
<tr><th>pairs counted</th><td>{escape(counted_text(board))}</td></tr></table></div></section>
<section id="llr"><h2>LLR over the pairs</h2>{_llr_svg(path, st.lower, st.upper)}
<p class="note">The test stops when the LLR leaves its bounds: above the upper one it accepts
H1, below the lower one H0.</p></section>
<section id="estimates"><h2>Estimates</h2><div class="scroll"><table>
<tr><th>Elo</th><td>{escape(_pm(est.elo, est.elo_ci95))}</td></tr>
<tr><th>nElo</th><td>{escape(_pm(est.nelo, est.nelo_ci95))}</td></tr>
<tr><th>LOS</th><td>{"n/a" if not math.isfinite(est.los) else f"{100 * est.los:.1f}%"}</td></tr>
<tr><th>score</th><td>{"n/a" if not math.isfinite(est.score) else f"{100 * est.score:.1f}%"}</td>
</tr></table></div>
<p class="note">Fixed-sample estimates with 95% intervals: they do not correct for where the
test stopped.</p></section>
<section id="pentanomial"><h2>Pentanomial</h2><p class="note">Pairs by the candidate's score
over the set's two matches (one deal, sides swapped).</p>
<div class="scroll"><table>{penta}</table></div></section>
<section id="sets"><h2>The sets</h2>{more}<div class="scroll"><table>
<tr><th>set</th><th>candidate's matches</th><th>pair score</th></tr>{set_rows}</table></div>
</section>
</main></body></html>
"""


def write_sprt_report(directory: Path, out: Path | None = None) -> Path:
    """Write the SPRT's report (atomically) to ``out`` (default ``DIR/report.html``)."""
    return write_page(out if out is not None else directory / "report.html",
                      render_sprt_report(directory))  # fmt: skip
