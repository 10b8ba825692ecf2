"""``capicua experiment``: A/B experiments and knob sweeps on rules, their results and
reports (see docs/regression-testing.md)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress

from capicua.common import interrupt

from ..backend import LOCAL, Backend
from ..errors import SAME_COMMAND, rerun_in
from ..options import SEED, backend_choice, backend_from, backend_options, play_options
from ..schedule import MatchSpec
from ..store import COUNTED, SKIPPED
from . import analysis
from .config import (
    DEFAULT_SKILL,
    DEFAULT_TRACE,
    PLURAL,
    Experiment,
    ExperimentError,
    build,
    load_experiment,
    make_arm,
    parse_bot_options,
    parse_skill,
    parse_trace,
    split_list,
    sweep_arms,
    unmeasured_knobs,
)
from .legacy import StoreError
from .play import RunSummary, run_experiment

F = TypeVar("F", bound=Callable[..., Any])
LINE_EVERY_S = 10.0  # off a terminal: a progress line at most this often


class ConsoleProgress:
    """A :class:`~capicua.arena.output.Display`: a progress bar on a terminal; off one (a
    pipe, CI), a line every few seconds with the time elapsed and an estimate of the time
    left. It counts ``unit``: matches, or pairs of ``per`` matches (an in-process run
    commits whole pairs, thousands a second). ``header``: what is printed once the
    directory is known to be free for the experiment (or to hold it), never before an
    error that refuses it."""

    def __init__(
        self,
        console: Console,
        header: Sequence[tuple[str, str]] = (),
        unit: str = "pairs",
        per: int = 1,
    ) -> None:
        self.console = console
        self.header = header
        self.unit, self.per = unit, per
        self.bar: RichProgress | None = None
        self.task: Any = None
        self.total = self.done = self._first = self._shown = 0
        self.skipped = 0  # units that will not be played: a bot was disqualified
        self._matches = self._skipped_matches = 0  # counted as they come
        self._last = self._start = self._drawn = 0.0

    def begin(self, total: int, done: int, skipped: int = 0) -> None:
        for text, style in self.header:
            self.console.print(text, style=style or None)
        self.total, self.done = total // self.per, done // self.per
        self._first = self._shown = self.done
        self._matches = done
        self._start = time.monotonic()
        if done:
            self.console.print(
                f"resuming: {self.done} of {self.total} {self.unit} already recorded"
            )
        if self.console.is_terminal:
            self.bar = RichProgress(
                TextColumn("[bold]playing"), BarColumn(), MofNCompleteColumn(),
                TextColumn(self.unit), TextColumn("{task.fields[skipped]}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=self.console, transient=True,
            )  # fmt: skip
            self.task = self.bar.add_task("play", total=self.total, completed=self.done, skipped="")
            self.bar.start()
        self._last = time.monotonic()
        self._skip(skipped)

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        # a skipped match (its bot is disqualified) is counted apart, not as played, and
        # said once, by the disqualification
        if termination == SKIPPED:
            self._skip(1)
            return
        self._matches += 1
        self.done = self._matches // self.per
        if termination not in COUNTED:
            self.note(f"{spec.key}: {termination}: {reason}")
        self._show()

    def _skip(self, matches: int) -> None:
        if not matches:
            return
        self._skipped_matches += matches
        self.skipped = self._skipped_matches // self.per
        if self.bar is not None:
            self.bar.update(self.task, skipped=f"{self.skipped:,} skipped")
        self._show()

    def _show(self, *, last: bool = False) -> None:
        """The bar at most ten times a second; off a terminal, a line every
        :data:`LINE_EVERY_S`, and one when nothing is left."""
        now = time.monotonic()
        if self.bar is not None:
            if last or now - self._drawn >= 0.1:
                self.bar.update(self.task, completed=self.done)
                self._drawn = now
            return
        if now - self._last >= LINE_EVERY_S or (self._left == 0 and self._shown != self.done):
            self._last, self._shown = now, self.done
            self.console.print(self.line(now - self._start))

    @property
    def _left(self) -> int:
        return self.total - self.done - self.skipped

    def line(self, elapsed: float) -> str:
        """``1,200/5,000 pairs (24%), 1m 10s elapsed, about 3m 42s left``: the time left
        from this run's pace (pairs recorded by an earlier run do not count). Units that
        will not be played are counted apart (``2/40 matches (5%), 38 skipped: a bot was
        disqualified``), never as done."""
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        text = f"{self.done:,}/{self.total:,} {self.unit}{pct}"
        if self.skipped:
            text += f", {self.skipped:,} skipped: a bot was disqualified"
        text += f", {_duration(elapsed)} elapsed"
        rate = (self.done - self._first) / elapsed if elapsed > 0 else 0.0
        if self._left > 0 and rate > 0:
            text += f", about {_duration(self._left / rate)} left"
        return text

    def note(self, text: str) -> None:
        self.console.print(text, style="yellow")

    def end(self) -> None:
        if self.bar is not None:
            self._show(last=True)
            self.bar.stop()
            self.bar = None


def _duration(seconds: float) -> str:
    """``2h 05m``, ``3m 42s``, ``12s``."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


