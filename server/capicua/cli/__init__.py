"""The ``capicua`` command line.

Each command group lives in its own module and is registered here. Errors a user can cause
(bad preset, bad knob, corrupt replay, bad action...) are :class:`UserError`-like exceptions
from the library; :class:`_Main` turns them into one clear line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

import click

from capicua.engine.errors import CapicuaError


class _Main(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CapicuaError as e:
            click.echo(f"capicua: error: {e}", err=True)
            sys.exit(2)
        except BrokenPipeError:  # `capicua ... | head` is fine
            sys.exit(0)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="capicua")
def main() -> None:
    """capicua: headless dominoes game service and bot arena."""


def _register() -> None:
    from capicua.cli import bench, bot, match, play, replay, rules, serve

    main.add_command(rules.rules)
    main.add_command(play.play)
    main.add_command(replay.replay)
    main.add_command(bench.bench)
    main.add_command(serve.serve_cmd)
    main.add_command(match.match)
    main.add_command(bot.bot)
    # capicua.arena lives in arena/ (mapped in pyproject.toml), checked by mypy on its own
    main.add_command(import_module("capicua.arena.cli").arena)
    main.add_command(import_module("capicua.arena.experiment.cli").experiment)


_register()
