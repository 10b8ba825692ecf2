"""``capicua bench``: benchmarks that print JSON.

The commands and their printing; the measuring code is the :mod:`capicua.bench` package, a
module per command, each imported when its command runs (see ``docs/benchmarks.md``).

``capicua bench engine`` plays uniformly random legal moves through the real engine and
prints, per preset, the median over ``--repeat`` repetitions of hands per second and moves
per hand; ``--compare`` also measures the PyPI ``dominoes`` package on the same work
(:mod:`capicua.bench.engine`).

``capicua bench server`` runs ``capicua serve`` and a raw grpc.aio echo server as child
processes and loads them from this one: decision round trip against the echo, and decisions
and matches per second at 1, 64 and 512 concurrent matches (:mod:`capicua.bench.server`,
with the Play load client of :mod:`capicua.bench.load`).

``capicua bench bots``, ``arena`` and ``experiment``: :mod:`capicua.bench.bots`,
:mod:`capicua.bench.arena` and :mod:`capicua.bench.experiment`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from capicua.bench import common
from capicua.bench import engine as engine_bench
from capicua.common import interrupt


def _echo_json(report: dict[str, Any]) -> None:
    """Print ``report`` as one compact JSON line, saying which build measured it
    (``compiled``: "compiled" or "pure"), so no number is read against the wrong build."""
    from capicua.common import build

    click.echo(json.dumps({**report, "compiled": build.current().label}, separators=(",", ":")))


@click.group()
def bench() -> None:
    """Benchmarks (print JSON with --json)."""
    # every benchmark works in temporary directories and prints only at its end
    interrupt.rerun("nothing was measured or kept: the same command measures again")


@bench.command("engine")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option(
    "--compare",
    is_flag=True,
    help="Also measure the PyPI 'dominoes' package against the block preset "
    "(pip install 'capicua[bench]').",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=engine_bench.DEFAULT_SECONDS,
    show_default=True,
    help="Timed play per repetition and preset.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=engine_bench.DEFAULT_REPEAT,
    show_default=True,
    help="Repetitions; the medians are reported.",
)
@click.option(
    "--presets",
    metavar="A,B,...",
    default=None,
    help="Comma-separated preset names (default: every preset).",
)
def engine(as_json: bool, compare: bool, seconds: float, repeat: int, presets: str | None) -> None:
    """Random playouts through the engine: hands per second and moves per hand."""
    names = engine_bench.parse_presets(presets)
    if compare:
        engine_bench.dominoes_version()  # fail fast, before minutes of measuring
    show_progress = sys.stderr.isatty()
    total = engine_bench.measurement_count(names, repeat, compare)
    done = 0
    lines = MeasuredLines(total, repeat)  # off a terminal

    def progress(repetition: int, what: str) -> None:
        nonlocal done
        done += 1
        if show_progress:
            line = f"[{done}/{total}] repetition {repetition + 1}/{repeat}: {what}"
            click.echo(f"\r{line:<60}", err=True, nl=False)
        else:
            lines.started(repetition, what)

    report = engine_bench.run_engine_bench(
        names, seconds=seconds, repeat=repeat, compare=compare, progress=progress
    )
    if show_progress:
        click.echo("\r" + " " * 60 + "\r", err=True, nl=False)
    else:
        lines.finish()
    if as_json:
        _echo_json(report.to_json())
        return
    _print_report(report)


@bench.command("openspiel")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option(
    "--seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=0.5,
    show_default=True,
    help="Timed play per repetition, preset and way.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Repetitions; the medians are reported.",
)
@click.option(
    "--presets",
    metavar="A,B,...",
    default="block,iq-1v1",
    show_default=True,
    help="Comma-separated preset names.",
)
def openspiel(as_json: bool, seconds: float, repeat: int, presets: str) -> None:
    """The OpenSpiel wrapper (pip install 'capicua[openspiel]') against the engine's own
    playouts: hands per second each way, states and clones per second."""
    from capicua.bench import openspiel as openspiel_bench

    names = tuple(p.strip() for p in presets.split(",") if p.strip())
    report = openspiel_bench.run(names, seconds, repeat)  # BenchError: one line, exit 2
    if as_json:
        _echo_json(report)
        return
    table = _table("OpenSpiel wrapper against the engine (one-hand matches, medians)")
    for column in (
        "preset",
        "OpenSpiel hands/s",
        "engine hands/s",
        "ratio",
        "states/s",
        "clones/s",
    ):
        table.add_column(column, justify="left" if column == "preset" else "right")
    for name, row in report["presets"].items():
        table.add_row(
            name,
            f"{row['openspiel_hands_per_s']:,.0f}",
            f"{row['engine_hands_per_s']:,.0f}",
            f"{row['engine_over_openspiel']}x",
            f"{row['openspiel_states_per_s']:,}",
            f"{row['clones_per_s']:,}",
        )
    Console().print(table)


class MeasuredLines:
    """Progress off a terminal (a pipe, CI): a stderr line per finished measurement, in the
    style of the arena's ``match N/T: ...`` lines, so that a log shows the run is alive.

    The engine bench reports each measurement as it starts, so one is known finished when
    the next starts, and the last when :meth:`finish` is called after the run."""

    def __init__(self, total: int, repeat: int) -> None:
        self.total = total
        self.repeat = repeat
        self.done = 0
        self.current: tuple[int, str] | None = None

    def started(self, repetition: int, what: str) -> None:
        self.finish()
        self.current = (repetition, what)

    def finish(self) -> None:
        if self.current is None:
            return
        repetition, what = self.current
        self.current = None
        self.done += 1
        click.echo(
            f"measured {self.done}/{self.total}: {what} "
            f"(repetition {repetition + 1}/{self.repeat})",
            err=True,
        )


def _table(title: str) -> Table:
    """The benchmarks' table style: a plain title, a rule under the header, no padding."""
    return Table(box=box.SIMPLE_HEAD, title=Text(title), title_justify="left",
                 pad_edge=False, collapse_padding=True)  # fmt: skip