@click.group()
def experiment() -> None:
    """A/B experiments and knob sweeps on rules: the same deals under two or more rulesets,
    with paired differences and 95% intervals."""


def _common(fn: F) -> F:
    """The options every experiment-running command shares."""
    options = [
        click.option("--bots", "bots", default="random", show_default=True,
                     metavar="SPEC,...",
                     help="One bot for every seat, one per side or one per seat: a built-in "
                          "name (random, easy, medium, hard) or an arena spec "
                          "(python:MODULE:CLASS, cmd:..., stdio:..., remote:ID)."),
        click.option("--unit", type=click.Choice(["hand", "match"]),
                     help="hand: each deal played as one hand under every ruleset (default); "
                          "match: whole matches paired by seed."),
        click.option("--hands", type=int, help="Pairs of hands (unit hand; default 1000)."),
        click.option("--matches", type=int, help="Pairs of matches (unit match; default 100)."),
        click.option("--seed", type=SEED, default=1, show_default=True,
                     help="The experiment's seed: the same seed plays the same deals."),
        click.option("--bot-option", "bot_options", multiple=True, metavar="BOT.OPTION=VALUE",
                     help="An option of a built-in bot, e.g. hard.iterations=400 (hard plays "
                          "200 iterations a decision by default here, so runs repeat)."),
        play_options,
        click.option("--server", metavar="HOST:PORT",
                     help="Play on this server (needed for remote: bots; default: embedded)."),
        backend_choice,
        click.option("--name", help="A name for the experiment (shown in its report)."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path),
                     help="Results directory (default: a new ./experiment-N); give an existing "
                          "one to resume it."),
        click.option("--json", "as_json", is_flag=True,
                     help="No tables; print the result as one JSON object (last line)."),
        click.option("--quiet", is_flag=True, help="No progress and no tables."),
        click.option("--all", "show_all", is_flag=True,
                     help="Also list the metrics that are 0 in every pair of both arms."),
        p_values_option,
        click.option("--skill", is_flag=True,
                     help="Also measure skill against luck: each arm's deals played by a "
                          "stronger bot against a weaker one, the sides rotated, how much "
                          "choice the rules leave and how early a match is decided "
                          "(docs/regression-testing.md)."),
        click.option("--skill-bots", "skill_bots", default=DEFAULT_SKILL, show_default=True,
                     metavar="STRONG:WEAK,...",
                     help="The (stronger, weaker) bots of --skill: built-in bots as "
                          "hard:random, any bot specs as 'python:mybot:Strong vs random' "
                          "(then the games are played over the protocol)."),
        click.option("--skill-trace", "skill_trace", is_flag=False, flag_value=DEFAULT_TRACE,
                     default=None, metavar="LEVEL,...",
                     help="A skill trace: each level played against the level below on "
                          "every deal, the sides rotated, weakest first (alone: "
                          f"{DEFAULT_TRACE}; any bot specs). Measures what --skill does, "
                          "without --skill-bots' pairings unless --skill is given too."),
    ]  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn


