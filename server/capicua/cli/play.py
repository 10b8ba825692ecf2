"""``capicua play``: one match in-process between built-in bots, with a hand-by-hand log;
with ``--human SEATS``, a match with people at it, against the server's CPUs on an embedded
server (:mod:`capicua.client.table`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from capicua.bots import CPU_LEVELS, LEVELS, make_bot
from capicua.bots.local import play_local
from capicua.common import interrupt
from capicua.common.errors import CapicuaError, unknown_name
from capicua.engine.display import replay_lines, result_text
from capicua.engine.game import Game, MatchState
from capicua.engine.records import Replay
from capicua.engine.rules import Ruleset, load_preset
from capicua.wire.codec import replay_from_proto, write_replay


def bot_seed(seed: int, seat: int) -> int:
    """Each seat's bot gets its own seed derived from the match seed (reproducible runs)."""
    return seed * 1000 + seat


#: A person's time for each decision with --human, by default: then the server plays it.
HUMAN_TIMER_MS = 300_000
#: The CPUs' level with --human unless --bots says.
HUMAN_OPPONENT = "medium"
#: What running ``play --human`` again after a Ctrl-C does.
HUMAN_RERUN = "the match ran on a server of its own, now stopped: the same command starts a new one"


def seat_names(ruleset: Ruleset, bots: str) -> list[str]:
    """One built-in bot name per seat from ``--bots`` (one name for every seat, or one per
    seat)."""
    names = [b.strip() for b in bots.split(",") if b.strip()]
    if len(names) == 1:
        names *= ruleset.seats
    if len(names) != ruleset.seats:
        raise CapicuaError(
            f"--bots: {ruleset.name} has {ruleset.seats} seats, got {len(names)} bots ({bots})"
        )
    return names


def play_match(
    ruleset: Ruleset,
    bots: str,
    seed: int,
    on_progress: Callable[[MatchState], None] | None = None,
) -> Replay:
    """The match ``capicua play`` plays: built-in bots seeded per seat from the match seed
    (``on_progress`` as :func:`play_local` calls it)."""
    names = seat_names(ruleset, bots)
    players = [make_bot(n, bot_seed(seed, s)) for s, n in enumerate(names)]
    return play_local(Game(ruleset), seed, players, on_progress=on_progress).log.replay(names)


