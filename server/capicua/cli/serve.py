"""``capicua serve``: the authoritative gRPC match server."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from capicua.cli import secret
from capicua.cli.secret import admin_token_options
from capicua.common import interrupt
from capicua.common.channel import server_tls
from capicua.common.errors import CapicuaError
from capicua.common.naming import ladder_id
from capicua.common.sqldb import is_postgres
from capicua.server.addresses import DEFAULT_PREFIXES, PREFIX_OPTIONS, PREFIX_RANGES
from capicua.server.app import App, ServerConfig, configure_logging, serve
from capicua.server.ladders import LadderDef
from capicua.server.outbox import MAX_UNREAD_BYTES

if TYPE_CHECKING:
    from capicua.arena.ladder.config import Ladder

F = TypeVar("F", bound=Callable[..., Any])


def _limit(name: str, default: int, help_text: str) -> Callable[[F], F]:
    """A per-server limit: a positive whole number with its default shown."""
    return click.option(
        name, type=click.IntRange(min=1), default=default, show_default=True, help=help_text
    )


class _PrefixLength(click.IntRange):
    """A prefix length, written ``24`` or ``/24``."""

    name = "prefix length"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            value = value.removeprefix("/")
        return super().convert(value, param, ctx)


def _group_prefix(version: int) -> Callable[[F], F]:
    """The prefix length by which the per-address limits group IPv``version`` callers
    (capicua.server.addresses; docs/security.md has why the defaults)."""
    low, high = PREFIX_RANGES[version]
    return click.option(
        PREFIX_OPTIONS[version],
        type=_PrefixLength(low, high),
        metavar="LENGTH",
        default=DEFAULT_PREFIXES[version],
        show_default=True,
        help=f"The per-address limits count an IPv{version} caller together with its whole "
        f"network of this prefix length ({high}: each address alone). Below {high}, the "
        "loopback addresses are all one group: the local machine.",
    )


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=50051,
    show_default=True,
    help="Port to listen on; 0 picks a free one (printed as 'listening on HOST:PORT').",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the SQLite store (bots, finished matches, replays). Created if "
    "missing, but not its parent (like mkdir without -p): that must exist. "
    "Default: a temporary directory, removed at exit.",
)
@admin_token_options(
    "Only this bearer token may register bots; with it, CreateMatch may reserve any bot."
)
@click.option(
    "--turn-timer-ms",
    type=click.IntRange(50, 3_600_000),
    default=30_000,
    show_default=True,
    help="Default time for each decision of a remote seat.",
)
@click.option(
    "--cpu-workers",
    type=click.IntRange(min=1),
    help="Processes for CPU seats (default: one per core).",
)
@_limit("--max-matches-per-bot", 1000, "Unfinished matches one bot may hold seats in.")
@_limit(
    "--max-matches-per-creator",
    1000,
    "Unfinished matches one bot may have created (CreateMatch with its token).",
)
@_limit(
    "--max-matches-per-address",
    50,
    "Unfinished matches created without a token, per client address group.",
)
@_limit(
    "--max-matches-from-address",
    1000,
    "Unfinished matches created from one client address group in all: without a token, and "
    "with the tokens of the bots registered from it.",
)
@_limit("--max-matches", 10_000, "Unfinished matches on the server.")
@_limit(
    "--max-registrations-per-hour",
    60,
    "Bots one client address group may register in an hour (a server without an admin token).",
)
@_limit(
    "--max-unread-bytes",
    MAX_UNREAD_BYTES,
    "Bytes one Play stream or spectator may leave unread (beyond what a Play stream is sent "
    "on opening) before the server ends it, RESOURCE_EXHAUSTED / SLOW_CONSUMER.",
)
@click.option(
    "--keep-finished",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Finished matches held in memory, the most recent ones (a late answer to one is told "
    "STALE_TURN; older ones are read from the store, and an answer is told UNKNOWN_MATCH).",
)
@_group_prefix(4)
@_group_prefix(6)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Seconds to finish in-flight work on SIGTERM/SIGINT (a stop still running 30 s "
    "later logs what hung and exits 1).",
)
@click.option(
    "--on-stop",
    type=click.Choice(["cancel", "suspend"]),
    default="cancel",
    show_default=True,
    help="On SIGTERM/SIGINT: cancel the running matches (recorded CANCELLED with their "
    "replays), or suspend them and the waiting ones, to resume at the next start on the "
    "same --data (needs --data).",
)
@click.option(
    "--tls-cert",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Serve over TLS with this certificate chain (PEM); needs --tls-key.",
)
@click.option(
    "--tls-key",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="The private key (PEM) of --tls-cert.",
)
@click.option(
    "--tls-client-ca",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Mutual TLS: require client certificates signed by this CA (PEM).",
)
@click.option(
    "--ladder",
    "ladder_files",
    type=click.Path(dir_okay=False, path_type=Path),
    multiple=True,
    metavar="FILE",
    help="Run the standing ladder of FILE (TOML, docs/ladder.md; repeatable): bots join it "
    "with JoinLadder and its matches come on their Play stream; results in "
    "DATA/ladders/LADDER_ID.",
)
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve the --ladder ladders' live leaderboard in the browser on PORT (0: a free one; "
    "its URL is printed after the 'listening on' line).",
)
@click.option(
    "--http-host",
    default="127.0.0.1",
    show_default=True,
    metavar="HOST",
    help="The address the leaderboard listens on.",
)
@click.option(
    "--db",
    metavar="URL",
    help="Share the registered bots, the ladders' rosters and their results with every server "
    "process given the same PostgreSQL database (postgresql://USER@HOST/DB); each ladder's "
    "matchmaker then runs in one of them at a time (docs/ladder.md, 'Several server "
    "processes'). Default: all in --data's SQLite.",
)
@click.option(
    "--advertise",
    metavar="HOST:PORT",
    help="With --db: where the other server processes reach this one, to relay the ladder "
    "matches of bots connected to them (default: the listening address).",
)
@_limit("--max-ladder-entries", 1000, "Active entries of one ladder.")
@_limit("--max-versions-per-day", 24, "New versions one bot may start on one ladder in 24 hours.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="The server's log: JSON lines on stderr, one object each, with what Python and its "
    "libraries log there (warnings, errors, a thread's exception). Plain text is only the "
    "command's own last line (an error, or Ctrl-C's 'capicua: interrupted; ...') and what "
    "comes from below Python: gRPC's C core, and the thread dump of a stop that hung.",
)
def serve_cmd(
    host: str,
    port: int,
    data: Path | None,
    admin_token: str | None,
    admin_token_file: Path | None,
    turn_timer_ms: int,
    cpu_workers: int | None,
    max_matches_per_bot: int,
    max_matches_per_creator: int,
    max_matches_per_address: int,
    max_matches_from_address: int,
    max_matches: int,
    max_registrations_per_hour: int,
    max_unread_bytes: int,
    keep_finished: int,
    ipv4_group_prefix: int,
    ipv6_group_prefix: int,
    grace: float,
    on_stop: str,
    log_level: str,
    ladder_files: tuple[Path, ...] = (),
    http_port: int | None = None,
    http_host: str = "127.0.0.1",
    max_ladder_entries: int = 1000,
    max_versions_per_day: int = 24,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
    tls_client_ca: Path | None = None,
    db: str | None = None,
    advertise: str | None = None,
) -> None:
    """Run the match server (JSON logs on stderr) until SIGTERM or Ctrl+C."""
    interrupt.rerun(_rerun_text(data, on_stop))
    if on_stop == "suspend" and data is None:
        raise click.UsageError(
            "--on-stop suspend needs --data: a temporary store does not outlive the stop"
        )
    if data is not None:
        _check_data_parent(data)
    if db is not None and not is_postgres(db):
        raise click.UsageError(f"--db: expected a postgresql:// URL, got {db[:80]!r}")
    if advertise is not None and db is None:
        raise click.UsageError("--advertise is where the other processes on --db reach this one")
    ladders = read_ladders(ladder_files)
    if http_port is not None and not ladders:
        raise click.UsageError("--http serves the leaderboard of --ladder: give a ladder file")
    configure_logging(log_level, whole_process=True)
    config = ServerConfig(
        host=host,
        port=port,
        data=data,
        admin_token=secret.admin_token(admin_token, admin_token_file),
        turn_timer_ms=turn_timer_ms,
        cpu_workers=cpu_workers,
        max_matches_per_bot=max_matches_per_bot,
        max_matches_per_creator=max_matches_per_creator,
        max_matches_per_address=max_matches_per_address,
        max_matches_from_address=max_matches_from_address,
        max_matches=max_matches,
        max_registrations_per_hour=max_registrations_per_hour,
        ipv4_group_prefix=ipv4_group_prefix,
        ipv6_group_prefix=ipv6_group_prefix,
        max_unread_bytes=max_unread_bytes,
        keep_finished=keep_finished,
        grace_s=grace,
        on_stop=on_stop,
        tls=server_tls(tls_cert, tls_key, tls_client_ca),
        ladders=tuple(d for d, _ in ladders),
        max_ladder_entries=max_ladder_entries,
        max_versions_per_day=max_versions_per_day,
        db=db,
        relay=db is not None,
    )
    http = (http_host, http_port) if http_port is not None else None
    companion = ladder_runner(ladders, http, db=db, advertise=advertise) if ladders else None
    # SIGTERM is a normal stop (exit 0)
    if asyncio.run(serve(config, companion=companion)) == signal.SIGINT:
        raise interrupt.Interrupted()


def read_ladders(files: tuple[Path, ...]) -> list[tuple[LadderDef, Ladder]]:
    """The ladder files, read and checked before anything starts (one line per problem)."""
    from capicua.arena.ladder.config import LadderError, load_ladder

    out: list[tuple[LadderDef, Ladder]] = []
    for path in files:
        lad = load_ladder(path)
        t = lad.tournament
        for b in t.bots:
            if b.kind == "remote":
                raise LadderError(
                    f"{path}: entries.{b.name}: on a server's ladder, bots join by themselves "
                    "(JoinLadder); the file lists only the ladder's own entries (built-in bots)"
                )
        d = LadderDef(
            ladder_id(lad.name), lad.name, t.preset, t.overrides, t.time_limit_ms,
            tuple(b.name for b in t.bots),
        )  # fmt: skip
        if any(d.ladder_id == other.ladder_id for other, _ in out):
            raise LadderError(
                f"{path}: another ladder file has the id {d.ladder_id!r} (from its name): "
                "give each ladder its own name"
            )
        out.append((d, lad))
    return out


def ladder_runner(
    ladders: list[tuple[LadderDef, Ladder]],
    http: tuple[str, int] | None = None,
    on_url: Callable[[str], None] | None = None,
    *,
    db: str | None = None,
    advertise: str | None = None,
) -> Callable[[App], Awaitable[None]]:
    """What plays the ladders beside the server: the arena's hosted ladder runner (and
    with ``http``, the leaderboard's web server; its URL printed, or given to
    ``on_url``). With ``db``, each ladder's runner runs only while this process leads it
    (:mod:`capicua.cli.ladder_cluster`)."""

    def say_url(url: str) -> None:
        click.echo(f"leaderboard on {url}", nl=True)

    async def run(app: App) -> None:
        from capicua.arena.ladder.hosted import HostedControl, directory_of, run_hosted

        assert app.ladder_token is not None
        token = app.ladder_token
        dirs = {d.ladder_id: directory_of(app.data, d.name, db) for d, _ in ladders}
        app.ladders.control = HostedControl(dirs)
        address = f"127.0.0.1:{app.ladder_port}"
        if db is None:
            await run_hosted(
                [(lad, d.name) for d, lad in ladders],
                address=address,
                token=token,
                data=app.data,
                http=http,
                on_url=on_url or say_url,
            )
            return
        from capicua.arena.ladder.board import LadderBoard
        from capicua.arena.ladder.web import serving
        from capicua.cli.ladder_cluster import run_led

        def run_one(d: LadderDef, lad: Ladder) -> asyncio.Future[None]:
            hosted = run_hosted([(lad, d.name)], address=address, token=token, data=app.data, db=db)
            return asyncio.ensure_future(hosted)

        led = run_led(app, ladders, db=db, advertise=advertise, run_one=run_one)
        if http is None:
            await led
            return
        # every process serves the leaderboard, from the shared results (whoever leads)
        boards = [LadderBoard(dirs[d.ladder_id], lad.name) for d, lad in ladders]
        async with serving(boards, *http) as url:
            (on_url or say_url)(url)
            await led

    return run


def _rerun_text(data: Path | None, on_stop: str) -> str:
    """What serving again after a Ctrl-C does (the server stopped as on SIGTERM)."""
    if data is None:
        return "the store was temporary: the same command starts an empty server"
    if on_stop == "suspend":
        return f"the same command serves {data} again and resumes the suspended matches"
    return f"the same command serves {data} again (the running matches were cancelled)"


def _check_data_parent(data: Path) -> None:
    """``--data`` is created if missing, but only its last directory, like ``mkdir`` without
    ``-p``: a mistyped parent would otherwise start a new, empty store (no bots, no matches)
    somewhere nobody looks, and the server would seem to have lost everything."""
    parent = data.parent
    if not data.exists() and not parent.exists():
        raise CapicuaError(
            f"--data {data}: cannot open the store: its parent {parent} does not exist (only "
            "the last directory of --data is created; create the parent first)"
        )
