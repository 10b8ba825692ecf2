"""``capicua replay``: verify and show replay files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import click

from capicua.cli.display import outcome_text, replay_lines
from capicua.engine.codec import ReplayError, read_replay
from capicua.engine.replay import verify

REPLAY_SUFFIXES = (".json", ".json.gz")
"""The file names ``capicua replay verify DIRECTORY`` picks up (what ``write_replay`` writes)."""


@click.group()
def replay() -> None:
    """Verify and show replay files."""


def replays_under(folder: Path) -> list[Path]:
    """Every replay file below ``folder``, recursively, in sorted order (so two runs print
    the same lines in the same order)."""
    return sorted(p for p in folder.rglob("*") if p.name.endswith(REPLAY_SUFFIXES) and p.is_file())


def expand(paths: Iterable[Path]) -> list[tuple[Path, bool]]:
    """Each replay to verify, with whether it was found in a directory.

    Checked before anything is verified: a path that does not exist, or a directory without
    a replay, is a usage error (exit 2), not a failed replay."""
    found: list[tuple[Path, bool]] = []
    for path in paths:
        if path.is_dir():
            inside = replays_under(path)
            if not inside:
                raise ReplayError(
                    f"replay {path}: no *.json or *.json.gz replays in this directory"
                )
            found += [(p, True) for p in inside]
        elif path.exists():
            found.append((path, False))
        else:
            raise ReplayError(f"replay {path}: no such file or directory")
    return found


def _unreadable(path: Path, error: ReplayError) -> str:
    """One line for a replay in a directory that cannot be read (without repeating its
    path, which read_replay's message starts with)."""
    text = str(error)
    prefix = f"replay {path}: "
    return f"{path}: UNREADABLE: {text.removeprefix(prefix)}"


def verify_one(path: Path, in_directory: bool) -> bool:
    """Verify one file and print its line; True when it is identical.

    A file named on the command line that cannot be read stops the command (exit 2, as
    before); one found in a directory is a failure like a mismatch, so one bad file does
    not hide the others."""
    try:
        rec = read_replay(path)
    except ReplayError as e:
        if not in_directory:
            raise
        click.echo(_unreadable(path, e), err=True)
        return False
    try:
        state = verify(rec)
    except Exception as e:  # ReplayMismatch, or a corrupt record the engine rejects
        click.echo(f"{path}: MISMATCH: {e}", err=True)
        return False
    assert state.outcome is not None
    hands = len(rec.hands)
    noun = "hand" if hands == 1 else "hands"
    click.echo(f"{path}: OK ({hands} {noun}; {outcome_text(rec.ruleset, state.outcome)})")
    return True


def summary_line(total: int, failed: int) -> str:
    """``42 replays: 42 OK, 0 failed``."""
    noun = "replay" if total == 1 else "replays"
    return f"{total} {noun}: {total - failed} OK, {failed} failed"


@replay.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def verify_cmd(paths: tuple[Path, ...]) -> None:
    """Re-simulate the replays in PATHS through the engine; exit 0 when every one is
    identical.

    A directory stands for every *.json and *.json.gz file below it, in sorted order. Each
    replay gets one line; with a directory or several files a summary line ends the output.
    Exit 1 when a replay differs (naming its first differing event) or, inside a directory,
    cannot be read; exit 2 for a missing path, a directory without replays or an unreadable
    file named on the command line."""
    files = expand(paths)
    failed = 0
    for path, in_directory in files:
        if not verify_one(path, in_directory):
            failed += 1
    # One file alone keeps its single line (what scripts and the README show).
    if len(files) > 1 or any(in_directory for _, in_directory in files):
        click.echo(summary_line(len(files), failed))
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