class HandLines:
    """``play --quiet``'s progress off a terminal (a pipe, CI): a stderr line per finished
    hand, as the arena's ``match N/T: ...`` lines, so a long match does not look hung. The
    number of hands is not known in advance (most targets are points), hence no total."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset
        self.printed = 0

    def __call__(self, state: MatchState) -> None:
        # called after every decision: one may have ended a hand (or, with forced moves
        # played by the engine, several)
        results = state.log.results()
        for result in results[self.printed :]:
            self.printed += 1
            click.echo(f"hand {self.printed}: {result_text(self.ruleset, result)}", err=True)


def human_seats(ruleset: Ruleset, text: str) -> list[int]:
    """The seats of ``--human`` (``0`` or ``0,2``), in the order given: the first is played
    in this terminal."""
    example = "0 or 0,2" if ruleset.seats > 2 else "0 or 0,1"
    how = f"seat numbers from 0 to {ruleset.seats - 1}, e.g. {example}"
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items or not all(item.isdigit() for item in items):
        raise CapicuaError(f"--human {text!r}: expected {how}")
    seats = [int(item) for item in items]
    if any(seat >= ruleset.seats for seat in seats):
        raise CapicuaError(f"--human {text!r}: {ruleset.name} has {ruleset.seats} seats: {how}")
    if len(set(seats)) != len(seats):
        raise CapicuaError(f"--human {text!r}: a seat is given twice")
    return seats


def cpu_level(name: str) -> str:
    """A CPU seat's level from a ``--bots`` name: the server's CPUs play easy, medium or hard."""
    level = name.strip().lower()
    if level in LEVELS and level not in CPU_LEVELS:
        levels = ", ".join(CPU_LEVELS)
        raise CapicuaError(f"--bots with --human: the server's CPUs play {levels}, not {level}")
    if level not in CPU_LEVELS:
        raise CapicuaError(f"--bots with --human: {unknown_name('CPU level', name, CPU_LEVELS)}")
    return level


def table_seats(ruleset: Ruleset, people: list[int], bots: str | None) -> list[str | None]:
    """Who sits where with ``--human``: None for a person, else the CPU level from
    ``--bots`` (one name for every CPU seat, or one per seat)."""
    names = seat_names(ruleset, bots or HUMAN_OPPONENT)
    return [None if s in people else cpu_level(names[s]) for s in range(ruleset.seats)]


@click.command()
@click.option("--rules", "rules_name", required=True, metavar="NAME", help="Preset name.")
@click.option(
    "--set", "overrides", multiple=True, metavar="KNOB=VALUE", help="Override a knob (TOML value)."
)
@click.option(
    "--bots",
    metavar="A,B,...",
    help="One built-in bot per seat, or one name for every seat (default: random; with "
    f"--human, the server's CPUs: easy, medium or hard, default {HUMAN_OPPONENT}).",
)
@click.option(
    "--human",
    "humans",
    metavar="SEATS",
    help="Seats played by people, e.g. 0 (or 0,2): the match runs on an embedded server, "
    "the first of these seats is played here, each other one from another terminal (the "
    "command is printed); every move is shown, forced ones included.",
)
@click.option(
    "--timer-ms",
    type=click.IntRange(1000, 3_600_000),
    default=HUMAN_TIMER_MS,
    show_default=True,
    help="With --human: a person's time for each move (then the server plays it).",
)
@click.option("--seed", type=click.IntRange(min=0),
              help="The deals' seed (default 0; with --human, new deals every time).")  # fmt: skip
@click.option("--replay", "replay_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the replay here (.gz to compress).")  # fmt: skip
@click.option("--quiet", is_flag=True,
              help="Print only the final result (off a terminal, also a line per finished hand "
              "on stderr).")  # fmt: skip
def play(
    rules_name: str,
    overrides: tuple[str, ...],
    bots: str | None,
    humans: str | None,
    timer_ms: int,
    seed: int | None,
    replay_path: Path | None,
    quiet: bool,
) -> None:
    """Play one match in-process and print it hand by hand; with --human, play it yourself
    against the CPU."""
    ruleset = load_preset(rules_name, overrides)
    if humans is not None:
        if quiet:
            raise CapicuaError("--quiet goes without --human: a person sees every move")
        people = human_seats(ruleset, humans)
        seats = table_seats(ruleset, people, bots)
        _play_table(rules_name, overrides, seats, people[0], seed, timer_ms, replay_path)
        return
    interrupt.rerun("nothing was written: the same command plays the same match from its start")
    progress = HandLines(ruleset) if quiet and not sys.stderr.isatty() else None
    replay = play_match(ruleset, bots or "random", seed or 0, progress)
    if replay_path is not None:  # before printing: a closed stdout must not lose it
        write_replay(replay_path, replay)
    lines = list(replay_lines(replay))
    for line in lines if not quiet else lines[-1:]:
        click.echo(line)
    if replay_path is not None:
        click.echo(f"replay written to {replay_path}")


def _play_table(preset: str, overrides: tuple[str, ...], seats: list[str | None], here: int,
                seed: int | None, timer_ms: int, replay_path: Path | None) -> None:  # fmt: skip
    """``play --human``: the match to its end, then its replay if asked."""
    interrupt.rerun(HUMAN_RERUN)
    # imported here: plain `capicua play` runs without gRPC
    from capicua.client.human import HumanBot
    from capicua.client.table import HUMAN, Table, play_table

    kinds = tuple(HUMAN if kind is None else kind for kind in seats)
    table = Table(preset, overrides, kinds, seed, timer_ms, here)
    replay = play_table(table, HumanBot(), click.echo)
    if replay_path is not None and replay is not None:
        write_replay(replay_path, replay_from_proto(replay, source="the match"))
        click.echo(f"replay written to {replay_path}")
