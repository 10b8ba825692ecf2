"""``capicua arena report DIR`` of an SPRT directory: the test itself, fishtest's test page
as the model. The verdict, the hypotheses and the LLR's bounds, the LLR after every counted
pair drawn against its bounds, Elo and nElo with their intervals, the pentanomial counts,
and the sets behind them (the latest :data:`MAX_SETS`).

Every number comes from the stored matches through :class:`~capicua.arena.sprt_runner.Scoreboard`
(the very bookkeeping the test ran on: complete sets in schedule order) and
:func:`capicua.arena.sprt.status`; nothing is computed a second way here. The page is
``templates/sprt.html.j2``, in the tournament report's layout and style, and its chart is
:func:`capicua.arena.charts.llr_chart_svg`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from . import sprt
from .charts import llr_chart_svg
from .report import ReportError, render_page, write_page
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


def _percent(share: float) -> str:
    return "n/a" if not math.isfinite(share) else f"{100 * share:.1f}%"


def estimates(est: sprt.Estimate) -> list[tuple[str, str]]:
    """The estimates' table: (label, value with its interval)."""
    return [
        ("Elo", _pm(est.elo, est.elo_ci95)),
        ("nElo", _pm(est.nelo, est.nelo_ci95)),
        ("LOS", _percent(est.los)),
        ("score", _percent(est.score)),
    ]


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


def verdict_text(board: Scoreboard, test: SprtConfig, candidate: str, disqualified: bool) -> str:
    """The page's verdict: the decision and after how many pairs, or why there is none."""
    decision = board.status.decision
    if decision == "H1":
        return f"H1 accepted after {board.pairs:,} pairs: {candidate} is stronger"
    if decision == "H0":
        return (f"H0 accepted after {board.pairs:,} pairs: {candidate} is not stronger than "
                f"elo0 = {test.elo0:g}")  # fmt: skip
    if disqualified:
        return f"no decision after {board.pairs:,} pairs: a bot was disqualified"
    return f"no decision yet after {board.pairs:,} pairs"


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
    who = {name: f"{name} ({bots.get(name, '?')})" for name in ("candidate", "base")}
    sets = _sets(rows, board.pairs)
    return render_page(
        "sprt.html.j2",
        candidate=who["candidate"],
        base=who["base"],
        test=test,
        verdict=verdict_text(board, test, who["candidate"], bool(disqualified)),
        disqualified=[(who.get(b, b), reason) for b, reason in disqualified.items()],
        status=status_line(board),
        llr=llr_text(board.status),
        counted=counted_text(board),
        llr_chart=llr_chart_svg(
            llr_path(test, board.scores), board.status.lower, board.status.upper
        ),
        estimates=estimates(board.status.estimate),
        pentanomial=list(zip(PENTANOMIAL, board.counts, strict=True)),
        sets=len(sets),
        listed=list(reversed(sets[-MAX_SETS:])),
    )


def write_sprt_report(directory: Path, out: Path | None = None) -> Path:
    """Write the SPRT's report (atomically) to ``out`` (default ``DIR/report.html``)."""
    return write_page(out if out is not None else directory / "report.html",
                      render_sprt_report(directory))  # fmt: skip
