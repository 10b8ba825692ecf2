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

from capicua.common import interrupt
from capicua.common.errors import CapicuaError

#: Every command: name -> (module, attribute, one-line help). Modules are imported only
#: when their command runs, so ``capicua --help`` and ``--version`` load neither gRPC nor
#: the server (the arena and the experiments live in arena/, mapped in pyproject.toml).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "rules": ("capicua.cli.rules", "rules", "List the presets and show a ruleset's knobs."),
    "play": ("capicua.cli.play", "play", "Play one match hand by hand; --human: play it yourself."),
    "replay": ("capicua.cli.replay", "replay", "Verify and show replay files."),
    "serve": ("capicua.cli.serve", "serve_cmd", "Run the match server."),
    "match": ("capicua.cli.match", "match", "Create, join, start, watch and list matches."),
    "bot": ("capicua.cli.bot", "bot", "Run a bot against a server."),
    "arena": ("capicua.arena.cli", "arena", "Tournaments and SPRTs between bots."),
    "experiment": (
        "capicua.arena.experiment.cli",
        "experiment",
        "A/B experiments and knob sweeps on rules.",
    ),
    "ladder": (
        "capicua.cli.ladder_demo",  # the arena's `ladder` group, with `demo` added
        "ladder",
        "Standing ladders: matchmaking on duplicate deals, a rated table.",
    ),
    "bench": ("capicua.cli.bench", "bench", "Benchmarks (print JSON with --json)."),
    "schema": (
        "capicua.cli.schema",
        "schema",
        "The JSON Schema of tournament, experiment, ladder and preset files, for editors.",
    ),
}


# click 8.2+ raises this for a group run without a command (8.1 prints the help itself)
_NO_ARGS_IS_HELP: type[click.UsageError] = getattr(
    click.exceptions, "NoArgsIsHelpError", type("_Never", (click.UsageError,), {})
)


class _Main(click.Group):
    """The ``capicua`` group: commands loaded on demand, and every error — the library's
    (:class:`CapicuaError`) and click's usage errors alike — as one ``capicua: error: ...``
    line with exit code 2."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command: click.Command = getattr(import_module(entry[0]), entry[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry[2]) for name, entry in COMMANDS.items()])

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.Exit as e:  # --help, --version
            sys.exit(e.exit_code)
        except _NO_ARGS_IS_HELP as e:  # `capicua` or `capicua arena` alone: the help
            click.echo(e.format_message())
            sys.exit(0)
        except click.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else "capicua"
            click.echo(f"capicua: error: {e.format_message()} (see '{where} --help')", err=True)
            sys.exit(2)
        except click.Abort as e:  # Ctrl-C (a KeyboardInterrupt, wrapped), or EOF at a prompt
            interrupt.exit_interrupted(e)
        except KeyboardInterrupt as e:  # outside a command: while one is looked up
            interrupt.exit_interrupted(e)
        except click.ClickException as e:
            click.echo(f"capicua: error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            from capicua.common import build

            build.check()  # never run a compiled module that its source has left behind
            return super().invoke(ctx)
        except CapicuaError as e:
            click.echo(f"capicua: error: {e}", err=True)
            sys.exit(2)
        except interrupt.Interrupted as e:  # a command that stopped itself cleanly
            interrupt.exit_interrupted(e)
        except BrokenPipeError:  # `capicua ... | head` is fine
            sys.exit(0)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``capicua --version``: the version, and on a second line which build runs."""
    if not value or ctx.resilient_parsing:
        return
    from capicua.common import build
    from capicua.common.version import version

    click.echo(f"capicua, version {version()}")
    click.echo(f"build: {build.current().describe()}")
    ctx.exit()


@click.group(name="capicua", cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and which build runs (compiled or pure Python), and exit.",
)
def main() -> None:
    """capicua: headless dominoes game service and bot arena."""
