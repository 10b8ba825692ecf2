"""``capicua rules``: list and show the presets."""

from __future__ import annotations

import click


@click.group()
def rules() -> None:
    """List and show rulesets (presets and their knobs)."""
