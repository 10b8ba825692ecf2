"""``capicua ladder``: run a standing ladder, print its published table, and control it
(docs/ladder.md). The work is in :mod:`.plan` (what is played), :mod:`.table` (what is
published), :mod:`.actions` (the control actions) and the arena's one run loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click
from rich import box
from rich.console import Console, RenderableType
from rich.table import Table

from capicua.common import interrupt
from capicua.common.naming import ladder_id
from capicua.common.sqldb import LadderLocation

from .. import standings
from ..errors import SAME_COMMAND, rerun_in
from ..inprocess import LocalPlay
from ..options import results_location
from ..output import Display, SilentDisplay, disqualified_lines
from ..run import Beside, Summary, run_to_end
from ..store import Results, Where
from ..study import OnProgress
from . import actions, control, table
from .config import Ladder, LadderError, load_ladder
from .plan import study

if TYPE_CHECKING:
    from .board import LadderBoard

#: Bootstrap samples for the live table's intervals (the published table uses the default).
LIVE_SAMPLES = 200


@click.group()
def ladder() -> None:
    """Standing ladders: a matchmaker pairs entries on duplicate deals; a rated table."""


def _display(lad: Ladder, playing: set[str], quiet: bool) -> Display:
    """The live table on a terminal, a line per match off one, nothing when ``quiet``."""
    if quiet:
        return SilentDisplay()

    def live_table(r: Results) -> RenderableType:
        return table.render(table.compute(r, playing, samples=LIVE_SAMPLES))

    if Console(stderr=True).is_terminal:
        from ..live import LiveDisplay

        return LiveDisplay(lad.name, live_table)
    from ..live import LineDisplay

    return LineDisplay(live_table)


def _console() -> Console:
    """stdout; off a terminal (where rich would assume 80 columns and cut the table's
    columns short) 160 columns: a log has room."""
    console = Console()
    if not console.is_terminal:
        console.width = 160
    return console


def _summary(s: Summary, stored: int, out: Where) -> str:
    """What the run did; ``stored``: the matches the directory holds now (an endless plan
    counts none ahead, so those kept from earlier runs are the rest)."""
    kept = stored - s.played
    earlier = f"; {kept} kept from an earlier run" if kept else ""
    lost = f"; {s.abandoned} abandoned (played again on resume)" if s.abandoned else ""
    return f"{s.played} matches played{earlier}{lost}; results in {out}"


@ladder.command("run")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", required=True, metavar="DIR|URL", callback=results_location,
              help="Results directory, or postgresql://USER@HOST/DB#LADDER_ID (built-in "
              "entries only); the same command resumes in it.")  # fmt: skip
@click.option("--matches", "limit", type=click.IntRange(1, 10**9), metavar="N",
              help="Stop once DIR holds N matches (whole sets: a few more); "
              "default: until Ctrl-C.")  # fmt: skip
@click.option("--quiet", is_flag=True, help="No live table; only the last line.")
@click.option("--http", "http_port", type=click.IntRange(0, 65535), metavar="PORT",
              help="Serve the live leaderboard on PORT while running (0: a free port; "
              "the URL is printed).")  # fmt: skip
@click.option("--http-host", default="127.0.0.1", show_default=True, metavar="HOST",
              help="The address the leaderboard listens on.")  # fmt: skip
def run_cmd(
    file: Path, out: Where, limit: int | None, quiet: bool, http_port: int | None, http_host: str
) -> None:
    """Run the ladder of FILE (TOML; see docs/ladder.md) into --out: the matchmaker picks
    each next duplicate set from the results so far; the live table shows the ratings.
    Built-in entries only: played in this process; else on an embedded server (or the
    file's server). Ctrl-C stops (exit 130); the same command resumes, new entries of the
    file joining. Prints the published table at the end. With --http, the same process
    serves the leaderboard in the browser (docs/ladder.md). --out may name a ladder in
    PostgreSQL (docs/ladder.md, "Results in PostgreSQL")."""
    lad = load_ladder(file)
    interrupt.rerun(lambda: rerun_in(out))
    playing = {b.name for b in lad.tournament.bots}
    in_process = LocalPlay() if all(b.kind == "builtin" for b in lad.tournament.bots) else None
    if isinstance(out, LadderLocation):
        _check_location(out, lad, in_process is not None)
    display = _display(lad, playing, quiet)
    progress: list[OnProgress] = [f for f in [getattr(display, "refresh", None)] if f]
    plan = study(lad, limit)
    beside = None
    if http_port is not None:
        from .board import LadderBoard

        board = LadderBoard(out, lad.name, stored=False)
        plan = board.follow(plan)
        progress.append(board.committed)
        beside = _serving([board], http_host, http_port)
    from ..backend import LOCAL

    run = LOCAL.arena(
        lad.tournament, out, display, study=plan, in_process=in_process,
        on_progress=_each(progress),
    )  # fmt: skip
    summary = run_to_end(run, LadderError, "the matches recorded so far", beside)
    if summary.interrupted and not summary.played:
        raise interrupt.Interrupted(rerun_in(out))
    results = Results.open_existing(out)
    try:
        stored = len(results.finished_keys())
        paused = control.load(results).paused
        if not quiet:
            _console().print(table.render(table.compute(results, playing)))
    finally:
        results.close()
    if not quiet:
        for line in disqualified_lines(summary.disqualified):
            click.echo(line)
    done = _summary(summary, stored, out)
    if paused:
        done += f"; the ladder is paused (capicua ladder resume {out} lets it play)"
    if summary.interrupted:
        raise interrupt.Interrupted(f"{done}: {SAME_COMMAND} resumes")
    click.echo(f"done: {done}", err=True)


def _check_location(out: LadderLocation, lad: Ladder, in_process: bool) -> None:
    """Refuse a PostgreSQL location that is not this ladder's (its id is the ladder's, so
    that a server given the same file and database finds the same ladder), or a ladder
    with entries that are not played in process (over the protocol a run keeps its bots'
    logs beside its results: in a directory)."""
    if out.ladder_id != ladder_id(lad.name):
        raise LadderError(
            f"{out}: the ladder of this file is {ladder_id(lad.name)!r} (its name's id): "
            f"name it #{ladder_id(lad.name)}"
        )
    if not in_process:
        raise LadderError(
            f"{out}: a ladder in PostgreSQL is played here with built-in entries only (in "
            "this process); the others join a server's ladder, or play into a directory"
        )


def _each(hooks: list[OnProgress]) -> OnProgress | None:
    """One progress hook that calls ``hooks`` in turn (None: there is none)."""
    if not hooks:
        return None

    def each(results: Results) -> None:
        for hook in hooks:
            hook(results)

    return each


def _serving(boards: list[LadderBoard], host: str, port: int) -> Beside:
    """The leaderboard served beside the run, its URL printed once it answers."""

    @contextlib.asynccontextmanager
    async def serve() -> AsyncIterator[str]:
        from .web import serving

        async with serving(boards, host, port) as url:
            click.echo(f"leaderboard: {url}", err=True)
            yield url

    return serve


#: A ladder's results: a directory, or a ladder in PostgreSQL (``postgresql://...#ID``).
DIRECTORY = click.argument("directory", metavar="DIR|URL", callback=results_location)


@ladder.command("web")
@DIRECTORY
@click.option("--http", "http_port", type=click.IntRange(0, 65535), metavar="PORT",
              required=True, help="The port (0: a free one; the URL is printed).")  # fmt: skip
@click.option("--http-host", default="127.0.0.1", show_default=True, metavar="HOST",
              help="The address the leaderboard listens on.")  # fmt: skip
def web_cmd(directory: Where, http_port: int, http_host: str) -> None:
    """Serve the leaderboard of a stored ladder directory in the browser, read-only (no
    match is played), until Ctrl-C; what a run elsewhere adds to it shows as it comes."""
    from .board import LadderBoard, stored_name

    board = LadderBoard(directory, stored_name(directory))
    interrupt.rerun("nothing was changed: the same command serves the leaderboard again")

    async def until_stopped() -> int:
        stopped: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def stop(signum: int) -> None:
            if not stopped.done():
                stopped.set_result(signum)

        with interrupt.signals(stop):  # the server stops in order, then the line
            async with _serving([board], http_host, http_port)():
                return await stopped

    if asyncio.run(until_stopped()) == signal.SIGINT:  # SIGTERM is a normal stop (exit 0)
        raise interrupt.Interrupted()


@ladder.command("show")
@DIRECTORY
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--season", metavar="NAME",
              help="A season's table: its finals' once played, else its own sets'.")  # fmt: skip
def show_cmd(directory: Where, as_json: bool, season: str | None) -> None:
    """Print the published table of a ladder directory: Elo with its 95% interval over
    the rated duplicate sets, rank bands (overlapping intervals are tied), anchors,
    provisional flags and forfeits by kind."""
    t = table.load(directory) if season is None else _season_table(directory, season)
    if as_json:
        click.echo(table.to_json(t))
    else:
        _console().print(table.render(t))


def _season_table(directory: Where, name: str) -> table.LadderTable:
    """A season's finals table as kept, or the table of its own sets so far."""
    with table.reading(directory) as results:
        s = actions.find_season(results, name)
        if s.table is not None:
            kept = table.from_dict(s.table)
            return replace(kept, name=f"{kept.name or 'ladder'}, season {s.name} finals")
        t = table.compute(results, results.entered(), select=table.in_season(s))
        return replace(t, name=f"{t.name or 'ladder'}, season {s.name} ({s.state})")


