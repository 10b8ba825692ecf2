"""The worked examples of README.md and docs/*.md, run as a reader runs them, so that they
cannot drift from what the program does.

Each document's examples run in order, in a scratch directory holding a symlink to every
top-level entry of the repository (so ``tests/golden`` is there, and what an example writes,
such as ``match.json.gz``, lands outside the tree):

- A ```console block is read as a terminal session: ``$ COMMAND`` (a trailing ``\\``
  continues it on the next line), then the lines it printed, up to the next ``$``. Lines
  starting with ``# `` are notes to the reader, not output; a line ``...`` or ``(...)``
  stands for any number of lines left out. The commands run are the deterministic ones,
  ``capicua rules|play|replay ...`` (every deal is seeded; nothing depends on a clock) and
  ``python FILE`` for a FILE the document holds (below), except the few in ``SKIPPED``.
  When output is shown, stdout and stderr together must be exactly that, and the exit
  status 2 when it shows a ``capicua: error:`` line, else 0; with none shown, exit 0.
- A ```python block that is a whole program (it starts with an import, after an optional
  ``# NAME.py`` first line) must run. With that first line it is saved as NAME.py before
  anything runs, so examples can import one another and a ``$ python NAME.py`` in the
  document runs it (and compares its output); any other program is run on its own.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
PROGRAM = Path(sys.executable).parent / ("capicua.exe" if os.name == "nt" else "capicua")

# The capicua commands whose output is a function of their arguments alone.
DETERMINISTIC = {"rules", "play", "replay"}
ELISION = {"...", "(...)"}
SHELL_SYNTAX = {"&&", "||", "|", ";", ">", ">>", "<", "2>&1"}
FENCE = re.compile(r"^```(\w*)\s*$")
FILE_HEADER = re.compile(r"^# (\w+\.py)\s*$")
TIMEOUT = 120  # seconds per example; the slowest (a match of the hard bot) takes a few

# Examples that cannot run here, with why; each must still be in its document.
SKIPPED = {
    ("docs/regression-testing.md", "capicua replay verify golden-copy"):
        "shows what a made-up engine change would print",
    ("docs/arena.md", "capicua replay show club/replays/s00000-r0.binpb.gz --hand 1"):
        "needs a tournament's output directory",
    ("docs/arena.md", 's = standings.load(Path("arena-demo-1"))'):
        "needs a tournament's output directory",
    ("docs/ladder.md", "await lobby.join_ladder("):
        "needs a server running a ladder (tests/test_ladder_server.py joins one)",
    ("docs/writing-a-bot.md", "capicua play --rules iq-1v1 --human 0 --bots medium"):
        "a person plays it (tests/test_client_human.py drives it with piped input)",
}  # fmt: skip


@dataclass(frozen=True)
class Example:
    """One thing a document says can be run."""

    doc: str
    line: int  # where it is in the document (1-based)
    text: str  # the command as written, or a python program's code
    argv: tuple[str, ...]  # what runs (a program without a file name reads its code on stdin)
    shown: tuple[str, ...] | None  # the output the document shows (None: none shown)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def skip_reason(self) -> str | None:
        return next(
            (why for (doc, key), why in SKIPPED.items() if doc == self.doc and key in self.text),
            None,
        )


def fenced_blocks(text: str) -> Iterator[tuple[str, int, list[str]]]:
    """Every fenced block: its language, the line number of its first line, its lines."""
    lang: str | None = None
    body: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if lang is None and fence is not None:
            lang, body, start = fence.group(1), [], number + 1
        elif lang is not None and line.rstrip() == "```":
            yield lang, start, body
            lang = None
        elif lang is not None:
            body.append(line)


def session(lines: list[str], start: int) -> Iterator[tuple[int, str, list[str]]]:
    """A console block's commands: line number, command, output lines shown."""
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1  # a note, or output of nothing we know
            continue
        number, command = start + i, lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        output: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            if not lines[i].startswith("# "):
                output.append(lines[i])
            i += 1
        while output and not output[-1].strip():
            output.pop()  # the blank line before the next command's note
        yield number, command, output


