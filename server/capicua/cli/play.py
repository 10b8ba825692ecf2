"""``capicua play``: one match in-process."""

from __future__ import annotations

import click


@click.command()
def play() -> None:
    """Play one match in-process between built-in bots."""
