"""``--tls``, ``--tls-ca``, ``--tls-cert`` and ``--tls-key``: how a command that connects to
a server (``capicua bot ...``, ``capicua match ...``) reaches one over TLS (docs/tls.md).

The options are not passed to the command's function: :func:`client_options` stores them
in the click context, and :func:`current` turns them into the
:class:`~capicua.common.channel.ClientTLS` every channel is made with (None: plaintext).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from capicua.common.channel import ClientTLS, client_tls

F = TypeVar("F", bound=Callable[..., Any])

_KEY = "capicua.tls"


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta.setdefault(_KEY, {})[param.name] = value
    return value


def client_options(fn: F) -> F:
    """The four client TLS options (each also read from its $CAPICUA_TLS* variable)."""
    path = click.Path(dir_okay=False, path_type=Path)
    options = [
        click.option(
            "--tls",
            is_flag=True,
            envvar="CAPICUA_TLS",
            expose_value=False,
            callback=_store,
            help="Connect over TLS, trusting the system's CAs (env CAPICUA_TLS=1).",
        ),
        click.option(
            "--tls-ca",
            type=path,
            metavar="FILE",
            envvar="CAPICUA_TLS_CA",
            expose_value=False,
            callback=_store,
            help="Connect over TLS, trusting this CA certificate (PEM; implies --tls).",
        ),
        click.option(
            "--tls-cert",
            type=path,
            metavar="FILE",
            envvar="CAPICUA_TLS_CERT",
            expose_value=False,
            callback=_store,
            help="A client certificate (PEM) for a server that wants one; needs --tls-key.",
        ),
        click.option(
            "--tls-key",
            type=path,
            metavar="FILE",
            envvar="CAPICUA_TLS_KEY",
            expose_value=False,
            callback=_store,
            help="The private key (PEM) of --tls-cert.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def current() -> ClientTLS | None:
    """The TLS settings the running command was given (None: plaintext)."""
    ctx = click.get_current_context(silent=True)
    given = ctx.meta.get(_KEY, {}) if ctx is not None else {}
    return client_tls(
        bool(given.get("tls")), given.get("tls_ca"), given.get("tls_cert"), given.get("tls_key")
    )
