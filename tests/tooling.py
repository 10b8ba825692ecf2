"""Skipping a test for a missing tool is fine on a user's machine, never in CI."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing_tool(reason: str) -> NoReturn:
    """Skip (fail when ``CI`` is set: .ci/run installs every tool the suite needs)."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} — CI must install it (see .ci/run)")
    pytest.skip(reason)