# -- control (docs/ladder.md, "Control"): thin callers of .actions ------------------------------

SETS = click.option("--sets", type=int, default=1, show_default=True, metavar="N",
                    help="Duplicate sets (per opponent).")  # fmt: skip
T = TypeVar("T")


def _act(directory: Where, action: Callable[[Results], T]) -> T:
    """Take a control action on the ladder of ``directory`` (no lock: a run may play)."""
    with actions.opened(directory) as results:
        return action(results)


@ladder.command("block")
@DIRECTORY
@click.argument("entry")
@click.argument("opponent")
def block_cmd(directory: Where, entry: str, opponent: str) -> None:
    """ENTRY (its owner) blocks OPPONENT: no set groups them from the next choice on."""
    done = _act(directory, lambda r: actions.block(r, entry, opponent))
    click.echo(f"{entry} blocks {opponent}" + ("" if done else " (already)"))


@ladder.command("unblock")
@DIRECTORY
@click.argument("entry")
@click.argument("opponent")
def unblock_cmd(directory: Where, entry: str, opponent: str) -> None:
    """ENTRY (its owner) lifts its block of OPPONENT."""
    _act(directory, lambda r: actions.unblock(r, entry, opponent))
    click.echo(f"{entry} no longer blocks {opponent}")


@ladder.command("challenge")
@DIRECTORY
@click.argument("entry")
@click.argument("opponent")
@SETS
def challenge_cmd(directory: Where, entry: str, opponent: str, sets: int) -> None:
    """ENTRY (its owner) challenges OPPONENT to N rated duplicate sets, played next
    (every other set while challenges are open)."""
    _act(directory, lambda r: actions.challenge(r, entry, opponent, sets))
    click.echo(f"{entry} challenges {opponent} to {sets} set{'s' * (sets != 1)}")


