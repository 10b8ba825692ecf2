"""The checkout and its tools, for the tests: where it is and the folders of the
``capicua`` namespace package; skipping a test for a missing tool is fine on a user's
machine, never in CI."""

from __future__ import annotations

import os
import signal
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent  # the checkout
PORTIONS = ("server", "arena", "clients/python")  # the folders holding a `capicua/`


def missing_tool(reason: str) -> NoReturn:
    """Skip (fail when ``CI`` is set: .ci/run installs every tool the suite needs)."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} — CI must install it (see .ci/run)")
    pytest.skip(reason)


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    out: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for c in children:
                if int(c) not in out:
                    out.add(int(c))
                    todo.append(int(c))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextmanager
def default_sigint() -> Iterator[None]:
    """Children started inside get SIGINT's default disposition, as Ctrl-C in a terminal
    finds them: a process started with SIGINT ignored (a pytest-xdist worker may be, and a
    background job of a shell script is) passes that on, and Python then ignores SIGINT
    until it sets a handler of its own (POSIX)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def cpython_start_interrupted(err: str) -> bool:
    """Whether ``err`` is CPython's own report of a SIGINT during its start: in `site`, or
    in runpy before the module `-m` names has run a line (a traceback of frozen frames).
    On a loaded machine a signal sent at once can land there, before any line of capicua
    runs; no frame of it may then be in this repository's code (the caller checks)."""
    if "Fatal Python error: init_import_site" in err:
        return True
    lines = err.strip().splitlines()
    frames = [line for line in lines if line.lstrip().startswith("File ")]
    # frozen modules, or the standard library's own files that runpy imports as it starts
    # ("Could not import runpy module", then a frame in contextlib.py)
    stdlib = f'File "{sysconfig.get_paths()["stdlib"]}/'
    return (
        bool(lines)
        and lines[-1] == "KeyboardInterrupt"
        and bool(frames)
        and all('File "<frozen ' in line or stdlib in line for line in frames)
        and "site-packages" not in err
    )


def in_our_code(err: str) -> bool:
    """Whether a traceback in ``err`` has a frame in this repository's code (a frame's line,
    not any mention of a path: a Ctrl-C while CPython's site imports an editable install's
    path hooks prints ``KeyError: '.../clients/python'`` with no frame of ours)."""
    return any(f'File "{ROOT / part}' in err for part in ("server", "arena", "clients"))
