"""``capicua play``: one match in-process between built-in bots, with a hand-by-hand log."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from capicua.bots import make_bot
from capicua.bots.local import play_local
from capicua.common import interrupt
from capicua.common.errors import CapicuaError
from capicua.engine.display import replay_lines, result_text
from capicua.engine.game import Game, MatchState
from capicua.engine.records import Replay
from capicua.engine.rules import Ruleset, load_preset
from capicua.wire.codec import write_replay


def bot_seed(seed: int, seat: int) -> int:
    """Each seat's bot gets its own seed derived from the match seed (reproducible runs)."""
    return seed * 1000 + seat


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
    return play_local(Game(ruleset), seed, players, on_progress=on_progress).replay(names)


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
        results = state.hand_results()
        for result in results[self.printed :]:
            self.printed += 1
            click.echo(f"hand {self.printed}: {result_text(self.ruleset, result)}", err=True)


@click.command()
@click.option("--rules", "rules_name", required=True, metavar="NAME", help="Preset name.")
@click.option(
    "--set", "overrides", multiple=True, metavar="KNOB=VALUE", help="Override a knob (TOML value)."
)
@click.option(
    "--bots",
    default="random",
    show_default=True,
    metavar="A,B,...",
    help="One built-in bot per seat, or one name for every seat.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--replay", "replay_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the replay here (.gz to compress).")  # fmt: skip
@click.option("--quiet", is_flag=True,
              help="Print only the final result (off a terminal, also a line per finished hand "
              "on stderr).")  # fmt: skip
def play(
    rules_name: str,
    overrides: tuple[str, ...],
    bots: str,
    seed: int,
    replay_path: Path | None,
    quiet: bool,
) -> None:
    """Play one match in-process and print it hand by hand."""
    interrupt.rerun("nothing was written: the same command plays the same match from its start")
    ruleset = load_preset(rules_name, overrides)
    progress = HandLines(ruleset) if quiet and not sys.stderr.isatty() else None
    replay = play_match(ruleset, bots, seed, progress)
    if replay_path is not None:  # before printing: a closed stdout must not lose it
        write_replay(replay_path, replay)
    lines = list(replay_lines(replay))
    for line in lines if not quiet else lines[-1:]:
        click.echo(line)
    if replay_path is not None:
        click.echo(f"replay written to {replay_path}")
