"""``capicua bench server`` with tiny settings: the shape of its output and its error count,
never its speed. The server and the echo server run as child processes (as in a real run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner

from capicua.bench import server as bench
from capicua.bench.common import BenchError
from capicua.bench.load import Load, fill, replacing, wait_until
from capicua.cli import main
from tests.serverkit import running

PROGRAM = [sys.executable, "-c", "from capicua.cli import main; main(prog_name='capicua')"]
TINY = ["--concurrency", "2,1", "--seconds", "0.5", "--repeat", "2", "--rtt-samples", "30"]
LEVEL_KEYS = {
    "matches_per_s",
    "decisions_per_s",
    "errors",
    "matches",
    "decisions",
    "decision_rtt_us_p50",
    "decision_rtt_us_p99",
    "vs_raw_echo",
    "server_cpu_us_per_decision",
    "warmup_s",
}


@pytest.fixture(scope="module")
def report() -> Any:
    """One tiny run through the real command line (a separate process, like a user's)."""
    done = subprocess.run(
        [*PROGRAM, "bench", "server", *TINY, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_json_shape(report: Any) -> None:
    for key in (
        "raw_echo_rtt_us_p50",
        "raw_echo_rtt_us_p99",
        "decision_rtt_us_p50",
        "decision_rtt_us_p99",
        "rtt_ratio_p50",
        "rtt_ratio_p99",
        "raw_echo_per_s",
    ):
        assert isinstance(report[key], float) and report[key] > 0, key
    assert report["raw_echo_rtt_us_p50"] <= report["raw_echo_rtt_us_p99"]
    assert report["decision_rtt_us_p50"] <= report["decision_rtt_us_p99"]
    ratio = report["decision_rtt_us_p50"] / report["raw_echo_rtt_us_p50"]
    assert report["rtt_ratio_p50"] == pytest.approx(ratio, abs=0.01)
    assert report["payload_bytes"] > 0
    assert report["raw_echo_streams"] == bench.ECHO_STREAMS
    assert list(report["concurrency"]) == ["2", "1"]  # in the order given
    assert (report["preset"], report["repeat"], report["seconds"]) == ("block", 2, 0.5)
    assert report["rtt_samples"] == 30
    assert report["machine"]["nproc"] >= 1 and report["python"]
    # the server's CPU time per decision: /proc counts it in 10 ms ticks, which one phase
    # of a tiny run on a busy machine may not reach, but the whole run does
    cpu = [report["server_cpu_us_per_decision"]]
    cpu += [row["server_cpu_us_per_decision"] for row in report["concurrency"].values()]
    assert all(isinstance(us, float) and us >= 0 for us in cpu) and max(cpu) > 0, cpu


def test_a_process_cpu_time_is_read_from_proc() -> None:
    """process_cpu_s counts every thread's user and system time; a process that is gone
    has none."""
    before = bench.process_cpu_s(os.getpid())
    assert before is not None
    while bench.process_cpu_s(os.getpid()) == before:  # work until the next tick
        sum(range(10_000))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert bench.process_cpu_s(int(gone.stdout)) is None


def test_no_errors_and_consistent_counts(report: Any) -> None:
    assert report["errors"] == 0, report.get("error_notes")
    assert "error_notes" not in report
    for level, row in report["concurrency"].items():
        assert set(row) == LEVEL_KEYS, level
        assert row["errors"] == 0
        assert row["decisions"] > 0 and row["decisions_per_s"] > 0
        assert row["matches"] >= 0 and row["matches_per_s"] >= 0
        # a window's rates come from its counts: no median can exceed the total of 2 windows
        assert row["decisions_per_s"] * 0.5 <= row["decisions"] * 1.01
        expected = row["decisions_per_s"] / report["raw_echo_per_s"]
        assert row["vs_raw_echo"] == pytest.approx(expected, abs=0.002)
    # the warm-up of each level waited for that many matches to finish
    assert report["decisions_per_match"] > 10


def test_table_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --json: a readable table from the same report."""
    fake = bench.Report([1], 0.5, 1, 3)
    fake.round_trips.append(bench.RoundTrips([0.0006, 0.0007, 0.0009], [0.0002] * 3, 800, 9000.0))
    fake.levels[1] = bench.Level(1, [bench.Window(0.5, 500, 4, [0.0005, 0.0008])], 0, 0.1)
    fake.decisions_per_match = 120.0
    monkeypatch.setattr(bench, "run_server_bench", lambda *a, **k: fake)
    runner = CliRunner()
    result = runner.invoke(main, ["bench", "server"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "raw grpc.aio echo (800 bytes)" in result.output
    assert "3.50x" in result.output  # 700 us / 200 us at p50
    assert "1,000" in result.output  # 500 decisions in 0.5 s


def test_percentile() -> None:
    assert bench.percentile([], 0.5) == 0.0
    assert bench.percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert bench.percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert bench.percentile([5.0], 0.99) == 5.0


def test_parse_concurrency() -> None:
    assert bench.parse_concurrency(None) == [1, 64, 512]
    assert bench.parse_concurrency(" 8, 1,8 ") == [8, 1]
    for bad in ("", "0", "x", "1,-2"):
        with pytest.raises(BenchError):
            bench.parse_concurrency(bad)


async def test_the_load_client_plays_any_preset_with_a_bot_per_seat() -> None:
    """The Play load client (in-process server here): one bot per seat of the preset, every
    match it starts played to its end, and no error."""
    async with running(None) as (app, _):
        load = Load(app.address, preset="iq-1v1")
        try:
            await load.connect()
            assert len(load.bot_ids) == 2
            async with replacing(load):
                await fill(load, 2)
                await wait_until(load, lambda: load.finished >= 3 or load.errors > 0)
            assert load.errors == 0, load.error_notes
            assert load.finished >= 3 and not load.runs  # the rest cancelled, and drained
            assert load.decisions >= sum(load.finished_decisions) > 0
            assert load.rtts and len(load.rtts) == len(load.sizes)
        finally:
            await load.close()


def test_bench_load_holds_matches_and_samples_the_server() -> None:
    """A real server process, three matches held for three seconds: matches finish, no
    error, and the server's memory and descriptors are sampled from /proc."""
    from capicua.bench.hold import run_load_bench

    report = run_load_bench(3, 3.0, warmup_s=1.0).to_json()
    assert report["errors"] == 0, report["error_notes"]
    assert report["finished"] > 0 and report["decisions"] > 0
    assert 0 < report["decision_ms_p50"] <= report["decision_ms_p99"]
    assert len(report["samples"]) >= 2
    rss, fds = report["rss_mb"], report["fds"]
    assert rss["start"] > 0 and rss["end"] > 0 and fds["start"] > 0


def test_bench_load_refuses_bad_input() -> None:
    from click.testing import CliRunner

    from capicua.cli import main

    for args, expected in (
        (["--matches", "0"], "--matches"),
        (["--matches", "5001"], "--matches"),
        (["--seconds", "0"], "--seconds"),
        (["--preset", "nope"], "nope"),
    ):
        result = CliRunner().invoke(main, ["bench", "load", *args])
        assert result.exit_code != 0 and expected in result.output, result.output
