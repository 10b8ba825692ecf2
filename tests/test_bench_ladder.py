"""`capicua bench ladder`: a served ladder under cheap connected entries, and its
leaderboard's pages over a constructed store (shapes and counts; never times)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def _bench(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "capicua", "bench", "ladder", *args, "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_entries_join_and_the_ladder_plays() -> None:
    report = _bench("--entries", "6", "--seconds", "3", "--concurrency", "2")
    assert report["entries"] == 6 and report["errors"] == 0, report["error_notes"]
    assert report["matches"] > 0 and report["decisions"] > 0
    assert report["choose_ms_p50"] > 0 and report["roster_read_ms_p50"] > 0
    rss = report["server_rss_mb"]
    assert set(rss) == {"start", "joined", "end"} and all(v > 0 for v in rss.values())
    assert report["compiled"] in ("compiled", "pure")


def test_the_pages_over_a_stored_ladder() -> None:
    report = _bench("--pages", "300")
    assert report["stored"] == 300 and report["matches"] >= 300
    assert report["export"]["lines"] == report["matches"]
    assert set(report["pages"]) >= {"table page", "entry page", "api table", "api entry"}
    assert all(t["median_ms"] > 0 for t in report["pages"].values())


def test_bad_input_is_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "capicua", "bench", "ladder", "--entries", "0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().startswith("capicua: error:") and "Traceback" not in done.stderr
