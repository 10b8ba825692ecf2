"""`capicua bench arena`: a tiny real run, checked for structure and consistency (never
for speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def _bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capicua", "bench", "arena", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _report(r: subprocess.CompletedProcess[str]) -> Any:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_bench_arena_json_has_both_modes_at_each_level() -> None:
    report = _report(_bench("--json", "--games", "1", "--repeat", "1", "--concurrency", "2"))
    assert report["preset"] == "block" and len(report["bots"]) == 4
    rows = {(row["mode"], row["concurrency"]): row for row in report["rows"]}
    assert set(rows) == {(m, c) for m in ("in-process", "grpc") for c in (2,)}
    for (mode, c), row in rows.items():
        assert row["matches"] == 12  # 6 pairings x 2 rotations x 1 game
        assert row["matches_per_s"] > 0 and len(row["runs"]) == 1
        assert report["matches_per_s"][mode][str(c)] == row["matches_per_s"]
        if mode == "grpc":
            base = rows[("in-process", c)]["matches_per_s"]
            assert abs(row["ratio_to_in_process"] - row["matches_per_s"] / base) < 0.01


def test_bench_arena_rejects_bad_levels() -> None:
    r = _bench("--concurrency", "0", timeout=60)
    assert r.returncode == 2 and "--concurrency" in r.stderr and "Traceback" not in r.stderr


def test_bench_arena_dask_reports_local_and_each_worker_count() -> None:
    """The last line: {"local": {...}, "dask": {"1": {...}, "2": {...}}}, each with matches
    and decisions per second (a LocalCluster per worker count)."""
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "capicua",
            "bench",
            "arena",
            "--backend",
            "dask",
            "--workers",
            "1,2",
            "--games",
            "1",
            "--repeat",
            "1",
            "--concurrency",
            "2",
            "--json",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(report) == {"local", "dask", "compiled"} and set(report["dask"]) == {"1", "2"}
    assert report["compiled"] in ("compiled", "pure")
    for rate in (report["local"], *report["dask"].values()):
        assert set(rate) == {"matches_per_s", "decisions_per_s"}
        # a block match is about a hundred decisions: both rates from the same run
        assert (
            rate["matches_per_s"] > 0 and 20 < rate["decisions_per_s"] / rate["matches_per_s"] < 400
        )
    r = _bench("--backend", "dask", "--workers", "x", timeout=60)
    assert r.returncode == 2 and "--workers: 'x'" in r.stderr