def command_argv(command: str, files: set[str]) -> tuple[str, ...] | None:
    """What to run for a console command, or None when it is not a deterministic one."""
    try:
        argv = shlex.split(command, comments=True)
    except ValueError:
        return None
    if len(argv) < 2 or any(t in SHELL_SYNTAX or t.startswith("$(") for t in argv):
        return None
    if argv[0] == "capicua" and argv[1] in DETERMINISTIC:
        return (str(PROGRAM), *argv[1:])
    if argv[0] == "python" and len(argv) == 2 and argv[1] in files:
        return (sys.executable, argv[1])
    return None


def program_file(lines: list[str]) -> tuple[str | None, bool]:
    """A python block's file name (from a ``# NAME.py`` first line) and whether it is a
    whole program (it starts with an import)."""
    header = FILE_HEADER.match(lines[0]) if lines else None
    code = [line for line in lines[1 if header else 0 :] if line.strip()]
    whole = bool(code) and code[0].startswith(("import ", "from "))
    return (header.group(1) if header else None), whole


def examples(doc: str) -> tuple[list[Example], dict[str, str]]:
    """A document's examples in order, and the files its python blocks define."""
    blocks = list(fenced_blocks((ROOT / doc).read_text(encoding="utf-8")))
    files: dict[str, str] = {}
    programs: list[tuple[int, str | None, str]] = []
    for lang, start, lines in blocks:
        if lang == "python":
            name, whole = program_file(lines)
            code = "\n".join(lines) + "\n"
            if name is not None:
                files[name] = code
            if whole:
                programs.append((start, name, code))
    found: list[Example] = []
    run_by_command: set[str] = set()
    for lang, start, lines in blocks:
        if lang != "console":
            continue
        for number, command, output in session(lines, start):
            argv = command_argv(command, set(files))
            if argv is None:
                continue
            if argv[0] == sys.executable:
                run_by_command.add(argv[1])
            found.append(Example(doc, number, command, argv, tuple(output) or None))
    for start, name, code in programs:
        if name not in run_by_command:
            argv = (sys.executable, name) if name else (sys.executable, "-")
            found.append(Example(doc, start, code, argv, None))
    return sorted(found, key=lambda e: e.line), files


def segments_of(shown: Sequence[str]) -> list[list[str]]:
    """The shown lines between elisions (n elisions: n + 1 segments, maybe empty)."""
    segments: list[list[str]] = [[]]
    for line in shown:
        if line.strip() in ELISION:
            segments.append([])
        else:
            segments[-1].append(line)
    return segments


def find(actual: Sequence[str], segment: list[str], start: int, end: int) -> int | None:
    """Where ``segment`` first occurs in ``actual[start:end]``."""
    for i in range(start, end - len(segment) + 1):
        if list(actual[i : i + len(segment)]) == segment:
            return i
    return None


def misfit(shown: Sequence[str], actual: Sequence[str]) -> str | None:
    """None when ``actual`` is what ``shown`` shows, line for line, an elision line
    standing for any number of lines (none included); else a diff of the first part of
    ``shown`` that does not fit."""
    first, *rest = segments_of(shown)
    if not rest:
        return None if list(actual) == first else diff(first, actual)
    *middle, last = rest
    pos, end = len(first), len(actual) - len(last)
    if end < pos or list(actual[:pos]) != first:
        return diff(first, actual[: len(first) + 5])
    if list(actual[end:]) != last:
        return diff(last, actual[max(pos, end - 5) :])
    for segment in middle:  # each as early as it fits, so the later ones have most room
        at = find(actual, segment, pos, end)
        if at is None:
            near = next((i for i in range(pos, end) if segment and actual[i] == segment[0]), pos)
            return diff(segment, actual[near : near + len(segment) + 5])
        pos = at + len(segment)
    return None


def diff(shown: Sequence[str], printed: Sequence[str]) -> str:
    lines = difflib.unified_diff(list(shown), list(printed), "shown", "printed", lineterm="")
    return "\n".join(lines)


