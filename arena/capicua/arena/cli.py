"""``capicua arena``: run tournaments, print standings, write reports, run SPRTs.

Every ``capicua arena`` command is here; the work is in the modules they call
(:mod:`~capicua.arena.runner`, :mod:`~capicua.arena.standings`, :mod:`~capicua.arena.report`,
:mod:`~capicua.arena.sprt_runner`)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import click
from rich.console import Console, RenderableType

from capicua.bots import LEVELS
from capicua.common import interrupt
from capicua.common.errors import CapicuaError
from capicua.engine.rules import load_preset

from . import standings
from .backend import LOCAL, Backend
from .config import Tournament, load_tournament, tournament_from_mapping
from .errors import SAME_COMMAND, rerun_in
from .options import (
    CONCURRENCY_RANGE,
    SEED,
    backend_choice,
    backend_from,
    backend_options,
    play_options,
    results_location,
)
from .output import Display, SilentDisplay, disqualified_lines
from .report import MAX_REPLAYS, write_report
from .run import Summary, run_to_end
from .schedule import MatchSpec
from .sprt import DEFAULT_ELO0, DEFAULT_ELO1
from .sprt_runner import (
    BASE,
    CANDIDATE,
    DEFAULT_MAX_PAIRS,
    MODELS,
    Scoreboard,
    SprtConfig,
    SprtError,
    build_run,
    header,
    parse_bot,
    parse_options,
    run_sprt,
    status_dict,
    status_line,
    verdict,
)
from .store import Results, Where, location

#: Bootstrap samples for the live display's intervals (the final table uses the default).
LIVE_SAMPLES = 200


@click.group()
def arena() -> None:
    """Round-robin and gauntlet tournaments between bots, with replays and ratings."""


def _play(
    tournament: Tournament,
    out: Path,
    quiet: bool,
    as_json: bool,
    *,
    report_every: int = 0,
    recover: bool = False,
    backend: Backend = LOCAL,
    again: str = SAME_COMMAND,
) -> Summary:
    """Run ``tournament`` into ``out`` with the right display; print the standings. Exit
    1 when a bot was disqualified (fastchess's convention) unless ``recover``; raise
    :class:`~capicua.common.interrupt.Interrupted` when interrupted (``again``: the command
    that resumes, when it is not the same one)."""
    interrupt.rerun(lambda: rerun_in(out, again))
    console = Console(stderr=True)
    display: Display = SilentDisplay()
    refresh = None
    if not (quiet or as_json):

        def live_table(r: Results) -> RenderableType:
            return standings.render_live(standings.compute(r, samples=LIVE_SAMPLES))

        if console.is_terminal:
            from .live import LiveDisplay

            live = LiveDisplay(tournament.name, live_table)
            display, refresh = live, live.refresh
        else:
            from .live import LineDisplay

            lines = LineDisplay(live_table, report_every=report_every)
            display, refresh = lines, lines.refresh
    runner = backend.arena(tournament, out, display, on_progress=refresh)
    summary = run_to_end(runner)
    if summary.interrupted and not summary.finished:
        raise interrupt.Interrupted(rerun_in(out, again))
    results = Results.open_existing(out)
    try:
        table = standings.compute(results)
    finally:
        results.close()
    if as_json:
        click.echo(
            standings.to_json(table, complete=summary.complete, matches_planned=summary.total)
        )
    elif not quiet:
        standings.print_standings(table)
        if not summary.complete:
            click.echo(f"incomplete: {summary.finished:,} of {summary.total:,} matches finished")
        for line in disqualified_lines(summary.disqualified):
            click.echo(line)
    if summary.interrupted:
        raise interrupt.Interrupted(f"{_summary_parts(summary)}: {again} resumes, in {out}")
    if not quiet:
        console.print(_summary_line(summary, out))
    if summary.disqualified and not recover:
        if not quiet:
            console.print("exit 1: a bot was disqualified (--recover exits 0 anyway)")
        sys.exit(1)
    return summary


def _summary_line(s: Summary, out: Path) -> str:
    return f"done: {_summary_parts(s)}; results in {out}"


def _summary_parts(s: Summary) -> str:
    """``12 matches played; 3 abandoned (played again on resume)``: what a run did."""
    parts = [f"{s.played} matches played"]
    if s.already:
        parts.append(f"{s.already} kept from an earlier run")
    if s.abandoned:
        parts.append(f"{s.abandoned} abandoned (played again on resume)")
    if s.skipped:
        parts.append(f"{s.skipped} skipped (disqualified: {', '.join(s.disqualified)})")
    return "; ".join(parts)


@arena.command("run")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (default: FILE's stem plus '-results').")  # fmt: skip
@click.option("--games", type=click.IntRange(1, 1_000_000),
              help="Override the file's games (duplicate sets per pairing).")  # fmt: skip
@click.option("--concurrency", type=CONCURRENCY_RANGE,
              help="Override the file's concurrency (matches in flight).")  # fmt: skip
@click.option("--seed", type=SEED, help="Override the file's seed.")
@click.option("--report-every", type=click.IntRange(min=0), default=0, metavar="N",
              help="Off a terminal: standings every N matches (0: at the end only).")  # fmt: skip
@click.option("--recover", is_flag=True,
              help="Exit 0 even when a bot was disqualified (default: exit 1).")  # fmt: skip
@click.option("--quiet", is_flag=True, help="No live display and no tables.")
@click.option("--json", "as_json", is_flag=True,
              help="No live display; print the standings as JSON (last line).")  # fmt: skip
@backend_options
def run_cmd(
    file: Path,
    out: Path | None,
    games: int | None,
    concurrency: int | None,
    seed: int | None,
    report_every: int,
    recover: bool,
    quiet: bool,
    as_json: bool,
    backend: str,
    scheduler: str | None,
    workers: int | None,
) -> None:
    """Play the tournament of FILE (TOML; see docs/arena.md).

    Running the same command again resumes: finished matches are kept, matches that were in
    progress are played again from their start. Ctrl-C stops cleanly (exit code 130). A
    different --games or --seed changes the results, so it needs a new --out. With
    --backend dask the matches are played on a dask cluster (docs/scaling.md); a run
    resumes on either backend."""
    where = backend_from(backend, scheduler, workers)
    tournament = load_tournament(file)
    if games is not None:
        tournament = dataclasses.replace(tournament, games=games)
    if concurrency is not None:
        tournament = dataclasses.replace(tournament, concurrency=concurrency)
    if seed is not None:
        tournament = dataclasses.replace(tournament, seed=seed)
    _play(
        tournament,
        out or Path(f"{file.stem}-results"),
        quiet,
        as_json,
        report_every=report_every,
        recover=recover,
        backend=where,
    )


def node_example() -> Path | None:
    """The Node example bot of a source checkout, when node can run it (else None)."""
    root = Path(__file__).resolve().parents[3]
    example = root / "clients" / "node" / "examples" / "random_bot.js"
    node = shutil.which("node")
    if node is None or not example.is_file():
        return None
    if not (root / "clients" / "node" / "node_modules" / "@grpc" / "grpc-js").is_dir():
        return None
    return example


#: Duplicate sets per pairing in the demo: with fewer, its ranking of hard, medium and easy
#: is mostly the luck of the deals (their edges are a few points of hand win rate).
DEMO_GAMES = 6


def demo_tournament(node: Path | None, games: int = DEMO_GAMES) -> Tournament:
    """The demo: the four built-in bots (and the Node example) on `iq-1v1` to 50 points."""
    bots = {name: f"builtin:{name}" for name in LEVELS}
    if node is not None:
        bots["node-random"] = f"cmd:node {node}"
    data = {
        "name": "demo",
        "preset": "iq-1v1",
        "overrides": ["target=50"],
        "format": "round-robin",
        "games": games,
        "on_timeout": "forfeit",
        "matches": {"seed": 1, "concurrency": 4, "time_limit_ms": 3000},
        "bots": bots,
    }
    return tournament_from_mapping(data, Path.cwd())


@arena.command("demo")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (default: a new ./arena-demo-N).")  # fmt: skip
@click.option("--quiet", is_flag=True, help="No live display and no tables.")
@click.option("--json", "as_json", is_flag=True, help="Print the standings as JSON (last line).")
@click.option("--games", type=click.IntRange(1, 100), default=DEMO_GAMES, show_default=True,
              help="Duplicate sets per pairing (fewer: quicker, noisier).")  # fmt: skip
def demo_cmd(out: Path | None, quiet: bool, as_json: bool, games: int) -> None:
    """A small round robin of the built-in bots (plus the Node example bot when node and its
    packages are installed) on an embedded server, about a minute; prints the standings."""
    node = node_example()
    if out is None:
        n = 1
        while Path(f"arena-demo-{n}").exists():
            n += 1
        out = Path(f"arena-demo-{n}")
    # the same command would make a new directory: the one that resumes names this one
    again = f"capicua arena demo --out {out}" + (f" --games {games}" if games != DEMO_GAMES else "")
    demo_out = out
    interrupt.rerun(lambda: rerun_in(demo_out, again))
    if not (quiet or as_json):
        note = (
            "with the Node example bot"
            if node
            else "(node or clients/node/node_modules missing: no Node bot)"
        )
        click.echo(f"capicua arena demo {note}; results in {out}", err=True)
    _play(demo_tournament(node, games), out, quiet, as_json, again=again)
    if not (quiet or as_json):
        click.echo(
            f"next: capicua arena report {out}   (an HTML report with a replay viewer)", err=True
        )


@arena.command("standings")
@click.argument("directory", metavar="DIR", callback=results_location)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (last line).")
def standings_cmd(directory: Where, as_json: bool) -> None:
    """Print the standings of a tournament directory: Elo with a 95% interval over
    duplicate sets, openskill with more than two sides, a crosstable and error counts.
    DIR may be a ladder in PostgreSQL (postgresql://USER@HOST/DB#LADDER_ID)."""
    s = standings.load(directory)
    if as_json:
        click.echo(standings.to_json(s))
    else:
        standings.print_standings(s)


@arena.command("report")
@click.argument("directory", metavar="DIR")
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The HTML file to write (default: DIR/report.html).",
)
@click.option(
    "--max-replays",
    type=click.IntRange(min=0),
    default=MAX_REPLAYS,
    show_default=True,
    help="Replays embedded in the page for the replay viewer.",
)
def report_cmd(directory: str, out: Path | None, max_replays: int) -> None:
    """Write the HTML report of a tournament directory: standings, crosstable, ratings,
    errors and a replay viewer, in one self-contained file; of an SPRT directory, the test:
    verdict, LLR path against its bounds, Elo and nElo, pentanomial, the sets. Prints the
    path written. DIR may be a ladder in PostgreSQL (postgresql://USER@HOST/DB#LADDER_ID,
    with --out)."""
    from .sprt_report import is_sprt, write_sprt_report

    where = location(directory)
    if isinstance(where, Path) and is_sprt(where):
        click.echo(str(write_sprt_report(where, out)))
    else:
        click.echo(str(write_report(where, out, max_replays)))


@arena.command("sprt")
@click.option(
    "--base",
    "base",
    required=True,
    metavar="SPEC",
    help="The bot to beat: a built-in name or an arena spec (python:..., cmd:...).",
)
@click.option("--candidate", "candidate", required=True, metavar="SPEC", help="The new bot.")
@click.option("--rules", "preset", required=True, metavar="PRESET", help="A preset with two sides.")
@click.option(
    "--set", "overrides", multiple=True, metavar="KNOB=VALUE", help="Override a knob (TOML value)."
)
@click.option(
    "--elo0", type=float, default=DEFAULT_ELO0, show_default=True, help="H0: Elo difference."
)
@click.option(
    "--elo1", type=float, default=DEFAULT_ELO1, show_default=True, help="H1: Elo difference."
)
@click.option("--alpha", type=float, default=0.05, show_default=True, help="False H1 rate.")
@click.option("--beta", type=float, default=0.05, show_default=True, help="False H0 rate.")
@click.option(
    "--model",
    type=click.Choice(MODELS),
    default="normalized",
    show_default=True,
    help="The Elo model of elo0/elo1.",
)
@click.option(
    "--max-pairs",
    type=int,
    default=DEFAULT_MAX_PAIRS,
    show_default=True,
    help="Stop without a decision after this many pairs.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Results directory; run again to resume.",
)
@click.option("--seed", type=SEED, default=1, show_default=True)
@click.option(
    "--base-option",
    "base_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option of the base bot: a built-in's (hard plays 200 iterations by default) or "
    "a python: class's constructor's.",
)
@click.option(
    "--candidate-option",
    "candidate_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option of the candidate bot (as --base-option).",
)
@play_options
@click.option("--server", metavar="HOST:PORT", help="Play on this server (remote: bots).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (last line).")
@click.option("--quiet", is_flag=True, help="Only the verdict.")  # fmt: skip
@backend_choice
def sprt_cmd(base: str, candidate: str, preset: str, overrides: tuple[str, ...], elo0: float,
             elo1: float, alpha: float, beta: float, model: str, max_pairs: int, out: Path,
             seed: int, base_options: tuple[str, ...], candidate_options: tuple[str, ...],
             workers: int, concurrency: int, time_limit_ms: int, server: str | None,
             as_json: bool, quiet: bool, backend: str, scheduler: str | None) -> None:  # fmt: skip
    """Is CANDIDATE stronger than BASE? Play duplicate sets (one deal, sides swapped) until
    the sequential probability ratio test accepts H1 (candidate better by elo1) or H0 (not
    better than elo0); see docs/regression-testing.md. With --backend dask the sets are
    played on a dask cluster (--workers: its LocalCluster's size; docs/scaling.md)."""
    where_to = backend_from(
        backend, scheduler, workers if backend == "dask" and scheduler is None else None
    )
    try:
        ruleset = load_preset(preset, overrides)
    except CapicuaError as e:
        raise SprtError(f"--rules/--set: {e}") from None
    base_bot = parse_bot("--base", base, BASE)
    cand_bot = parse_bot("--candidate", candidate, CANDIDATE)
    options = {
        BASE: parse_options("--base-option", base_options, base_bot),
        CANDIDATE: parse_options("--candidate-option", candidate_options, cand_bot),
    }
    run = build_run(
        base=base_bot, candidate=cand_bot, preset=preset, overrides=overrides, ruleset=ruleset,
        test=SprtConfig(elo0, elo1, alpha, beta, model), max_pairs=max_pairs, seed=seed,
        concurrency=concurrency, workers=workers, time_limit_ms=time_limit_ms, server=server,
        base_dir=Path.cwd(), options=options,
    )  # fmt: skip
    console = Console(stderr=True, soft_wrap=True, highlight=False)
    live = not (as_json or quiet)
    interrupt.rerun(lambda: rerun_in(out))
    if live:
        where = "in-process" if run.in_process else "over the protocol (embedded server)"
        console.print(header(run, where, out))
    lines = (lambda board: StatusLines(console, board)) if live else None
    result = run_sprt(run, out, lines, backend=where_to)
    if result.interrupted and not result.board.pairs:
        raise interrupt.Interrupted(rerun_in(out))
    if as_json:
        click.echo(json.dumps(status_dict(result, run), separators=(",", ":")))
    elif not quiet:
        console.print(status_line(result.board))
    if not as_json:
        for line in verdict(result, run):
            click.echo(line)
    if result.interrupted:
        pairs = f"{result.board.pairs:,} pairs counted"
        raise interrupt.Interrupted(f"{pairs}: {SAME_COMMAND} resumes, in {out}")
    if result.stopped:
        sys.exit(1)


class StatusLines(SilentDisplay):
    """What an SPRT shows while it plays: its status line (:func:`status_line`) as sets are
    counted, at most once a second on a terminal and every 10 s off one."""

    def __init__(self, console: Console, board: Scoreboard) -> None:
        self.console = console
        self.board = board
        self.every = 1.0 if console.is_terminal else 10.0
        self.last = 0.0

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        if time.monotonic() - self.last >= self.every:
            self.last = time.monotonic()
            self.console.print(status_line(self.board))