def _print_report(report: engine_bench.Report) -> None:
    console = Console(highlight=False, soft_wrap=False)
    table = _table(f"Random playouts (median of {report.repeat} x {report.seconds:g} s)")
    table.add_column("preset", no_wrap=True, style="bold")
    table.add_column("hands/s", justify="right", no_wrap=True)
    table.add_column("moves/hand", justify="right", no_wrap=True)
    table.add_column("moves/s", justify="right", no_wrap=True)
    for name, s in report.presets.items():
        hps = s.hands_per_s
        mph = s.moves_per_hand
        table.add_row(Text(name), f"{hps:,.0f}", f"{mph:.1f}", f"{hps * mph:,.0f}")
    console.print(table)
    if report.compare is not None:
        version, ours, theirs = report.compare
        console.print(
            f"compare ({report.repeat} interleaved repetitions, 4 seats in teams, double-six, "
            f"random legal moves): capicua {engine_bench.COMPARE_PRESET} "
            f"{ours.hands_per_s:,.0f} hands/s ({ours.moves_per_hand:.1f} moves/hand), "
            f"dominoes {version} {theirs.hands_per_s:,.0f} hands/s "
            f"({theirs.moves_per_hand:.1f} moves/hand): ratio {report.ratio:.2f}x",
            markup=False,
        )
    info = common.machine_info()
    console.print(
        f"{common.python_info()} on {info['cpu']} ({info['nproc']} CPUs), "
        f"{report.wall_seconds:.0f} s",
        markup=False,
    )


@bench.command("bots")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option("--hands", type=click.IntRange(min=1), default=None, metavar="N",
              help="Most hands per pair with hard (default 1000; see docs/bots.md).")  # fmt: skip
