"""``capicua replay``: check and show replay files."""

from __future__ import annotations

import click


@click.group()
def replay() -> None:
    """Verify and show replay files."""