p_values_option = click.option(
    "--p-values", "p_values", is_flag=True,
    help="Add the p-values to the table: raw, and adjusted by Holm over every comparison.",
)  # fmt: skip


def _new_dir(stem: str) -> Path:
    n = 1
    while Path(f"{stem}-{n}").exists():
        n += 1
    return Path(f"{stem}-{n}")


def _bots(text: str) -> list[str]:
    return [b.strip() for b in text.split(",") if b.strip()]


def _execute(
    exp: Experiment,
    out: Path | None,
    as_json: bool,
    quiet: bool,
    show_all: bool,
    backend: Backend = LOCAL,
    p_values: bool = False,
) -> None:
    """Run (or resume) ``exp`` into ``out`` (None: a new ./experiment-N) and print its
    result; raise :class:`~capicua.common.interrupt.Interrupted` when interrupted."""
    # without --out the same command makes a new ./experiment-N: it resumes with --out
    again = SAME_COMMAND if out is not None else None
    out = out or _new_dir("experiment")
    again = again or f"{SAME_COMMAND} with --out {out}"
    interrupt.rerun(lambda: rerun_in(out, again))
    console = Console(stderr=True, soft_wrap=True, highlight=False)
    progress = None
    if not (as_json or quiet):
        # in-process a pair's games are committed together: count pairs; over the
        # protocol each match takes its time: count matches
        unit, per = ("pairs", len(exp.plays)) if exp.in_process else ("matches", 1)
        progress = ConsoleProgress(console, _header(exp, out, backend), unit, per)
    summary = run_experiment(exp, out, progress, backend=backend)
    if summary.interrupted and not (summary.already or summary.played):
        raise interrupt.Interrupted(rerun_in(out, again))
    result = _analysis(out)
    _print_result(result, as_json, quiet, show_all, p_values)
    if summary.interrupted:
        raise interrupt.Interrupted(f"{_summary_parts(summary)}: {again} resumes, in {out}")
    if not (as_json or quiet):
        console.print(_summary_line(summary, result, out))
    if result.disqualified or not result.complete:
        sys.exit(1)  # a bot was disqualified, or matches did not finish: not every pair


def _count(exp: Experiment) -> str:
    """``500 pairs of hands``; ``500 hands`` when one ruleset is measured on its own."""
    if exp.kind == "measure":
        return f"{exp.pairs:,} {PLURAL[exp.unit]}"
    return f"{exp.pairs:,} pairs of {PLURAL[exp.unit]}"


def _header(exp: Experiment, out: Path, backend: Backend) -> list[tuple[str, str]]:
    """What the run prints before it plays: what, where, and what it cannot measure."""
    where = "in-process" if exp.in_process else "over the protocol (embedded server)"
    if backend.kind != "local":
        where += f" on {backend.describe()}"
    arms = f"{len(exp.arms)} arm{'s' if len(exp.arms) > 1 else ''}"
    lines = [
        (f"{exp.name}: {arms}, {_count(exp)}, {where}; "
         f"results in {out}", ""),
    ]  # fmt: skip
    if not exp.same_deals():
        lines.append((
            "note: the arms deal from different tile sets, so the same seed gives them "
            "different hands: pairs share a seed, not a deal", "yellow",
        ))  # fmt: skip
    lost = unmeasured_knobs(exp.unit, [a.ruleset for a in exp.arms])
    if lost:
        lines.append((
            f"note: not measured at --unit hand: {', '.join(lost)} (they act only after a "
            "match's first hand; --unit match measures them)", "yellow",
        ))  # fmt: skip
    return lines


