"""How a check's verdict is shown: a table and a summary line for people, one JSON object
for programs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
_STYLE = {PASSED: "green", FAILED: "bold red", SKIPPED: "dim"}


@dataclass(frozen=True)
class RowResult:
    """One row's verdict: ``status`` is passed, failed or skipped; ``detail`` says what
    the bot did (right, or wrong)."""

    name: str
    status: str
    detail: str
    seconds: float = 0.0

    @property
    def passed(self) -> bool | None:
        """True or False; None for a row that did not run."""
        return None if self.status == SKIPPED else self.status == PASSED


def all_passed(results: Sequence[RowResult]) -> bool:
    """No row failed (skipped rows do not count against the bot)."""
    return not any(r.status == FAILED for r in results)


def summary(results: Sequence[RowResult], seconds: float) -> str:
    """``13 passed, 1 failed, 1 skipped in 12.3 s``."""
    counts = [(s, sum(1 for r in results if r.status == s)) for s in (PASSED, FAILED, SKIPPED)]
    parts = [f"{n} {status}" for status, n in counts if n or status == PASSED]
    return f"{', '.join(parts)} in {seconds:.1f} s"


def to_json(results: Sequence[RowResult], seconds: float) -> str:
    """One JSON object: ``passed`` (no row failed), ``summary`` and the ``rows`` (name,
    status, passed: true, false or null when skipped, detail, seconds)."""
    return json.dumps(
        {
            "passed": all_passed(results),
            "summary": summary(results, seconds),
            "rows": [
                {
                    "name": r.name,
                    "status": r.status,
                    "passed": r.passed,
                    "detail": r.detail,
                    "seconds": round(r.seconds, 2),
                }
                for r in results
            ],
        }
    )


def render(results: Sequence[RowResult], seconds: float, console: Console) -> None:
    """The table (row, verdict, detail), then the summary line."""
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("row", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for r in results:
        table.add_row(r.name, f"[{_STYLE[r.status]}]{r.status}[/]", r.detail)
    console.print(table)
    console.print(summary(results, seconds), highlight=False)
