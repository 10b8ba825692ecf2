"""Shared fixtures: a headless Chromium for the HTML report tests (Debian's ``chromium``
through Playwright), skipped without one on a user's machine and a failure in CI, where
.ci/run installs it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capicua.server.app import configure_logging
from tests.tooling import missing_tool

# An in-process server logs as `capicua serve` does: JSON lines, plain tracebacks. structlog's
# default console renderer draws each traceback with its locals through rich, seconds apiece
# on a loaded machine, inside the server's answer to the call that failed (a test's bounded
# wait for that answer then ran out: test_error_reasons beside stress-ng).
configure_logging("info")

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium (skip without one, but fail in CI: .ci/run installs it)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing_tool("the playwright package is not installed")
    chosen = os.environ.get("CAPICUA_CHROMIUM")  # a browser of your choice, and only it
    candidates = (
        [chosen]
        if chosen
        else ["/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")]
    )
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    missing_tool(
        f"no chromium found at {chosen or '/usr/bin/chromium or on PATH'} "
        "(apt-get install chromium)"
    )


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """One headless Chromium for the module's tests (each test gets its own page)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def pytest_report_header() -> str:
    """Which build the suite tests: the pure source or the compiled modules (and none that
    has gone stale: the run stops before any test)."""
    from capicua.common import build

    try:
        return f"capicua build: {build.check().describe()}"
    except build.StaleBuildError as e:
        raise pytest.UsageError(str(e)) from None


# A real PostgreSQL server (tests/pgkit.py): `postgres_url` is a fresh database on it.
pytest_plugins = ["tests.pgkit"]
