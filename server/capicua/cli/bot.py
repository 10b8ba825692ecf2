"""``capicua bot``: play seats on a server through the Python SDK (``capicua.client``).

Every command reads the server from ``--server`` or $CAPICUA_SERVER (default
127.0.0.1:50051) and the token from ``--token``, else $CAPICUA_TOKEN (what the arena sets
for its bots), else $CAPICUA_BOT_TOKEN or $CAPICUA_SEAT_TOKEN: a bot token (``capicua match
register-bot NAME``) plays every seat of that bot in any number of matches; a seat token
(``capicua match join ID``) plays one seat of one match and stops when it ends. A host
token is refused before connecting, naming where it came from.
Each runs until Ctrl+C / SIGTERM, or until ``--matches N`` matches have ended. Logs go to
stderr; a problem that retrying cannot fix (a bad token, a child that keeps crashing) is one
line, ``capicua: error: ...``, exit code 2.

``capicua bot check -- COMMAND`` is the other way round: it runs any bot against a server of
its own and checks it follows the protocol (:mod:`capicua.arena.botcheck`).
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from capicua.cli import tls
from capicua.common import interrupt

F = TypeVar("F", bound=Callable[..., Any])


def _sdk(module: str) -> Any:
    """``capicua.client.<module>``, imported when a command runs (the SDK lives in
    clients/python/, installed as ``capicua.client``)."""
    return importlib.import_module(f"capicua.client.{module}")


def _connection(fn: F) -> F:
    """--server, --token, --matches, --ask-forced, --connect-timeout, the TLS options."""
    options = [
        click.option(
            "--server",
            metavar="HOST:PORT",
            help="The server (default: $CAPICUA_SERVER or 127.0.0.1:50051).",
        ),
        click.option(
            "--token",
            envvar="CAPICUA_TOKEN",
            help="A bot token or a seat token (default: $CAPICUA_TOKEN, else "
            "$CAPICUA_BOT_TOKEN or $CAPICUA_SEAT_TOKEN).",
        ),
        click.option(
            "--matches",
            type=click.IntRange(min=1),
            help="Stop after this many matches have ended (default: run until stopped).",
        ),
        click.option(
            "--ask-forced",
            is_flag=True,
            help="Ask even when a decision has a single legal action.",
        ),
        click.option(
            "--connect-timeout",
            type=click.FloatRange(min=0),
            default=30.0,
            show_default=True,
            metavar="SECONDS",
            help="Give up when no server has answered at the address by then (0: keep "
            "trying); once one has, it is waited for forever.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return tls.client_options(fn)


def _log_level(default: str) -> Callable[[F], F]:
    return click.option(
        "--log-level",
        type=click.Choice(["debug", "info", "warning", "error"]),
        default=default,
        show_default=True,
        help="What to log on stderr.",
    )


def _bot_options(help: str) -> Callable[[F], F]:
    """--option KEY=VALUE (repeatable), given to the command as ``bot_options``."""
    return click.option(
        "--option",
        "bot_options",
        multiple=True,
        metavar="KEY=VALUE",
        help=help + ' VALUE is a TOML literal (3, 0.5, true, "text", [1, 2]) or a bare '
        "word; repeat for more.",
    )


def _ladder(fn: F) -> F:
    """--ladder, --version, --max-matches-at-once: join a server's ladder, then play."""
    options = [
        click.option(
            "--ladder",
            metavar="ladders/ID",
            help="First join this ladder of the server (`capicua serve --ladder FILE`) as "
            "--version, with the token: the ladder's matches then come on the bot's stream.",
        ),
        click.option(
            "--version",
            default="",
            metavar="LABEL",
            help="The version --ladder is joined as: 1-32 characters of [A-Za-z0-9_.-]; a "
            "new label starts a new rated entry after the bot's current one.",
        ),
        click.option(
            "--max-matches-at-once",
            "matches_at_once",
            type=click.IntRange(min=1),
            help="Matches of --ladder the bot plays at once (default 1; the server allows "
            "up to 32).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _play(bot: Any, log_level: str, **options: Any) -> None:
    if (options.get("ladder") is None) != (not options.get("version")):
        raise click.UsageError(
            "--ladder and --version go together, e.g. --ladder ladders/club --version v1"
        )
    if options.get("matches_at_once") is None:
        options["matches_at_once"] = 1
    elif options.get("ladder") is None:
        raise click.UsageError("--max-matches-at-once is the limit of a --ladder: give one")
    commands = _sdk("commands")
    commands.configure_logging(log_level)
    commands.play(bot, tls=tls.current() or False, **options)


@click.group()
def bot() -> None:
    """Play seats on a server: your Python bot, a built-in one, any program over
    stdio, or you at the terminal; check any bot against the protocol."""


@bot.command("run")
@click.argument("spec", metavar="MODULE:CLASS")
@_bot_options("A keyword argument of the class: CLASS(KEY=VALUE, ...).")
@_connection
@_ladder
@_log_level("info")
def run_cmd(spec: str, bot_options: tuple[str, ...], log_level: str, **options: Any) -> None:
    """Run the bot class MODULE:CLASS (a capicua.client.Bot subclass, or any class with
    choose(observation, legal_actions)), created with the --option keyword arguments
    (none by default). MODULE may be a dotted module name (the current folder is
    importable) or a path to a .py file."""
    commands = _sdk("commands")
    kwargs = commands.parse_options(bot_options)
    _play(commands.load_bot(spec, **kwargs), log_level, **options)


@bot.command("builtin")
@click.argument("name", metavar="NAME")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Seed its decisions.")
@_bot_options("An option of the bot, e.g. hard's iterations=50 or budget_ms=100.")
@_connection
@_ladder
@_log_level("info")
def builtin_cmd(
    name: str, seed: int | None, bot_options: tuple[str, ...], log_level: str, **options: Any
) -> None:
    """Run a built-in bot: random, easy, medium or hard (see docs/bots.md for hard's
    options)."""
    kwargs = _sdk("commands").parse_options(bot_options)
    _play(_sdk("builtin").BuiltinBot(name, seed, **kwargs), log_level, **options)


@bot.command(
    "stdio",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
@click.argument("command", nargs=-1, required=True, metavar="-- COMMAND [ARGS]...")
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=1),
    help="Time the program has for each answer (default: until the turn's deadline).",
)
@click.option(
    "--max-restarts",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Restarts of a program that crashed or hung before giving up.",
)
@_connection
@_ladder
@_log_level("info")
def stdio_cmd(
    command: tuple[str, ...],
    timeout_ms: int | None,
    max_restarts: int,
    log_level: str,
    **options: Any,
) -> None:
    """Run any program as a bot: one JSON decision request per line on its stdin, one JSON
    answer per line on its stdout ({"action_id": N} or {"action": "3-6:L"}). See
    docs/writing-a-bot.md for the schema. A program that crashes, hangs or prints garbage
    is reported here and its seat falls to the match's timeout policy."""
    argv = list(command)
    _sdk("commands").find_command(argv)
    stdio = _sdk("stdio")
    _play(
        stdio.StdioBot(argv, timeout_ms=timeout_ms, max_restarts=max_restarts),
        log_level,
        **options,
    )


@bot.command("human")
@_connection
@_log_level("warning")
def human_cmd(log_level: str, **options: Any) -> None:
    """Play a seat yourself at the terminal. With a seat token from `capicua match join`
    it plays that seat and stops when the match ends."""
    human = _sdk("human")
    _play(human.HumanBot(), log_level, again=human.RERUN, **options)


@bot.command(
    "check",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
@click.argument("command", nargs=-1, metavar="-- COMMAND [ARGS]...")
@click.option(
    "--remote",
    metavar="BOT_ID",
    help="Check a bot already connected to --server instead (the rows that need no proxy "
    "or restart; the rest are skipped).",
)
@click.option("--server", metavar="HOST:PORT", help="The server of a --remote bot.")
@click.option(
    "--token",
    metavar="TOKEN",
    help="With --remote: create its matches with this token (the admin's, or a bot token "
    "the bot lets reserve it); default: none, the bot must let anyone ('*').",
)
@click.option(
    "--rows",
    metavar="NAME,...",
    help="Run only these rows (comma-separated; --list-rows lists them).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Time for each row; a row that takes longer fails, saying what it waited for.",
)
@click.option(
    "--turn-timer-ms",
    type=click.IntRange(min=200, max=60_000),
    default=3000,
    show_default=True,
    help="The time for each decision in the rows that time the bot.",
)
@click.option(
    "--logs",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Keep the logs here: each row's bot (DIR/ROW.log) and the servers', those that "
    "say something (empty ones are removed); by default they are all removed.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead.")
@click.option("--list-rows", is_flag=True, help="Print the rows, what each checks, and exit.")
def check_cmd(
    command: tuple[str, ...],
    remote: str | None,
    server: str | None,
    token: str | None,
    rows: str | None,
    timeout: float,
    turn_timer_ms: int,
    logs: Path | None,
    as_json: bool,
    list_rows: bool,
) -> None:
    """Check that a bot follows the protocol: run COMMAND (any language; it reads
    CAPICUA_SERVER and CAPICUA_TOKEN) against a server of the check's own, through a proxy
    that records and disturbs its Play stream, one row per behaviour. Exit code 0 when every
    row passes, 1 when one fails, 2 when the check cannot run."""
    from rich.console import Console  # only here: `capicua bot run` starts without it

    interrupt.rerun("its servers and the bot are stopped: the same command checks from the start")
    botcheck = importlib.import_module("capicua.arena.botcheck")
    if list_rows:
        for row in botcheck.ROWS:
            local = "" if not row.local_only else " (local only)"
            click.echo(f"{row.name:<18} {row.summary}{local}")
        return
    options = botcheck.Options(
        command=list(command),
        remote=remote,
        server=server,
        token=token,
        rows=[r.strip() for r in rows.split(",") if r.strip()] if rows else None,
        timeout=timeout,
        timer_ms=turn_timer_ms,
        logs=logs.resolve() if logs is not None else None,
    )
    started = time.monotonic()
    results = botcheck.run(options)
    seconds = time.monotonic() - started
    if as_json:
        click.echo(botcheck.to_json(results, seconds))
    else:
        botcheck.render(results, seconds, Console(soft_wrap=False))
    sys.exit(0 if botcheck.all_passed(results) else 1)
