"""The checkout and its tools, for the tests: where it is and the folders of the
``capicua`` namespace package; skipping a test for a missing tool is fine on a user's
machine, never in CI."""

from __future__ import annotations

import os
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
