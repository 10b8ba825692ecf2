"""The admin token on the command line: from a file or the environment, not from argv.

A value given as ``--admin-token TOKEN`` is visible to every local user in the process list
(``ps``, ``/proc/PID/cmdline``); ``$CAPICUA_ADMIN_TOKEN`` and ``--admin-token-file FILE``
are not. The option stays (scripts use it), with a warning on stderr each time.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from capicua.common.errors import CapicuaError
from capicua.common.tokens import ADMIN_TOKEN_ENV

F = TypeVar("F", bound=Callable[..., Any])

ENVVAR = ADMIN_TOKEN_ENV
IN_ARGV = (
    "capicua: warning: --admin-token on the command line is visible to every local user "
    f"in the process list; use ${ENVVAR} or --admin-token-file FILE"
)


def admin_token_options(help_text: str) -> Callable[[F], F]:
    """``--admin-token`` (or ``$CAPICUA_ADMIN_TOKEN``) and ``--admin-token-file``."""

    def decorate(f: F) -> F:
        f = click.option(
            "--admin-token-file",
            type=click.Path(dir_okay=False, path_type=Path),
            metavar="FILE",
            help="Read the admin token from FILE (its first line).",
        )(f)
        return click.option(
            "--admin-token",
            envvar=ENVVAR,
            metavar="TOKEN",
            help=f"{help_text} Prefer ${ENVVAR} or --admin-token-file: a value given "
            "here is visible in the process list.",
        )(f)

    return decorate


def admin_token(value: str | None, file: Path | None) -> str | None:
    """The admin token of the two options (None: neither); warns when it came from argv."""
    ctx = click.get_current_context()
    given = bool(value and value.strip())
    from_argv = (
        given and ctx.get_parameter_source("admin_token") is click.core.ParameterSource.COMMANDLINE
    )
    if file is not None:
        if from_argv:
            raise CapicuaError("--admin-token and --admin-token-file: give one of them")
        return _read(file)
    if from_argv:
        click.echo(IN_ARGV, err=True)
    return value.strip() if given and value else None


def _read(file: Path) -> str:
    try:
        text = file.read_text(encoding="utf-8")
        mode = file.stat().st_mode
    except (OSError, UnicodeDecodeError) as e:
        raise CapicuaError(f"--admin-token-file {file}: cannot read it: {e}") from None
    lines = text.splitlines()
    token = lines[0].strip() if lines else ""
    if not token:
        raise CapicuaError(f"--admin-token-file {file}: its first line is empty")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        click.echo(
            f"capicua: warning: --admin-token-file {file} can be read by other users "
            f"(mode {stat.S_IMODE(mode):o}); chmod 600 it",
            err=True,
        )
    return token