@click.option("--min-hands", type=click.IntRange(min=0), default=None, metavar="N",
              help="Hands before a pair may stop early (default 300).")  # fmt: skip
@click.option("--max-minutes", type=click.FloatRange(min=0), default=None, metavar="M",
              help="Start no new game after M minutes (default 7.5; 0: no limit).")  # fmt: skip
@click.option("--budget-ms", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="MS", help="hard's time per move (default 100).")  # fmt: skip
@click.option("--iterations", type=click.IntRange(min=1), default=None, metavar="N",
              help="hard's iterations per move, not a time budget (reproducible).")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="W",
              help="Processes (default 2).")  # fmt: skip
@click.option("--hands-per-match", type=click.IntRange(min=1), default=None, metavar="H",
              help="Hands played from each match's start (default 2).")  # fmt: skip
@click.option("--presets", metavar="A,B", default=None, help="Presets (default iq-1v1,block).")
@click.option("--pairs", "pair_names", metavar="A:B,...", default=None,
              help="Pairs, stronger first (default hard:medium,medium:easy,easy:random,"
              "hard:random); 'ceiling' is a player that sees every hand.")  # fmt: skip
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="First deal seed.")  # fmt: skip
def bots(
    as_json: bool,
    hands: int | None,
    min_hands: int | None,
    max_minutes: float | None,
    budget_ms: float | None,
    iterations: int | None,
    workers: int | None,
    hands_per_match: int | None,
    presets: str | None,
    pair_names: str | None,
    seed: int,
) -> None:
    """Duplicate matches between the built-in bots: hand win rate and points margin."""
    from capicua.bench import bots as bots_bench

    report = bots_bench.run_from_cli(
        hands=hands,
        min_hands=min_hands,
        budget_ms=budget_ms,
        iterations=iterations,
        workers=workers,
        hands_per_match=hands_per_match,
        presets=presets,
        pairs=pair_names,
        first_seed=seed,
        max_minutes=max_minutes,
        progress_to_stderr=True,
    )
    if as_json:
        _echo_json(report.to_json())
        return
    bots_bench.print_report(report)


@bench.command("server")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option("--concurrency", metavar="A,B,...", default=None,
              help="Concurrent block matches per level (default 1,64,512).")  # fmt: skip
