"""``capicua play``: one match in-process between built-in bots, with a hand-by-hand log."""

from __future__ import annotations

from pathlib import Path

import click

from capicua.bots import make_bot
from capicua.bots.local import play_local
from capicua.cli.display import replay_lines
from capicua.engine.codec import write_replay
from capicua.engine.errors import CapicuaError
from capicua.engine.game import Game
from capicua.engine.records import Replay
from capicua.engine.rules import Ruleset, load_preset


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


def play_match(ruleset: Ruleset, bots: str, seed: int) -> Replay:
    """The match ``capicua play`` plays: built-in bots seeded per seat from the match seed."""
    names = seat_names(ruleset, bots)
    players = [make_bot(n, bot_seed(seed, s)) for s, n in enumerate(names)]
    return play_local(Game(ruleset), seed, players).replay(names)


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
@click.option("--quiet", is_flag=True, help="Print only the final result.")
def play(
    rules_name: str,
    overrides: tuple[str, ...],
    bots: str,
    seed: int,
    replay_path: Path | None,
    quiet: bool,
) -> None:
    """Play one match in-process and print it hand by hand."""
    replay = play_match(load_preset(rules_name, overrides), bots, seed)
    if replay_path is not None:  # before printing: a closed stdout must not lose it
        write_replay(replay_path, replay)
    lines = list(replay_lines(replay))
    for line in lines if not quiet else lines[-1:]:
        click.echo(line)
    if replay_path is not None:
        click.echo(f"replay written to {replay_path}")
