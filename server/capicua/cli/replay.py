"""``capicua replay``: verify and show replay files."""

from __future__ import annotations

from pathlib import Path

import click

from capicua.cli.display import outcome_text, replay_lines
from capicua.engine.codec import read_replay
from capicua.engine.replay import verify


@click.group()
def replay() -> None:
    """Verify and show replay files."""


@replay.command("verify")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def verify_cmd(files: tuple[Path, ...]) -> None:
    """Re-simulate replay FILES through the engine; exit 0 when every one is identical.

    Otherwise exit 1 naming the first differing event (exit 2 for an unreadable file)."""
    failed = 0
    for path in files:
        rec = read_replay(path)
        try:
            state = verify(rec)
        except Exception as e:  # ReplayMismatch, or a corrupt record the engine rejects
            click.echo(f"{path}: MISMATCH: {e}", err=True)
            failed += 1
            continue
        assert state.outcome is not None
        hands = len(rec.hands)
        click.echo(f"{path}: OK ({hands} hands; {outcome_text(rec.ruleset, state.outcome)})")
    if failed:
        raise SystemExit(1)


@replay.command("show")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--hand", type=click.IntRange(min=1), help="Show only hand N (from 1).")
def show_cmd(file: Path, hand: int | None) -> None:
    """Print a replay hand by hand."""
    rec = read_replay(file)
    if hand is not None and hand > len(rec.hands):
        raise click.BadParameter(f"the replay has {len(rec.hands)} hands", param_hint="--hand")
    for line in replay_lines(rec, hand):
        click.echo(line)