@click.option("--seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="S", help="Timed window per level and repetition (default 10).")  # fmt: skip
@click.option("--repeat", type=click.IntRange(min=1), default=None, metavar="N",
              help="Repetitions; the medians are reported (default 3).")  # fmt: skip
@click.option("--rtt-samples", type=click.IntRange(min=1), default=None, metavar="N",
              help="Decision and echo round trips per repetition (default 2000).")  # fmt: skip
def server(
    as_json: bool,
    concurrency: str | None,
    seconds: float | None,
    repeat: int | None,
    rtt_samples: int | None,
) -> None:
    """The match server under load from a separate process: decision round trip against a
    raw grpc.aio echo, and decisions and matches per second at each concurrency level."""
    from capicua.bench import server as server_bench

    levels = server_bench.parse_concurrency(concurrency)
    repeat = repeat or server_bench.DEFAULT_REPEAT
    show_progress = sys.stderr.isatty()
    total = server_bench.measurement_count(levels, repeat)
    done = 0

    def progress(what: str) -> None:
        nonlocal done
        done += 1
        if show_progress:
            line = f"[{done}/{total}] {what}"
            click.echo(f"\r{line:<70}", err=True, nl=False)

    report = server_bench.run_server_bench(
        levels,
        seconds=seconds or server_bench.DEFAULT_SECONDS,
        repeat=repeat,
        rtt_samples=rtt_samples or server_bench.DEFAULT_RTT_SAMPLES,
        progress=progress,
    )
    if show_progress:
        click.echo("\r" + " " * 70 + "\r", err=True, nl=False)
    if as_json:
        _echo_json(report.to_json())
        return
    _print_server_report(report.to_json())


@bench.command("load")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option("--matches", type=click.IntRange(1, 5000), default=100, show_default=True,
              metavar="N", help="Concurrent matches (one that ends is replaced).")  # fmt: skip
@click.option("--seconds", type=click.FloatRange(1, 3600), default=30.0, show_default=True,
              metavar="T", help="How long to hold them.")  # fmt: skip
@click.option("--preset", default="block", show_default=True, help="The matches' preset.")
def load(as_json: bool, matches: int, seconds: float, preset: str) -> None:
    """A server process holding N concurrent matches for T seconds: finished matches,
    errors, decision latency, and the server's memory and descriptors over time."""
    from capicua.bench.hold import run_load_bench
    from capicua.engine.rules import load_preset

    load_preset(preset)  # an unknown preset is refused before anything starts
    show_progress = sys.stderr.isatty()

    def progress(what: str) -> None:
        if show_progress:
            click.echo(f"\r{what:<70}", err=True, nl=False)

    report = run_load_bench(matches, seconds, preset=preset, progress=progress).to_json()
    if show_progress:
        click.echo("\r" + " " * 70 + "\r", err=True, nl=False)
    if as_json:
        _echo_json(report)
        return
    rss, fds = report["rss_mb"], report["fds"]
    growth = rss["per_1000_matches_after_warmup"]
    click.echo(
        f"{report['matches']} concurrent {report['preset']} matches for {seconds:g} s: "
        f"{report['finished']:,} finished ({report['finished_per_s']:,.1f}/s), "
        f"{report['decisions']:,} decisions, {report['errors']} errors"
    )
    click.echo(
        f"decision latency p50 {report['decision_ms_p50']:.2f} ms, "
        f"p99 {report['decision_ms_p99']:.2f} ms"
    )
    click.echo(
        f"server RSS {rss['start']} MB at start, {rss['warm']} MB after "
        f"{report['warmup_s']:g} s of warm-up, {rss['end']} MB at the end "
        f"({'n/a' if growth is None else f'{growth:+.2f} MB per 1,000 matches'} after the "
        f"warm-up); fds {fds['start']} / {fds['warm']} / {fds['end']}"
    )
    for note in report["error_notes"]:
        click.echo(f"error: {note}")


def _cpu(us_per_decision: float | None) -> str:
    """The server's CPU time per decision as the tables show it."""
    return "unknown" if us_per_decision is None else f"{us_per_decision:,.0f} µs"


def _print_server_report(out: dict[str, Any]) -> None:
    console = Console(highlight=False, soft_wrap=False)
    title = (
        f"Server round trips over loopback gRPC "
        f"(median of {out['repeat']} x {out['rtt_samples']} samples, {out['preset']})"
    )
    rtt = _table(title)
    rtt.add_column("round trip", no_wrap=True, style="bold")
    rtt.add_column("p50 µs", justify="right", no_wrap=True)
    rtt.add_column("p99 µs", justify="right", no_wrap=True)
    rtt.add_row(
        Text(f"raw grpc.aio echo ({out['payload_bytes']} bytes)"),
        f"{out['raw_echo_rtt_us_p50']:,.0f}",
        f"{out['raw_echo_rtt_us_p99']:,.0f}",
    )
    rtt.add_row(
        Text("decision (answer -> next request)"),
        f"{out['decision_rtt_us_p50']:,.0f}",
        f"{out['decision_rtt_us_p99']:,.0f}",
    )
    rtt.add_row(Text("ratio"), f"{out['rtt_ratio_p50']:.2f}x", f"{out['rtt_ratio_p99']:.2f}x")
    console.print(rtt)
    console.print(
        f"server CPU per decision, one match at a time: {_cpu(out['server_cpu_us_per_decision'])}",
        markup=False,
    )
    title = (
        f"Throughput (median of {out['repeat']} x {out['seconds']:g} s; raw echo: "
        f"{out['raw_echo_per_s']:,.0f} round trips/s over {out['raw_echo_streams']} streams)"
    )
    levels = _table(title)
    for name in ("matches", "matches/s", "decisions/s", "vs echo", "rtt p50 µs",
                 "rtt p99 µs", "server CPU", "errors"):  # fmt: skip
        levels.add_column(name, justify="right", no_wrap=True)
    for c, row in out["concurrency"].items():
        levels.add_row(
            c,
            f"{row['matches_per_s']:,.1f}",
            f"{row['decisions_per_s']:,.0f}",
            f"{row['vs_raw_echo']:.2f}x",
            f"{row['decision_rtt_us_p50']:,.0f}",
            f"{row['decision_rtt_us_p99']:,.0f}",
            _cpu(row["server_cpu_us_per_decision"]),
            str(row["errors"]),
        )
    console.print(levels)
    machine = out["machine"]
    console.print(
        f"{out['decisions_per_match']:.1f} decisions per finished match; errors: {out['errors']}; "
        f"{out['python']} on {machine['cpu']} ({machine['nproc']} CPUs), {out['wall_s']:.0f} s",
        markup=False,
    )


def _dask_arena(
    as_json: bool,
    concurrency: str | None,
    games: int | None,
    repeat: int | None,
    workers: str | None,
    modes: tuple[str, ...],
) -> None:
    from capicua.arena.cluster import require_dask
    from capicua.bench import arena as arena_bench
    from capicua.bench import server as server_bench

    require_dask()
    if modes:
        raise click.UsageError("--mode goes with --backend local")
    counts = tuple(server_bench.parse_concurrency(workers, "--workers")) if workers else None
    levels = tuple(server_bench.parse_concurrency(concurrency)) if concurrency else None
    if levels is not None and len(levels) != 1:
        raise click.UsageError("--backend dask takes one --concurrency (matches per worker)")
    report = arena_bench.run_backends(
        workers=counts or arena_bench.DEFAULT_WORKERS,
        games=games or arena_bench.DEFAULT_GAMES,
        repeat=repeat or arena_bench.DEFAULT_REPEAT,
        concurrency=levels[0] if levels else arena_bench.DASK_CONCURRENCY,
    )
    if as_json:
        _echo_json(report)
        return
    console = Console(highlight=False, soft_wrap=False)
    table = _table("Arena: local backend and dask workers, 4 random bots on block (medians)")
    for name in ("backend", "matches/s", "decisions/s", "vs local"):
        table.add_column(name, justify="right", no_wrap=True)
    base = report["local"]["matches_per_s"]
    rows = [("local", report["local"])]
    rows += [(f"dask, {n} worker(s)", r) for n, r in report["dask"].items()]
    for label, rate in rows:
        ratio = rate["matches_per_s"] / base if base else 0.0
        table.add_row(
            label, f"{rate['matches_per_s']:,.2f}", f"{rate['decisions_per_s']:,.0f}",
            f"{ratio:.2f}x",
        )  # fmt: skip
    console.print(table)


@bench.command("ladder")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option("--entries", type=click.IntRange(1, 10_000), default=1000, show_default=True,
              metavar="N", help="Cheap bots that join the ladder (one process).")  # fmt: skip
@click.option("--seconds", type=click.FloatRange(1, 3600), default=60.0, show_default=True,
              metavar="T", help="How long the ladder plays once they joined.")  # fmt: skip
@click.option("--concurrency", type=click.IntRange(1, 512), default=16, show_default=True,
              help="The ladder's sets in flight.")  # fmt: skip
@click.option("--pages", "pages_stored", type=click.IntRange(100, 10_000_000), metavar="N",
              help="Instead: the leaderboard's pages over a ladder of N stored matches "
              "(e.g. 100000): the first table, each page's time, the export.")  # fmt: skip
def ladder(
    as_json: bool, entries: int, seconds: float, concurrency: int, pages_stored: int | None
) -> None:
    """A server's ladder with N connected entries: matches per second, the matchmaker's
    decision time (a choice, a roster read) and the server's memory; with --pages, its
    leaderboard's page times over a big store (docs/ladder.md)."""
    from capicua.bench.ladder import run_ladder_bench

    if pages_stored is not None:
        _ladder_pages(pages_stored, as_json)
        return

    show_progress = sys.stderr.isatty()

    def progress(what: str) -> None:
        if show_progress:
            click.echo(f"\r{what:<70}", err=True, nl=False)

    report = run_ladder_bench(entries, seconds, concurrency=concurrency, progress=progress)
    if show_progress:
        click.echo("\r" + " " * 70 + "\r", err=True, nl=False)
    out = report.to_json()
    if as_json:
        _echo_json(out)
        return
    rss = out["server_rss_mb"]
    click.echo(
        f"{entries} entries on {out['preset']}, {seconds:g} s: {out['matches']} matches "
        f"({out['matches_per_s']:g}/s), {out['rated_sets']} rated sets stored, "
        f"{out['errors']} errors"
    )
    click.echo(
        f"matchmaker: a choice {out['choose_ms_p50']:.2f} ms, a roster read "
        f"{out['roster_read_ms_p50']:.2f} ms (medians)"
    )
    click.echo(
        f"server RSS {rss.get('start')} MB at start, {rss.get('joined')} MB with the entries "
        f"joined, {rss.get('end')} MB at the end"
    )
    for note in out["error_notes"]:
        click.echo(f"error: {note}")


def _ladder_pages(stored: int, as_json: bool) -> None:
    from capicua.bench.ladder_pages import run_pages_bench

    report = run_pages_bench(stored)
    if as_json:
        _echo_json(report)
        return
    click.echo(
        f"{report['matches']:,} stored matches (built in {report['build_s']} s): the first "
        f"table in {report['first_snapshot_s']} s"
    )
    for name, t in report["pages"].items():
        click.echo(f"{name}: {t['median_ms']} ms median, {t['max_ms']} ms at most")
    export = report["export"]
    click.echo(f"export: {export['lines']:,} lines in {export['s']} s")


@bench.command("arena")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option("--concurrency", metavar="A,B,...", default=None,
              help="Matches in flight per level (default 1,2,8).")  # fmt: skip
@click.option("--games", type=click.IntRange(min=1), default=None, metavar="N",
              help="Duplicate sets per pairing: 12 matches each (default 4).")  # fmt: skip
@click.option("--repeat", type=click.IntRange(min=1), default=None, metavar="N",
              help="Repetitions; the medians are reported (default 3).")  # fmt: skip
@click.option("--mode", "modes", type=click.Choice(["in-process", "grpc"]), multiple=True,
              help="Measure only this mode (repeatable; default both).")  # fmt: skip
@click.option("--backend", type=click.Choice(["local", "dask"]), default="local",
              show_default=True,
              help="dask: the local backend against dask on a LocalCluster of each --workers "
              "count (docs/scaling.md).")  # fmt: skip
@click.option("--workers", metavar="A,B,...", default=None,
              help="dask: worker counts (default 1,2).")  # fmt: skip
def arena(
    as_json: bool,
    concurrency: str | None,
    games: int | None,
    repeat: int | None,
    modes: tuple[str, ...],
    backend: str,
    workers: str | None,
) -> None:
    """Finished matches per second of a round robin of four random bots on block, in-process
    (the engine in worker processes) and over gRPC (the real arena: server, bot processes,
    SQLite), at each concurrency; see docs/arena.md. With --backend dask: matches and
    decisions per second of the local backend and of dask at each worker count."""
    from capicua.bench import arena as arena_bench
    from capicua.bench import server as server_bench

    if backend == "dask":
        _dask_arena(as_json, concurrency, games, repeat, workers, modes)
        return
    if workers is not None:
        raise click.UsageError("--workers goes with --backend dask")

    levels = (
        tuple(server_bench.parse_concurrency(concurrency))
        if concurrency is not None
        else arena_bench.DEFAULT_CONCURRENCY
    )
    report = arena_bench.run(
        concurrency=levels,
        games=games or arena_bench.DEFAULT_GAMES,
        repeat=repeat or arena_bench.DEFAULT_REPEAT,
        modes=modes or ("in-process", "grpc"),
    )
    if as_json:
        _echo_json(report)
        return
    console = Console(highlight=False, soft_wrap=False)
    title = (
        f"Arena: round robin of 4 random bots on {report['preset']}, "
        f"median of {report['repeat']} runs"
    )
    table = _table(title)
    for name in ("mode", "concurrency", "matches", "matches/s", "runs", "vs in-process"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in report["rows"]:
        ratio = row.get("ratio_to_in_process")
        table.add_row(
            row["mode"],
            str(row["concurrency"]),
            str(row["matches"]),
            f"{row['matches_per_s']:,.2f}",
            " ".join(f"{r:g}" for r in row["runs"]),
            f"{ratio:.3f}x" if ratio is not None else "",
        )
    console.print(table)
    console.print(f"{report['seconds']:.0f} s in all", markup=False)


@bench.command("experiment")
@click.option("--json", "as_json", is_flag=True, help="Print one compact JSON object (last line).")
@click.option("--hands", type=click.IntRange(min=1), default=None, metavar="N",
              help="Pairs of hands with random bots (easy: a tenth; the --skill run: "
                   "a 200th, at least 1; default 4000).")  # fmt: skip
@click.option("--repeat", type=click.IntRange(min=1), default=None, metavar="N",
              help="Repetitions; the medians are reported (default 3).")  # fmt: skip
def experiment(as_json: bool, hands: int | None, repeat: int | None) -> None:
    """Hands per second of an in-process A/B experiment on block (unit hand, both arms
    counted) with random and with easy bots, against the engine's random playouts in the
    same run, and pairs per second of a --skill experiment with hard against random on
    iq-1v1; see docs/benchmarks.md."""
    from capicua.bench import experiment as exp_bench

    report = exp_bench.run(hands or exp_bench.DEFAULT_HANDS, repeat or exp_bench.DEFAULT_REPEAT)
    if as_json:
        _echo_json(report)
        return
    console = Console(highlight=False, soft_wrap=False)
    table = _table(
        f"Experiment A/B on {report['preset']} at unit hand, median of {report['repeat']} runs"
    )
    for name in ("measured", "hands/s", "runs"):
        table.add_column(name, justify="right", no_wrap=True)
    rows = (
        ("engine", "engine random playouts", "engine_random_hands_per_s"),
        ("random", "experiment, random", "experiment_random_hands_per_s"),
        ("easy", "experiment, easy", "experiment_easy_hands_per_s"),
    )
    for key, label, field in rows:
        rate = report[field]
        runs = " ".join(f"{r:,.0f}" for r in report["runs"][key])
        table.add_row(label, f"{rate:,.0f}", runs)
    console.print(table)
    skill = report["skill"]
    runs = " ".join(f"{r:.2f}" for r in report["runs"]["skill"])
    console.print(
        f"experiment ab --base {skill['preset']} --skill --skill-bots "
        f"{','.join(skill['skill_bots'])}, {skill['pairs']} pairs: "
        f"{report['experiment_skill_pairs_per_s']:.2f} pairs/s (runs: {runs})",
        markup=False,
    )
    goal = "met" if report["goal_met"] else "not met"
    console.print(
        f"engine / random experiment: {report['ratio_engine_to_random']:.2f}x "
        f"(goal <= {report['goal_ratio']:g}x: {goal})",
        markup=False,
    )
