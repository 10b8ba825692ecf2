"""``capicua match``: the lobby from the command line, and a live view for spectators.

Every command talks to a server: ``--server`` or $CAPICUA_SERVER (default
127.0.0.1:50051). Each kind of token has its own option and variable, so that one exported
for a bot is never sent as another: ``start`` and ``cancel`` take the host token
(``--host-token`` or $CAPICUA_HOST_TOKEN), ``join`` a bot token only when given
``--bot-token`` (none: it prints a seat token), ``register-bot`` the admin token
(``--admin-token`` or $CAPICUA_ADMIN_TOKEN). A token whose prefix shows it is of another kind
is refused before it is sent; a refusal names the token's source and the kind wanted. A
refusal from the server is printed as one line (``capicua: error: INVALID_ARGUMENT: seats:
...``), exit code 2.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from google.protobuf import json_format

from capicua.cli import secret, tls
from capicua.cli.secret import admin_token_options
from capicua.client.lobby import LobbyError, SyncLobby, TokenRefused
from capicua.client.spectator import Spectator
from capicua.common import interrupt
from capicua.common.channel import server_address
from capicua.common.errors import CapicuaError, unknown_name
from capicua.common.tokens import Kind, wrong_kind
from capicua.engine.display import outcome_text
from capicua.v1 import match_pb2, play_pb2
from capicua.wire import codec

T = TypeVar("T")
TIMEOUT = 15.0

#: What the host commands take, for the messages.
HOST_WANTED = (
    "start and cancel take the host token `capicua match create` printed for the match "
    "(--host-token or $CAPICUA_HOST_TOKEN)"
)
BOT_WANTED = (
    "join takes a bot token (`capicua match register-bot NAME`) in --bot-token, or none "
    "for a seat token"
)
ADMIN_WANTED = "register-bot takes the admin token the server was started with"
CREATOR_WANTED = (
    "create takes a bot token in --bot-token (create as that bot), or the admin token "
    "(--admin-token-file or $CAPICUA_ADMIN_TOKEN), or none"
)
ACCESS_WANTED = "bot-access takes the bot's own token in --bot-token"

#: ``cpu:LEVEL``: the wire's CpuLevel of each built-in level a CPU seat plays.
_SEAT_LEVELS = codec.CPU_LEVELS
_SEAT_LEVELS_TEXT = "|".join(_SEAT_LEVELS)  # easy|medium|hard
_STATES = {
    "waiting": match_pb2.MATCH_STATE_WAITING,
    "running": match_pb2.MATCH_STATE_RUNNING,
    "finished": match_pb2.MATCH_STATE_FINISHED,
}
_POLICIES = {
    "auto-play": match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
    "forfeit": match_pb2.TIMEOUT_POLICY_FORFEIT,
}

_server_only = click.option(
    "--server",
    metavar="HOST:PORT",
    help="The server (default: $CAPICUA_SERVER or 127.0.0.1:50051).",
)


def server_option(fn: Callable[..., None]) -> Callable[..., None]:
    """--server and the TLS options (capicua.cli.tls)."""
    return _server_only(tls.client_options(fn))


def json_option(help_text: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def match_name(text: str) -> str:
    """``matches/ID`` from ``ID`` or ``matches/ID``."""
    text = text.strip()
    return text if text.startswith("matches/") else f"matches/{text}"


def _enum_name(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix).lower().replace("_", "-")


@contextmanager
def _lobby(server: str | None) -> Iterator[SyncLobby]:
    with SyncLobby(server_address(server), tls=tls.current(), timeout=TIMEOUT) as lobby:
        yield lobby


@dataclass(frozen=True)
class Token:
    """A token, where it came from (``--host-token``, ``$CAPICUA_HOST_TOKEN``) and what the
    command wanted, so that a refusal can say all three."""

    value: str
    source: str
    wanted: str


def _token(param: str, value: str | None, allowed: set[Kind], wanted: str) -> Token | None:
    """The token of option ``param`` (None without one), refused here when its prefix
    shows a kind not in ``allowed``."""
    if not value or not value.strip():
        return None
    ctx = click.get_current_context()
    option = next(p for p in ctx.command.params if p.name == param)
    from_env = ctx.get_parameter_source(param) == click.core.ParameterSource.ENVIRONMENT
    envvar = getattr(option, "envvar", None)
    source = f"${envvar}" if from_env and isinstance(envvar, str) else option.opts[0]
    token = Token(value.strip(), source, wanted)
    complaint = wrong_kind(token.value, source, allowed, wanted)
    if complaint is not None:
        raise CapicuaError(complaint)
    return token


def _call(fn: Callable[..., T], *args: Any, token: Token | None = None) -> T:
    """One lobby call; a refusal becomes one line (naming the token's source if it was the
    token that was refused)."""
    # a call the server received may be done even though its answer never came
    interrupt.rerun(
        "the call may have reached the server: capicua match show or list says what it did, "
        "before the same command does it again"
    )
    try:
        return fn(*args, token=token.value if token else None)
    except LobbyError as e:
        raise _error(e, token) from None


def _error(e: LobbyError, token: Token | None = None) -> CapicuaError:
    if isinstance(e, TokenRefused) and token is not None:
        where = f"the token from {token.source}"
        return CapicuaError(f"{e.code.name}: {e.details} ({where}); {token.wanted}")
    return CapicuaError(str(e))


@click.group()
def match() -> None:
    """Create, join, start, list, show, cancel and watch matches on a server."""


def _parse_seats(text: str) -> list[match_pb2.SeatSpec]:
    specs = []
    for i, item in enumerate(t.strip().lower() for t in text.split(",")):
        kind, _, arg = item.partition(":")
        if kind == "open":
            specs.append(match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN))
        elif kind == "cpu":
            # no level given: the weakest, as the server's default
            level = _SEAT_LEVELS.get(arg or next(iter(_SEAT_LEVELS)))
            if level is None:
                known = unknown_name("CPU level", arg, tuple(_SEAT_LEVELS))
                raise click.BadParameter(f"seat {i}: {item!r}: {known}", param_hint="--seats")
            specs.append(match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_CPU, cpu_level=level))
        elif kind == "bot" and arg:
            specs.append(match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id=arg))
        else:
            raise click.BadParameter(
                f"seat {i}: {item!r} is not open, cpu[:{_SEAT_LEVELS_TEXT}] or bot:NAME",
                param_hint="--seats",
            )
    return specs


@match.command("create")
@click.option("--rules", "preset", required=True, metavar="NAME", help="Preset name.")
@click.option("--set", "overrides", multiple=True, metavar="KNOB=VALUE", help="Override a knob.")
@click.option(
    "--seats",
    metavar="SPEC,...",
    help=f"One per seat: open, cpu[:{_SEAT_LEVELS_TEXT}] or bot:NAME (default: all open).",
)
@click.option("--timer-ms", type=click.IntRange(min=0), default=0, help="Time per decision.")
@click.option("--on-timeout", type=click.Choice(sorted(_POLICIES)), default="auto-play")
@click.option("--private", is_flag=True, help="Do not list the match publicly.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A label (repeatable).")
@click.option(
    "--seed",
    type=click.IntRange(0, 2**64 - 1),
    help="The match seed (default: the server draws one, shown to nobody before the end). "
    "A chosen seed tells every deal: open seats then take joiners who accept it, and bots "
    "reserved by others must accept chosen seeds.",
)
@click.option(
    "--request-id",
    metavar="UUID",
    help="The call's request_id (default: a fresh UUID4). The same command run again with "
    "the same one is a safe retry: it prints the match it created, without creating another.",
)
@click.option(
    "--bot-token",
    metavar="TOKEN",
    help="Create the match as this bot (never read from the environment): it may reserve "
    "its own seats (bot:NAME) and those of bots that let it.",
)
@admin_token_options("Create as the admin: may reserve any bot.")
@server_option
def create_cmd(
    preset: str,
    overrides: tuple[str, ...],
    seats: str | None,
    timer_ms: int,
    on_timeout: str,
    private: bool,
    tags: tuple[str, ...],
    seed: int | None,
    request_id: str | None,
    bot_token: str | None,
    admin_token: str | None,
    admin_token_file: Path | None,
    server: str | None,
) -> None:
    """Create a match; prints its id, the host token and how to join each open seat.

    A seat reserved for a bot (bot:NAME) takes that bot's consent: its token
    (--bot-token), the admin token, or a bot that lets anyone (reservable_by '*')."""
    admin = secret.admin_token(admin_token, admin_token_file)
    if bot_token and admin:
        raise click.UsageError("--bot-token and the admin token: give one of them")
    token = _token("bot_token", bot_token, {Kind.BOT}, CREATOR_WANTED) or _token(
        "admin_token", admin, set(), CREATOR_WANTED
    )
    request = match_pb2.CreateMatchRequest(
        request_id=request_id or str(uuid.uuid4()),
        preset=preset,
        overrides=list(overrides),
        seats=_parse_seats(seats) if seats else [],
        settings=match_pb2.MatchSettings(
            turn_timer_ms=timer_ms,
            on_timeout=_POLICIES[on_timeout],
            visibility=match_pb2.VISIBILITY_PRIVATE if private else match_pb2.VISIBILITY_PUBLIC,
            tags=list(tags),
        ),
    )
    if seed is not None:
        request.seed = seed
    with _lobby(server) as lobby:
        response = _call(lobby.create_match, request, token=token)
    m = response.match
    click.echo(f"match {m.name} created ({m.ruleset.name}, {len(m.seats)} seats, waiting)")
    click.echo(f"host token: {response.host_token}")
    accept = " --accept-chosen-seed" if m.seed_chosen else ""
    for s in m.seats:
        if s.kind == match_pb2.SEAT_KIND_OPEN:
            click.echo(f"seat {s.seat} open: capicua match join {m.name} --seat {s.seat}{accept}")
        else:
            click.echo(f"seat {s.seat} {_seat_label(s)}")
    if m.seed_chosen:
        click.echo(_SEED_CHOSEN)
    click.echo(f"start: capicua match start {m.name} --host-token {response.host_token}")
    click.echo(
        "(a bot takes an open seat with `join --bot-token`; without one, join prints a seat "
        "token; open seats left at the start are played by Easy CPUs)"
    )


_SEED_CHOSEN = (
    "seed: chosen by its creator, who can compute every seat's tiles (open seats are "
    "joined only with --accept-chosen-seed)"
)


def _seat_label(s: match_pb2.SeatStatus) -> str:
    if s.kind == match_pb2.SEAT_KIND_CPU:
        return f"cpu:{_enum_name(match_pb2.CpuLevel, s.cpu_level or 1, 'CPU_LEVEL_')}"
    if s.kind == match_pb2.SEAT_KIND_BOT:
        return f"bot:{s.bot_id}"
    return f"guest:{s.player}" if s.player else "open"


@match.command("join")
@click.argument("match_id", metavar="ID")
@click.option("--seat", type=click.IntRange(min=0), help="The seat wanted.")
@click.option("--name", "display_name", default="", help="Display name (one-seat clients).")
@click.option(
    "--bot-token",
    "--token",
    "bot_token",
    help="Take the seat for this bot (never read from the environment); none: print a seat token.",
)
@click.option(
    "--accept-chosen-seed",
    is_flag=True,
    help="Take an open seat of a match whose creator chose the seed (and so can compute "
    "this seat's tiles).",
)
@server_option
def join_cmd(
    match_id: str,
    seat: int | None,
    display_name: str,
    bot_token: str | None,
    accept_chosen_seed: bool,
    server: str | None,
) -> None:
    """Take a seat: for the bot whose token is given, or a seat token for one client."""
    token = _token("bot_token", bot_token, {Kind.BOT}, BOT_WANTED)
    request = match_pb2.JoinMatchRequest(
        name=match_name(match_id),
        display_name=display_name,
        accept_chosen_seed=accept_chosen_seed,
    )
    if seat is not None:
        request.seat = seat
    with _lobby(server) as lobby:
        response = _call(lobby.join_match, request, token=token)
    taken = next(s for s in response.match.seats if s.seat == response.seat)
    whose = f" for bots/{taken.bot_id}" if token and taken.bot_id else ""
    click.echo(f"seat {response.seat} of {response.match.name}{whose}")
    if response.seat_token:
        click.echo(f"seat token: {response.seat_token}")
        click.echo(f"play it: capicua bot human --token {response.seat_token} (or any bot)")


def _host_command(name: str, help_text: str) -> Callable[[Callable[..., None]], click.Command]:
    def wrap(fn: Callable[..., None]) -> click.Command:
        fn = click.option(
            "--host-token",
            envvar="CAPICUA_HOST_TOKEN",
            help="The host token from create (default: $CAPICUA_HOST_TOKEN).",
        )(fn)
        fn = server_option(fn)
        fn = click.argument("match_id", metavar="ID")(fn)
        return match.command(name, help=help_text)(fn)

    return wrap


def _host_token(value: str | None) -> Token:
    token = _token("host_token", value, {Kind.HOST}, HOST_WANTED)
    if token is None:
        # $CAPICUA_TOKEN used to be read here too: say why it no longer counts
        old = " ($CAPICUA_TOKEN is only read by bots)" if _exported("CAPICUA_TOKEN") else ""
        raise click.UsageError(
            "no host token: give --host-token or set CAPICUA_HOST_TOKEN "
            f"(`capicua match create` prints it){old}"
        )
    return token


def _exported(variable: str) -> bool:
    return bool(os.environ.get(variable, "").strip())


@_host_command("start", "Start a waiting match (CPUs take the open seats).")
def start_cmd(match_id: str, host_token: str | None, server: str | None) -> None:
    token = _host_token(host_token)
    with _lobby(server) as lobby:
        started = _call(lobby.start_match, match_name(match_id), token=token)
    click.echo(f"{started.name} started")


@_host_command("cancel", "Cancel a match (a running one ends with TERMINATION_CANCELLED).")
@click.option("--reason", default="", help="Recorded in the outcome.")
def cancel_cmd(match_id: str, host_token: str | None, server: str | None, reason: str) -> None:
    token = _host_token(host_token)
    with _lobby(server) as lobby:
        cancelled = _call(lobby.cancel_match, match_name(match_id), reason, token=token)
    click.echo(f"{cancelled.name} cancelled: {cancelled.outcome.reason}")


@match.command("list")
@click.option("--state", type=click.Choice(sorted(_STATES)), help="Only matches in this state.")
@click.option("--tag", default="", help="Only matches with this tag.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@json_option("Print one JSON list of capicua.v1.Match (protobuf's JSON mapping).")
@server_option
def list_cmd(state: str | None, tag: str, limit: int, as_json: bool, server: str | None) -> None:
    """Public matches, newest first."""
    request = match_pb2.ListMatchesRequest(
        page_size=min(500, limit),
        state=_STATES[state] if state else match_pb2.MATCH_STATE_UNSPECIFIED,
        tag=tag,
    )
    with _lobby(server) as lobby:
        try:
            found = list(itertools.islice(lobby.list_matches(request), limit))
        except LobbyError as e:
            raise _error(e) from None
    if as_json:
        _echo_json([_match_json(m) for m in found])
        return
    if not found:
        click.echo("no matches")
        return
    for m in found:
        click.echo(_summary(m))


def _summary(m: match_pb2.Match) -> str:
    state = _enum_name(match_pb2.MatchState, m.state, "MATCH_STATE_")
    seats = " ".join(_seat_label(s) for s in m.seats)
    tags = f" [{', '.join(m.settings.tags)}]" if m.settings.tags else ""
    scores = "-".join(str(s) for s in m.scores)
    return f"{m.name}  {state:<8}  {m.ruleset.name:<16} {scores:<9} {seats}{tags}"


@match.command("show")
@click.argument("match_id", metavar="ID")
@json_option("Print the match as one JSON object (capicua.v1.Match in protobuf's JSON mapping).")
@server_option
def show_cmd(match_id: str, as_json: bool, server: str | None) -> None:
    """Everything public about one match."""
    with _lobby(server) as lobby:
        m = _call(lobby.get_match, match_name(match_id))
    if as_json:
        _echo_json(_match_json(m))
        return
    for line in _show_lines(m):
        click.echo(line)


def _match_json(m: match_pb2.Match) -> dict[str, Any]:
    """``m`` in protobuf's JSON mapping with the .proto field names, as replays are written,
    every field present (a script need not know proto3's defaults)."""
    return json_format.MessageToDict(
        m, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _show_lines(m: match_pb2.Match) -> Iterator[str]:
    # no ruleset: the record of a match whose journal was too damaged to read it back
    rules = codec.ruleset_from_proto(m.ruleset) if m.HasField("ruleset") else None
    st = m.settings
    yield f"{m.name}: {_enum_name(match_pb2.MatchState, m.state, 'MATCH_STATE_')}"
    if rules is None:
        yield "rules: unknown (the server could not read them back)"
    else:
        overrides = f" ({', '.join(rules.overrides)})" if rules.overrides else ""
        yield f"rules: {rules.name}{overrides}"
    policy = _enum_name(match_pb2.TimeoutPolicy, st.on_timeout, "TIMEOUT_POLICY_")
    visibility = _enum_name(match_pb2.Visibility, st.visibility, "VISIBILITY_")
    yield f"timer: {st.turn_timer_ms} ms, on timeout: {policy}, {visibility}"
    if st.tags:
        yield f"tags: {', '.join(st.tags)}"
    if m.seed_chosen:
        yield _SEED_CHOSEN
    yield f"created: {m.create_time.ToDatetime().isoformat(timespec='seconds')}Z"
    for s in m.seats:
        where = "connected" if s.connected else "not connected"
        if s.timeouts:
            where += f", {s.timeouts} timeout(s), {s.auto_played} turn(s) auto-played"
        who = f" {s.player}" if s.player and s.kind != match_pb2.SEAT_KIND_CPU else ""
        yield f"seat {s.seat}: {_seat_label(s)}{who} ({where})"
    if m.state != match_pb2.MATCH_STATE_WAITING:
        yield f"hand {m.hand + 1}; scores: " + ", ".join(
            f"side {i} {sc}" for i, sc in enumerate(m.scores)
        )
    if m.HasField("outcome"):
        outcome = codec.outcome_from_proto(m.outcome)
        if rules is None:
            yield f"result: {outcome.termination.value}: {outcome.reason}"
        else:
            yield "result: " + outcome_text(rules, outcome)


@match.command("replay")
@click.argument("match_id", metavar="ID")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the replay here (.gz to compress, .binpb for protobuf bytes; default: ID.json).",
)
@server_option
def replay_cmd(match_id: str, output: Path | None, server: str | None) -> None:
    """Download the replay of a finished match (check it with `capicua replay verify`)."""
    name = match_name(match_id)
    with _lobby(server) as lobby:
        response = _call(lobby.get_replay, name)
    replay = codec.replay_from_proto(response.replay, source=name)
    path = output or Path(f"{name.removeprefix('matches/')}.json")
    codec.write_replay(path, replay)
    click.echo(f"replay of {name} written to {path}")


_SEEDS_HELP = (
    "Let those who may reserve the bot also choose such a match's seed (with which they "
    "can compute its tiles): an arena's duplicate deals need it."
)
_RESERVABLE_HELP = (
    "Who else may create matches reserving this bot's seats: bots/NAME (a registered bot, "
    "creating with its token) or '*' for anyone (repeatable; none: nobody but the bot and "
    "the admin)."
)


@match.command("register-bot")
@click.argument("bot_id")
@click.option("--description", default="", help="Shown in listings.")
@click.option(
    "--reservable-by", "reservable_by", multiple=True, metavar="WHO", help=_RESERVABLE_HELP
)
@click.option("--accept-chosen-seeds", is_flag=True, help=_SEEDS_HELP)
@admin_token_options("Needed when the server restricts it.")
@server_option
def register_cmd(
    bot_id: str,
    description: str,
    reservable_by: tuple[str, ...],
    accept_chosen_seeds: bool,
    admin_token: str | None,
    admin_token_file: Path | None,
    server: str | None,
) -> None:
    """Register a bot; prints its token (give it to the bot: --token or $CAPICUA_BOT_TOKEN)."""
    value = secret.admin_token(admin_token, admin_token_file)
    token = _token("admin_token", value, set(), ADMIN_WANTED)
    request = play_pb2.RegisterBotRequest(
        bot_id=bot_id,
        description=description,
        reservable_by=reservable_by,
        accept_chosen_seeds=accept_chosen_seeds,
    )
    with _lobby(server) as lobby:
        response = _call(lobby.register_bot, request, token=token)
    click.echo(f"{response.name} registered")
    click.echo(f"token: {response.token}")
    click.echo(f"reservable by: {_access_text(response.reservable_by)}")
    click.echo(_seeds_text(response.accept_chosen_seeds))


@match.command("bot-access")
@click.argument("reservable_by", nargs=-1, metavar="[WHO]...")
@click.option("--bot-token", metavar="TOKEN", required=True, help="The bot's own token.")
@click.option(
    "--accept-chosen-seeds/--refuse-chosen-seeds",
    default=None,
    help=_SEEDS_HELP + " Default: as it was.",
)
@server_option
def access_cmd(
    reservable_by: tuple[str, ...],
    bot_token: str,
    accept_chosen_seeds: bool | None,
    server: str | None,
) -> None:
    """Set who else may create matches reserving the bot's seats: bots/NAME or '*' (none:
    nobody but the bot and the admin). Replaces the bot's list."""
    token = _token("bot_token", bot_token, {Kind.BOT}, ACCESS_WANTED)
    request = play_pb2.SetBotAccessRequest(reservable_by=reservable_by)
    if accept_chosen_seeds is not None:
        request.accept_chosen_seeds = accept_chosen_seeds
    with _lobby(server) as lobby:
        response = _call(lobby.set_bot_access, request, token=token)
    click.echo(f"{response.name} reservable by: {_access_text(response.reservable_by)}")
    click.echo(_seeds_text(response.accept_chosen_seeds))


def _seeds_text(accepted: bool) -> str:
    if accepted:
        return "chosen seeds: accepted from those who may reserve it"
    return "chosen seeds: only from itself and the admin"


def _access_text(reservable_by: Sequence[str]) -> str:
    if not reservable_by:
        return "nobody but itself and the admin"
    return ", ".join("anyone" if r == "*" else r for r in reservable_by)


# -- watch ----------------------------------------------------------------------------------


@dataclass
class Table(Spectator):
    """What ``match watch`` shows: the spectator's knowledge, and what the match waits
    for."""

    waiting: str = ""  # what the match waits for, when it does (see waiting_text)

    def render(self) -> Any:
        from rich.console import Group
        from rich.panel import Panel
        from rich.table import Table as RichTable
        from rich.text import Text

        title = f"{self.name} · {self.rules.name if self.rules else '?'} · hand {self.hand + 1}"
        chain = self.chain_text()
        seats = RichTable(show_header=True, header_style="bold", box=None)
        seats.add_column("seat")
        seats.add_column("player")
        seats.add_column("tiles", justify="right")
        for s, count in enumerate(self.counts.hands):
            name = self.players[s] if s < len(self.players) else ""
            seats.add_row(str(s), name, str(count))
        scores = ", ".join(f"side {i}: {sc}" for i, sc in enumerate(self.scores))
        parts: list[Any] = [
            Text(f"chain: {chain}"),
            Text(f"stock: {self.counts.stock}   scores: {scores}"),
            seats,
            Text("\n".join(self.log[-12:]), style="dim"),
        ]
        if self.waiting and not self.over:
            parts.append(Text(self.waiting, style="yellow"))
        if self.over:
            parts.append(Text(self.over, style="bold"))
        return Panel(Group(*parts), title=title)


def waiting_text(m: match_pb2.Match) -> str:
    """What ``m`` waits for, from what GetMatch shows everyone: the host's start, seats
    whose client is not connected; "" when it waits for nothing."""
    if m.state == match_pb2.MATCH_STATE_FINISHED:
        return ""
    not_started = m.state == match_pb2.MATCH_STATE_WAITING
    parts = []
    if not_started:
        parts.append(f"not started (the host starts it: capicua match start {m.name})")
    absent = [_seat_text(s) for s in m.seats if _not_connected(s)]
    if absent:
        parts.append("not connected: " + ", ".join(absent) + _late_text(m))
    free = [str(s.seat) for s in m.seats if s.kind == match_pb2.SEAT_KIND_OPEN and not s.occupied]
    if not_started and free:
        parts.append(f"open: seat {', '.join(free)} (a CPU takes it at the start)")
    return "waiting: " + "; ".join(parts) if parts else ""


def _not_connected(s: match_pb2.SeatStatus) -> bool:
    return s.kind != match_pb2.SEAT_KIND_CPU and s.occupied and not s.connected


def _seat_text(s: match_pb2.SeatStatus) -> str:
    """``seat 1 bot:mybot``, ``seat 0 guest:ana``; a guest without a name is ``guest``."""
    nameless = s.kind == match_pb2.SEAT_KIND_OPEN and not s.player
    return f"seat {s.seat} {'guest' if nameless else _seat_label(s)}"


def _late_text(m: match_pb2.Match) -> str:
    """What happens to a seat nobody plays, once the match runs."""
    if m.state != match_pb2.MATCH_STATE_RUNNING:
        return ""
    then = (
        "its side forfeits"
        if m.settings.on_timeout == match_pb2.TIMEOUT_POLICY_FORFEIT
        else "the server plays it"
    )
    return f" (its turn waits {m.settings.turn_timer_ms / 1000:g} s, then {then})"


@match.command("watch")
@click.argument("match_id", metavar="ID")
@server_option
def watch_cmd(match_id: str, server: str | None) -> None:
    """Follow a match live (public information only) until it ends, saying what it waits
    for whenever it waits (the host's start, a bot that is not connected)."""
    name = match_name(match_id)
    interrupt.rerun("the match is not affected: the same command watches it from where it is now")
    table = Table(name)
    # Ctrl-C unwinds from here: leaving the block ends the stream, then closes the channel
    with _lobby(server) as lobby:
        # the server sends the match's record whenever its seats or state change: what it
        # waits for comes with the stream (no polling)
        stream = _with_waits(lobby.watch_match(name, match_updates=True))
        try:
            if sys.stdout.isatty():
                _watch_live(stream, table)
            else:
                _watch_lines(stream, table)
        except LobbyError as e:
            raise _error(e) from None


def _with_waits(stream: Iterator[match_pb2.WatchMatchResponse]) -> Iterator[Any]:
    """The stream's game messages, and in place of each match record a new waiting text
    (str, "" once nothing is awaited) when it changed: the same line at every change of
    seats would drown the events."""
    last = ""
    for message in stream:
        if not message.HasField("match"):
            yield message
            continue
        text = waiting_text(message.match)
        if text != last:
            last = text
            yield text


def _watch_lines(stream: Iterator[Any], table: Table) -> None:
    for message in stream:
        if isinstance(message, str):
            if message:
                click.echo(message)
            continue
        for line in table.fold(message):
            click.echo(line)


def _watch_live(stream: Iterator[Any], table: Table) -> None:
    from rich.live import Live

    with Live(table.render(), refresh_per_second=8, transient=False) as live:
        for message in stream:
            if isinstance(message, str):
                table.waiting = message
            else:
                table.fold(message)
            live.update(table.render())