@ladder.command("gauntlet")
@DIRECTORY
@click.argument("entry")
@click.argument("opponents", metavar="OPP[,OPP...]")
@SETS
def gauntlet_cmd(directory: Where, entry: str, opponents: str, sets: int) -> None:
    """ENTRY (its owner) plays N duplicate sets against each opponent: a private
    gauntlet, unrated, out of the public table (ladder gauntlet-results reads it)."""
    names = [name.strip() for name in opponents.split(",")]
    _act(directory, lambda r: actions.gauntlet(r, entry, names, sets))
    click.echo(f"{entry} plays a gauntlet of {sets} set{'s' * (sets != 1)} against each of "
               f"{', '.join(names)}")  # fmt: skip


@ladder.command("gauntlet-results")
@DIRECTORY
@click.argument("entry")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def gauntlet_results_cmd(directory: Where, entry: str, as_json: bool) -> None:
    """ENTRY's private gauntlets (for its owner): against each opponent, the sets, W-D-L
    and the Elo difference with its 95% interval."""
    with table.reading(directory) as results:
        lines = actions.gauntlet_results(results, entry)
    if as_json:
        click.echo(json.dumps({"entry": entry, "opponents": [asdict(x) for x in lines]}))
        return
    out = Table(title=f"Gauntlets of {entry}", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("opponent", "sets", "W-D-L", "Elo diff", "95% CI"):
        out.add_column(column, justify="left" if column == "opponent" else "right")
    for x in lines:
        out.add_row(
            x.opponent, str(x.sets), f"{x.wins}-{x.draws}-{x.losses}",
            "-" if x.elo is None else standings.signed(x.elo),
            "-" if x.lo is None or x.hi is None
            else f"[{standings.signed(x.lo)}, {standings.signed(x.hi)}]",
        )  # fmt: skip
    out.caption = f"no interval under {table.MIN_INTERVAL_SETS} sets; unrated, private"
    _console().print(out)


@ladder.command("pause")
@DIRECTORY
def pause_cmd(directory: Where) -> None:
    """Hand out no new set (an admin's); those in flight finish and a running ladder
    run ends."""
    done = _act(directory, lambda r: actions.pause(r))
    click.echo("the ladder is paused" + ("" if done else " (already)"))


@ladder.command("resume")
@DIRECTORY
def resume_cmd(directory: Where) -> None:
    """Hand out sets again (an admin's): the next ladder run plays."""
    done = _act(directory, lambda r: actions.resume(r))
    click.echo("the ladder plays again" if done else "the ladder was not paused")


@ladder.command("remove")
@DIRECTORY
@click.argument("entry")
def remove_cmd(directory: Where, entry: str) -> None:
    """Remove ENTRY (an admin's): no new set; its results stay, shown as removed."""
    _act(directory, lambda r: actions.remove(r, entry))
    click.echo(f"{entry} is removed")


@ladder.group("season")
def season() -> None:
    """Seasons (an admin's): a season's table counts its own sets; its end plays finals."""


@season.command("start")
@DIRECTORY
@click.argument("name", required=False)
def season_start_cmd(directory: Where, name: str | None) -> None:
    """Open a season (NAME, or its number) from the next set on."""
    s = _act(directory, lambda r: actions.start_season(r, name))
    click.echo(f"season {s.name} is open")


@season.command("end")
@DIRECTORY
@click.argument("name", required=False)
@click.option(
    "--finals-sets",
    type=int,
    default=actions.FINALS_SETS,
    show_default=True,
    metavar="N",
    help="Finals: duplicate sets per group of the round robin.",
)
@click.option("--next", "next_name", metavar="NAME", help="The next season's name.")  # fmt: skip
def season_end_cmd(
    directory: Where, name: str | None, finals_sets: int, next_name: str | None
) -> None:
    """End the open season (NAME, if given, must be it): its entries are frozen and its
    finals (a duplicate round robin) are played first; their table is kept (ladder show
    --season NAME) and the next season opens."""
    s = _act(directory, lambda r: actions.end_season(r, name, finals_sets, next_name))
    click.echo(f"season {s.name} ends: finals among {', '.join(s.field)}, {finals_sets} "
               f"set{'s' * (finals_sets != 1)} per group")  # fmt: skip
