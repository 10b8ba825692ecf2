"""``capicua bench``: benchmarks that print JSON."""

from __future__ import annotations

import click


@click.group()
def bench() -> None:
    """Benchmarks (print JSON with --json)."""