def scratch(tmp: Path, files: dict[str, str]) -> Path:
    """The directory the examples run in: the repository's top level as symlinks, and the
    document's files."""
    for entry in ROOT.iterdir():
        if entry.name != ".git":
            (tmp / entry.name).symlink_to(entry)
    for name, code in files.items():
        assert not (tmp / name).exists(), f"{name}: a document's file shadows {ROOT / name}"
        (tmp / name).write_text(code, encoding="utf-8")
    return tmp


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    # Unbuffered, so stdout and stderr interleave in one pipe as on a terminal; a fixed
    # width and no colour, so tables are laid out the same everywhere.
    env |= {"PYTHONUNBUFFERED": "1", "COLUMNS": "80", "NO_COLOR": "1",
            "PYTHONIOENCODING": "utf-8"}  # fmt: skip
    return env


def run(example: Example, cwd: Path) -> str | None:
    """Run one example; None when it does what the document says, else what went wrong."""
    done = subprocess.run(
        example.argv,
        cwd=cwd,
        env=environment(),
        input=example.text if example.argv[1:] == ("-",) else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        check=False,
    )
    # Trailing spaces are the only normalisation: editors strip them from the documents.
    # Nothing else varies (relative paths, no timings in these commands' output).
    actual = [line.rstrip() for line in done.stdout.splitlines()]
    shown = [line.rstrip() for line in example.shown or ()]
    expected = 2 if any(line.startswith("capicua: error:") for line in shown) else 0
    if done.returncode != expected:
        return f"{example.where}: exit {done.returncode}, not {expected}:\n{done.stdout[-3000:]}"
    problem = misfit(shown, actual) if example.shown is not None else None
    if problem is not None:
        return f"{example.where}: `{example.text}` printed something else:\n{problem}"
    return None


@pytest.mark.parametrize("doc", DOCS)
def test_the_worked_examples_do_what_the_document_shows(doc: str, tmp_path: Path) -> None:
    found, files = examples(doc)
    cwd = scratch(tmp_path, files)
    failures = [
        problem
        for example in found
        if example.skip_reason() is None and (problem := run(example, cwd)) is not None
    ]
    assert not failures, "\n\n".join(failures)


def test_the_examples_that_matter_are_found() -> None:
    """The parser keeps finding the transcripts these tests exist for (a changed fence or
    prompt would otherwise check nothing, silently)."""
    readme, _ = examples("README.md")
    by_text = {e.text.split("#")[0].strip(): e for e in readme}
    play = by_text["capicua play --rules dominican --seed 5 --replay match.json.gz"]
    assert play.shown is not None and len(play.shown) > 40
    assert by_text["capicua replay verify match.json.gz"].shown
    assert any(e.text.startswith("import random") for e in readme)  # the engine from Python
    bot, files = examples("docs/writing-a-bot.md")
    assert set(files) == {"first_bot.py", "offline.py"}
    offline = [e for e in bot if e.argv[1:] == ("offline.py",)]
    assert len(offline) == 1 and offline[0].shown
    assert any(e.argv[1:] == ("first_bot.py",) for e in bot)
    rules, _ = examples("docs/rules.md")
    errors = [e for e in rules if e.shown and e.shown[0].startswith("capicua: error:")]
    assert len(errors) == 2


def test_every_skipped_example_is_still_there() -> None:
    texts = {(e.doc, e.text) for doc in DOCS for e in examples(doc)[0]}
    for doc, key in SKIPPED:
        assert any(d == doc and key in text for d, text in texts), f"{doc}: no {key!r} any more"


@pytest.mark.parametrize(
    ("shown", "actual", "expected"),
    [
        (["a", "b"], ["a", "b"], True),
        (["a", "b"], ["a", "b", "c"], False),
        (["a", "...", "d"], ["a", "b", "c", "d"], True),
        (["a", "...", "d"], ["a", "d"], True),
        (["a", "  (...)", "c", "...", "e"], ["a", "b", "c", "d", "e"], True),
        (["a", "...", "c", "...", "e"], ["a", "b", "d", "e"], False),
        (["a", "...", "a"], ["a"], False),  # one line cannot be both ends
        (["...", "z"], ["x", "y", "z"], True),
        (["a", "..."], ["b", "c"], False),
    ],
)
def test_an_elision_stands_for_any_lines_and_only_those(
    shown: list[str], actual: list[str], expected: bool
) -> None:
    assert (misfit(shown, actual) is None) is expected
