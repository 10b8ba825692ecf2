"""``capicua schema KIND``: the JSON Schema of a configuration file, for editors.

The schemas are those the files are checked with (:mod:`capicua.common.schema`): an editor
that knows them (taplo, VS Code's Even Better TOML) completes the keys and flags a mistake
as it is typed, before ``capicua`` refuses it (docs/arena.md, "Checking a file as you
write it").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from capicua.arena.config import TournamentFile
from capicua.arena.experiment.config import experiment_json_schema
from capicua.arena.ladder.config import LadderFile
from capicua.cli.rules import MEANING
from capicua.common.schema import DRAFT, json_schema
from capicua.engine.rules import knobs_json_schema


def rules_json_schema() -> dict[str, Any]:
    """A preset file's JSON Schema, each knob described as ``capicua rules show`` does."""
    schema = knobs_json_schema()
    for knob, meaning in MEANING.items():
        schema["properties"][knob].setdefault("description", meaning)
    return {"$schema": DRAFT, "title": "capicua ruleset (a preset file's knobs)"} | schema


#: Each kind of file: its JSON Schema.
SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "tournament": lambda: json_schema(TournamentFile, "capicua tournament file"),
    "experiment": experiment_json_schema,
    "ladder": lambda: json_schema(LadderFile, "capicua ladder file"),
    "rules": rules_json_schema,
}


@click.command("schema")
@click.argument("kind", type=click.Choice(list(SCHEMAS)))
def schema(kind: str) -> None:
    """Print the JSON Schema of a KIND file (for an editor's TOML checks)."""
    click.echo(json.dumps(SCHEMAS[kind](), indent=2))