def _summary_line(s: RunSummary, a: analysis.Analysis, out: Path) -> str:
    if a.disqualified:
        head = f"stopped, a bot was disqualified ({a.recorded:,} of {a.planned:,} pairs recorded)"
    elif not a.complete:
        head = f"stopped, {a.incomplete_text} (matches that did not finish are named above)"
    else:
        head = "done"
    charts = f"(charts: capicua experiment report {out})"
    return f"{head}: {_summary_parts(s)}; results in {out} {charts}"


def _summary_parts(s: RunSummary) -> str:
    """``400 pairs played; 100 kept from an earlier run; 5,210 hands/s``."""
    parts = [f"{s.played} pairs played"]
    if s.already:
        parts.append(f"{s.already} kept from an earlier run")
    if s.seconds and s.hands:
        parts.append(f"{s.hands / s.seconds:,.0f} hands/s")
    return "; ".join(parts)


def _analysis(directory: Path) -> analysis.Analysis:
    """Analyse the results stored in ``directory`` (with their stored configuration)."""
    try:
        return analysis.load(directory).analysis
    except StoreError as e:
        raise ExperimentError(str(e)) from None


def _print_result(
    a: analysis.Analysis, as_json: bool, quiet: bool, show_all: bool, p_values: bool = False
) -> None:
    if as_json:
        click.echo(analysis.to_json(a))
        return
    if quiet:
        return
    # a terminal keeps its width; a pipe or a file gets rows wide enough for one line each
    probe = Console()
    console = Console(width=probe.width if probe.is_terminal else 150)
    for table in analysis.tables(a, show_all=show_all, p_values=p_values):
        console.print(table)
    for line in analysis.verdict_lines(a):
        console.print(line, highlight=False, soft_wrap=True)


@experiment.command("ab")
@click.option("--base", "base", required=True, metavar="PRESET", help="The base ruleset.")
@click.option("--base-set", "base_set", multiple=True, metavar="KNOB=VALUE",
              help="Override a knob of the base (TOML value).")  # fmt: skip
@click.option("--candidate", "candidate", metavar="PRESET",
              help="The candidate ruleset (default: the base preset).")  # fmt: skip
@click.option("--candidate-set", "candidate_set", multiple=True, metavar="KNOB=VALUE",
              help="Override a knob of the candidate (TOML value).")  # fmt: skip
@_common
def ab_cmd(base: str, base_set: tuple[str, ...], candidate: str | None,
           candidate_set: tuple[str, ...], **kw: Any) -> None:  # fmt: skip
    """Compare two rulesets on the same deals with the same bots.

    Example: capicua experiment ab --base dominican --candidate dominican
    --candidate-set finish_bonus.capicua.effect=add:25 --bots hard --hands 500"""
    arms = [
        make_arm("base", base, base_set, "--base"),
        make_arm("candidate", candidate or base, candidate_set, "--candidate"),
    ]
    _run_built(kind="ab", arms=arms, knob=None, **kw)


@experiment.command("sweep")
@click.option("--rules", "preset", required=True, metavar="PRESET", help="The preset swept.")
@click.option("--set", "overrides", multiple=True, metavar="KNOB=VALUE",
              help="Override another knob in every arm (TOML value).")  # fmt: skip
@click.option("--knob", required=True, help="The knob that changes, e.g. target.")
@click.option("--values", required=True, metavar="V1,V2,...",
              help="Its values (TOML values; the first is the base every other is compared "
                   "with), e.g. add:0,add:10,add:25,add:50.")  # fmt: skip
