"""Placeholder: being written (standings and ratings)."""

from __future__ import annotations

import click


@click.command("standings")
@click.argument("directory", type=click.Path(path_type=str))
def standings_cmd(directory: str) -> None:
    """Print the standings of a tournament directory."""
    raise click.ClickException("not yet")
