"""``capicua replay``: verify and show replay files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from capicua.engine.display import outcome_text, replay_lines
from capicua.engine.replay import verify
from capicua.wire.codec import BINARY_SUFFIXES, JSON_SUFFIXES, ReplayError, read_replay

REPLAY_SUFFIXES = JSON_SUFFIXES + BINARY_SUFFIXES
"""The file names ``capicua replay verify DIRECTORY`` picks up (what ``write_replay`` writes)."""

OK, MISMATCH, UNREADABLE = "ok", "mismatch", "unreadable"
"""A verified replay's status (the ``status`` of ``capicua replay verify --json``)."""


@click.group()
def replay() -> None:
    """Verify and show replay files."""


def replays_under(folder: Path) -> list[Path]:
    """Every replay file below ``folder``, recursively, in sorted order (so two runs print
    the same lines in the same order). An arena's results directory (it holds
    ``results.sqlite``) keeps its replays in ``replays/``: only those, since its other JSON
    files (an SPRT's ``sprt.json``) are no replays."""
    if (folder / "results.sqlite").is_file() and (folder / "replays").is_dir():
        folder = folder / "replays"
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
                    f"replay {path}: no *.json, *.json.gz, *.binpb or *.binpb.gz replays in "
                    "this directory"
                )
            found += [(p, True) for p in inside]
        elif path.exists():
            found.append((path, False))
        else:
            raise ReplayError(f"replay {path}: no such file or directory")
    return found


@dataclass(frozen=True)
class Verdict:
    """What verifying one replay file found.

    ``message`` is the outcome for an identical replay, else what went wrong (without the
    path, which read_replay's errors start with); ``hands`` and ``events`` count what the
    file holds (None when it cannot be read)."""

    path: Path
    status: str
    message: str
    hands: int | None = None
    events: int | None = None
    error: ReplayError | None = None  # why an unreadable file could not be read

    def line(self) -> str:
        """The line ``capicua replay verify`` prints for it."""
        if self.status == OK:
            noun = "hand" if self.hands == 1 else "hands"
            return f"{self.path}: OK ({self.hands} {noun}; {self.message})"
        return f"{self.path}: {self.status.upper()}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "status": self.status,
            "message": self.message,
            "hands": self.hands,
            "events": self.events,
        }


def check(path: Path) -> Verdict:
    """Read and re-simulate one replay file."""
    try:
        rec = read_replay(path)
    except ReplayError as e:
        reason = str(e).removeprefix(f"replay {path}: ")
        return Verdict(path, UNREADABLE, reason, error=e)
    hands = len(rec.hands)
    events = sum(len(h.events) for h in rec.hands)
    try:
        state = verify(rec)
    except Exception as e:  # ReplayMismatch, or a corrupt record the engine rejects
        return Verdict(path, MISMATCH, str(e), hands, events)
    assert state.outcome is not None
    return Verdict(path, OK, outcome_text(rec.ruleset, state.outcome), hands, events)


def verify_one(path: Path, in_directory: bool) -> bool:
    """Verify one file and print its line; True when it is identical.

    A file named on the command line that cannot be read stops the command (exit 2, as
    before); one found in a directory is a failure like a mismatch, so one bad file does
    not hide the others."""
    verdict = check(path)
    if verdict.error is not None and not in_directory:
        raise verdict.error
    click.echo(verdict.line(), err=verdict.status != OK)
    return verdict.status == OK


def summary_line(total: int, failed: int) -> str:
    """``42 replays: 42 OK, 0 failed``."""
    noun = "replay" if total == 1 else "replays"
    return f"{total} {noun}: {total - failed} OK, {failed} failed"


def summary_json(verdicts: list[Verdict]) -> dict[str, Any]:
    """``capicua replay verify --json``'s object: every file, then the totals."""
    counts = {s: sum(v.status == s for v in verdicts) for s in (OK, MISMATCH, UNREADABLE)}
    return {
        "replays": [v.to_json() for v in verdicts],
        "total": len(verdicts),
        **counts,
        "failed": len(verdicts) - counts[OK],
    }


def verify_json(files: list[tuple[Path, bool]]) -> None:
    """Verify every file, then print one JSON object; the exit code is the text mode's.

    Unlike the text mode, an unreadable file named on the command line does not stop the
    others: it is in the object, then ends the command as the usage error it is (exit 2)."""
    verdicts = [check(path) for path, _ in files]
    click.echo(json.dumps(summary_json(verdicts), separators=(",", ":"), ensure_ascii=False))
    for verdict, (_, in_directory) in zip(verdicts, files, strict=True):
        if verdict.error is not None and not in_directory:
            raise verdict.error
    if any(v.status != OK for v in verdicts):
        raise SystemExit(1)


@replay.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: every file's status, message, hands and events, "
              "and the totals.")  # fmt: skip
def verify_cmd(paths: tuple[Path, ...], as_json: bool) -> None:
    """Re-simulate the replays in PATHS through the engine; exit 0 when every one is
    identical.

    A directory stands for every *.json, *.json.gz, *.binpb and *.binpb.gz file below it, in
    sorted order (an arena's replays/ keeps *.binpb.gz, older ones *.json.gz). Each
    replay gets one line; with a directory or several files a summary line ends the output.
    Exit 1 when a replay differs (naming its first differing event) or, inside a directory,
    cannot be read; exit 2 for a missing path, a directory without replays or an unreadable
    file named on the command line. With --json stdout is one JSON object (a missing path or
    a directory without replays prints none)."""
    files = expand(paths)
    if as_json:
        verify_json(files)
        return
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