@_common
def sweep_cmd(preset: str, overrides: tuple[str, ...], knob: str, values: str, **kw: Any) -> None:
    """Every value of one knob against the first, on the same deals with the same bots.

    Example: capicua experiment sweep --rules dominican --knob finish_bonus.capicua.effect
    --values add:0,add:25,add:50 --bots random --hands 2000"""
    arms = sweep_arms(preset, overrides, knob, split_list(values))
    _run_built(kind="sweep", arms=arms, knob=knob, **kw)


@experiment.command("measure")
@click.option("--rules", "preset", required=True, metavar="PRESET", help="The ruleset measured.")
@click.option("--set", "overrides", multiple=True, metavar="KNOB=VALUE",
              help="Override a knob (TOML value).")  # fmt: skip
@_common
def measure_cmd(preset: str, overrides: tuple[str, ...], **kw: Any) -> None:
    """One ruleset on its own: every metric with its 95% interval (how often does it block,
    how many points a hand...), no comparison.

    Example: capicua experiment measure --rules el-dominito --set seats=3 --bots random
    --hands 2000"""
    arms = [make_arm("rules", preset, overrides, "--rules/--set")]
    _run_built(kind="measure", arms=arms, knob=None, **kw)


def _run_built(*, kind: str, arms: list[Any], knob: str | None, bots: str, unit: str | None,
               hands: int | None, matches: int | None, seed: int, bot_options: tuple[str, ...],
               workers: int, concurrency: int, time_limit_ms: int, server: str | None,
               name: str | None, out: Path | None, as_json: bool, quiet: bool,
               show_all: bool, p_values: bool, skill: bool, skill_bots: str,
               skill_trace: str | None, backend: str,
               scheduler: str | None) -> None:  # fmt: skip
    where = backend_from(
        backend, scheduler, workers if backend == "dask" and scheduler is None else None
    )
    exp = build(
        kind=kind,
        arms=arms,
        bots=_bots(bots),
        unit=unit,
        hands=hands,
        matches=matches,
        seed=seed,
        name=name,
        knob=knob,
        bot_options=parse_bot_options(bot_options),
        time_limit_ms=time_limit_ms,
        concurrency=concurrency,
        workers=workers,
        server=server,
        base_dir=Path.cwd(),
        skill=parse_skill(skill_bots) if skill else (),
        trace=parse_trace(skill_trace) if skill_trace is not None else (),
    )
    _execute(exp, out, as_json, quiet, show_all, where, p_values)


@experiment.command("run")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Results directory (default: FILE's stem plus '-results').")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (last line).")
@click.option("--quiet", is_flag=True, help="No progress and no tables.")
@click.option("--all", "show_all", is_flag=True, help="Also list metrics that are always 0.")
@p_values_option
@backend_options
def run_cmd(
    file: Path,
    out: Path | None,
    as_json: bool,
    quiet: bool,
    show_all: bool,
    p_values: bool,
    backend: str,
    scheduler: str | None,
    workers: int | None,
) -> None:
    """Run the experiment of FILE (TOML: an A/B or a sweep; see docs/regression-testing.md).
    Running it again resumes, on either backend."""
    where = backend_from(backend, scheduler, workers)
    exp = load_experiment(file)
    _execute(exp, out or Path(f"{file.stem}-results"), as_json, quiet, show_all, where, p_values)


@experiment.command("show")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (last line).")
@click.option("--all", "show_all", is_flag=True, help="Also list metrics that are always 0.")
@p_values_option
def show_cmd(directory: Path, as_json: bool, show_all: bool, p_values: bool) -> None:
    """Print the result of the experiment stored in DIRECTORY again."""
    _print_result(_analysis(directory), as_json, False, show_all, p_values)


@experiment.command("report")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file (default: DIRECTORY/report.html).")  # fmt: skip
def report_cmd(directory: Path, out: Path | None) -> None:
    """Write an HTML report of the experiment in DIRECTORY: a forest plot of the paired
    differences, distributions per arm, and for a sweep one chart per metric."""
    from .report import write_report

    path = write_report(directory, out)
    click.echo(f"report written to {path}")
