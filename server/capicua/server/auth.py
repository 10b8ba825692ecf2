"""Bearer tokens: who a request comes from.

Every token travels in the metadata as ``authorization: Bearer <token>`` and is checked here,
in one place. Three kinds are issued, each :func:`secrets.token_urlsafe` after a prefix that
names its kind (``bot_``, ``seat_``, ``host_``), so that a client can tell a token of the
wrong kind before sending it (:func:`kind_of`); the server itself goes by the digest only:

- a **bot token** (RegisterBot) names ``bots/{bot_id}``: its Play stream receives every seat
  reserved for or joined by that bot, and JoinMatch with it takes a seat for the bot;
- a **seat token** (JoinMatch without a bot token) names ``matches/{id}/seats/{n}``: one seat
  of one match, for a one-seat client;
- a **host token** (CreateMatch) names ``matches/{id}``: it may start and cancel that match.

Only a SHA-256 of each token is kept (and persisted, for bots), never the token itself, and
nothing here logs one. Bot tokens issued before the prefixes (no prefix) keep working.

Which RPC takes which tokens is declared once, below (:func:`needs`), and checked by one
server interceptor (:class:`Authenticate`) before the handler runs: a request with a bad
token is told so before anything about its fields, and a handler reads who called with
:func:`caller`. An RPC not listed goes by no token and ignores the metadata.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from capicua.common.tokens import Kind, new_token
from capicua.server import errors
from capicua.server.addresses import client_address
from capicua.server.names import MATCH_NAME
from capicua.server.store import REVOKED_KEPT
from capicua.v1 import ladder_pb2, match_pb2, play_pb2


@dataclass(frozen=True, slots=True)
class Principal:
    """Who holds a token. ``name`` is the resource it acts as (``bots/x``,
    ``matches/m/seats/1``, ``matches/m``)."""

    kind: Kind
    name: str
    bot_id: str = ""
    match_id: str = ""
    seat: int = -1

    @classmethod
    def bot(cls, bot_id: str) -> Principal:
        return cls(Kind.BOT, f"bots/{bot_id}", bot_id=bot_id)

    @classmethod
    def seat_of(cls, match_id: str, seat: int) -> Principal:
        return cls(Kind.SEAT, f"matches/{match_id}/seats/{seat}", match_id=match_id, seat=seat)

    @classmethod
    def host(cls, match_id: str) -> Principal:
        return cls(Kind.HOST, f"matches/{match_id}", match_id=match_id)


ADMIN = Principal(Kind.ADMIN, "admin")


@dataclass(frozen=True, slots=True)
class Need:
    """The tokens an RPC takes: ``kinds`` (empty: any kind), whether one is ``required``,
    and the PERMISSION_DENIED ``reason`` and ``refusal`` for a token of another kind. A
    malformed or unknown token is refused (UNAUTHENTICATED) whatever the need."""

    kinds: frozenset[Kind] = frozenset()
    required: bool = False
    refusal: str = ""
    reason: str = errors.BAD_TOKEN


#: Play: a bot token (all its seats) or a seat token (that seat).
PLAY = Need(
    frozenset({Kind.BOT, Kind.SEAT}),
    required=True,
    refusal="authorization: Play needs a bot token or a seat token",
)
#: RegisterBot on a server started with an admin token (otherwise it takes none).
REGISTER_BOT = Need(
    frozenset({Kind.ADMIN}),
    required=True,
    refusal="authorization: this server registers bots for its admin",
    reason=errors.NOT_ADMIN,
)
#: CreateMatch: no token (an anonymous creator, known by its address), a bot token (the
#: bot creates it) or the admin token; a host or seat token names no creator.
CREATE_MATCH = Need(
    frozenset({Kind.BOT, Kind.ADMIN}),
    refusal="authorization: CreateMatch takes a bot token, the admin token, or no token",
)
#: SetBotAccess: the bot's own token.
BOT_ONLY = Need(
    frozenset({Kind.BOT}),
    required=True,
    refusal="authorization: SetBotAccess takes the bot's own token",
)
#: JoinLadder, LeaveLadder: the bot's own token.
LADDER_BOT = Need(
    frozenset({Kind.BOT}),
    required=True,
    refusal="authorization: joining a ladder and an owner's control take the bot's own token",
)
#: A ladder's admin control (PauseLadder, RemoveEntry, StartSeason, EndSeason).
LADDER_ADMIN = Need(
    frozenset({Kind.ADMIN}),
    required=True,
    refusal="authorization: this call takes the server's admin token",
    reason=errors.NOT_ADMIN,
)
#: JoinMatch: a bot token seats the bot; no token gets a seat token.
JOIN_MATCH = Need(
    frozenset({Kind.BOT}),
    refusal="authorization: JoinMatch takes a bot token, or no token for a seat token",
)
#: StartMatch, CancelMatch: some token; whether it may is the match's (:func:`hosts`).
HOST = Need(required=True)


def _path(service: Any, method: str) -> str:
    """The gRPC method path (``/capicua.v1.PlayService/Play``); a KeyError at import when
    the proto no longer has the method, so the table cannot drift from the services."""
    return f"/{service.full_name}/{service.methods_by_name[method].name}"


_PLAY = play_pb2.DESCRIPTOR.services_by_name["PlayService"]
_MATCH = match_pb2.DESCRIPTOR.services_by_name["MatchService"]
_LADDER = ladder_pb2.DESCRIPTOR.services_by_name["LadderService"]


def needs(*, admin_required: bool) -> dict[str, Need]:
    """Method path -> the tokens it takes. RegisterBot takes the admin token only on a
    server started with one; otherwise anyone may register a bot."""
    table = {
        _path(_PLAY, "Play"): PLAY,
        _path(_PLAY, "SetBotAccess"): BOT_ONLY,
        _path(_MATCH, "CreateMatch"): CREATE_MATCH,
        _path(_MATCH, "JoinMatch"): JOIN_MATCH,
        _path(_MATCH, "StartMatch"): HOST,
        _path(_MATCH, "CancelMatch"): HOST,
        **{
            _path(_LADDER, m): LADDER_BOT
            for m in (
                "JoinLadder",
                "LeaveLadder",
                "BlockEntry",
                "ChallengeEntry",
                "StartGauntlet",
                "GetGauntlet",
            )
        },  # fmt: skip
        **{
            _path(_LADDER, m): LADDER_ADMIN
            for m in ("PauseLadder", "RemoveEntry", "StartSeason", "EndSeason")
        },
    }
    if admin_required:
        table[_path(_PLAY, "RegisterBot")] = REGISTER_BOT
    return table


# The principal of the call being handled. The interceptor sets it inside the handler's own
# call (each RPC runs in its own task, so calls never see each other's).
_CALLER: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "capicua_caller", default=None
)


def caller() -> Principal | None:
    """Who sent the call being handled (None: no token, on an RPC that takes none)."""
    return _CALLER.get()


def required_caller() -> Principal:
    """:func:`caller` on an RPC whose :class:`Need` requires a token."""
    principal = _CALLER.get()
    if principal is None:  # pragma: no cover - the interceptor refused the call already
        raise AssertionError("no caller on an RPC that requires a token")
    return principal


Behavior = Callable[..., Any]


class Authenticate(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # untyped in grpc
    """Checks each call's token against :func:`needs` before its handler runs; a refusal
    ends the call with its rich status, and the handler never starts."""

    def __init__(
        self,
        tokens: Tokens,
        table: Mapping[str, Need],
        on_unknown: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        """``on_unknown()``: called when a token is unknown (another server process on the
        same database may have just registered its bot, ``--db``); True: look it up again."""
        self._tokens = tokens
        self._table = dict(table)
        self._on_unknown = on_unknown

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[Any]],
        handler_call_details: Any,
    ) -> Any:
        handler = await continuation(handler_call_details)
        need = self._table.get(handler_call_details.method)
        if handler is None or need is None:
            return handler
        return _guarded(
            handler, lambda context: self._tokens.caller(context, need), self._on_unknown
        )


def _guarded(
    handler: Any,
    check: Callable[[Any], Principal | None],
    on_unknown: Callable[[], Awaitable[bool]] | None = None,
) -> Any:
    """``handler`` with ``check`` run first; its principal is :func:`caller` in the body."""

    async def authenticated(context: Any) -> None:
        try:
            try:
                principal = check(context)
            except errors.ApiError as e:
                if e.reason != errors.BAD_TOKEN or on_unknown is None or not await on_unknown():
                    raise
                principal = check(context)  # a bot learned just now: once more
        except errors.ApiError as e:
            await errors.abort(context, e)
        _CALLER.set(principal)

    def unary(behavior: Behavior) -> Behavior:
        async def call(request: Any, context: Any) -> Any:
            await authenticated(context)
            return await behavior(request, context)

        return call

    def streaming(behavior: Behavior) -> Behavior:
        async def call(request: Any, context: Any) -> Any:
            await authenticated(context)
            # aclosing: a stream the client ends runs the handler's cleanup at once
            async with contextlib.aclosing(behavior(request, context)) as messages:
                async for message in messages:
                    yield message

        return call

    serializers = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(unary(handler.unary_unary), **serializers)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(unary(handler.stream_unary), **serializers)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(streaming(handler.unary_stream), **serializers)
    return grpc.stream_stream_rpc_method_handler(streaming(handler.stream_stream), **serializers)


def creator_of(principal: Principal | None, peer: str) -> str:
    """Who creates a match, for the per-creator limits: ``admin``, ``bots/x``, or for a call
    without a token the caller's own address ``address:IP`` of grpc's ``peer``
    (:func:`~capicua.server.addresses.client_address`; the limits count it in its group)."""
    if principal is not None:
        return principal.name
    return client_address(peer)


def hosts(principal: Principal, match_id: str) -> bool:
    """Whether ``principal`` may start and cancel match ``match_id``: its host, or the admin."""
    return principal.kind is Kind.ADMIN or (
        principal.kind is Kind.HOST and principal.match_id == match_id
    )


def match_over(match_id: str) -> str:
    """Why the host and seat tokens of a finished match were revoked."""
    return f"matches/{match_id} is over"


def revoked_match(why: str) -> dict[str, str]:
    """The ErrorInfo metadata naming the match of a revocation's ``why`` (a
    :func:`match_over` text, as the store keeps it across restarts): ``{"match": name}``, or
    nothing for a text of another form. The token's holder was given that match with it, and
    the message names it anyway."""
    name = why.removesuffix(" is over")
    return {"match": name} if name != why and MATCH_NAME.fullmatch(name) else {}


def digest(token: str) -> str:
    """The SHA-256 hex digest under which a token is kept."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Tokens:
    """Token digests -> principals. The tokens themselves are never stored."""

    def __init__(self, admin_token: str | None = None) -> None:
        self._by_digest: dict[str, Principal] = {}
        self._by_principal: dict[Principal, set[str]] = {}
        # digest -> why it no longer works, for the last REVOKED_KEPT revoked tokens: a
        # client is told its token was revoked, not that it never existed
        self._revoked: OrderedDict[str, str] = OrderedDict()
        self._admin = digest(admin_token) if admin_token else None

    @property
    def admin_required(self) -> bool:
        return self._admin is not None

    def issue(self, principal: Principal) -> str:
        """A new token for ``principal`` (returned once; only its digest is kept)."""
        token = new_token(principal.kind)
        self.add_digest(digest(token), principal)
        return token

    def add_digest(self, token_digest: str, principal: Principal) -> None:
        """Restore a persisted token (bots, and unfinished matches, survive a restart with
        the same --data)."""
        self._by_digest[token_digest] = principal
        self._by_principal.setdefault(principal, set()).add(token_digest)

    def revoke(self, principal: Principal, why: str = "") -> None:
        """``principal``'s tokens stop working (with ``why``, the refusal says so)."""
        for key in self._by_principal.pop(principal, ()):
            del self._by_digest[key]
            if why:
                self.add_revoked(key, why)

    def add_revoked(self, token_digest: str, why: str) -> None:
        """Remember a revoked token (the last :data:`REVOKED_KEPT`), to tell its holder
        ``why`` rather than that it never existed; the store keeps the same ones across a
        restart (:meth:`~capicua.server.store.Store.load_revoked`)."""
        self._revoked[token_digest] = why
        self._revoked.move_to_end(token_digest)
        if len(self._revoked) > REVOKED_KEPT:
            self._revoked.popitem(last=False)

    def revoke_match(self, match_id: str, seats: int) -> None:
        """A finished match's host token and seat tokens stop working (bot tokens go on)."""
        why = match_over(match_id)
        self.revoke(Principal.host(match_id), why)
        for seat in range(seats):
            self.revoke(Principal.seat_of(match_id, seat), why)

    def __len__(self) -> int:
        """How many tokens work (the admin token aside)."""
        return len(self._by_digest)

    def lookup(self, token: str) -> Principal | None:
        d = digest(token)
        if self._admin is not None and secrets.compare_digest(d, self._admin):
            return ADMIN
        return self._by_digest.get(d)

    def caller(self, context: Any, need: Need) -> Principal | None:
        """The principal of the call's token, checked against ``need`` (None: no token, and
        ``need`` does not require one)."""
        principal = self.principal(context, required=need.required)
        if principal is not None and need.kinds and principal.kind not in need.kinds:
            raise errors.denied(need.reason, need.refusal)
        return principal

    def principal(self, context: Any, *, required: bool = True) -> Principal | None:
        """The principal of the call's bearer token. No token: None, or UNAUTHENTICATED when
        ``required``; a malformed or unknown token is always UNAUTHENTICATED."""
        token = bearer_token(context)
        if token is None:
            if required:
                raise errors.unauthenticated(
                    errors.MISSING_TOKEN,
                    "authorization: missing; send the metadata 'authorization: Bearer <token>'",
                )
            return None
        found = self.lookup(token)
        if found is None:
            why = self._revoked.get(digest(token))
            if why is not None:  # a precondition, as for the match itself: a client racing
                # the end of its match (a cancel as it finishes) is told what it expects
                raise errors.precondition(
                    errors.MATCH_FINISHED,
                    f"authorization: this token was revoked: {why}",
                    **revoked_match(why),
                )
            raise errors.unauthenticated(errors.BAD_TOKEN, "authorization: unknown token")
        return found


def bearer_token(context: Any) -> str | None:
    """The token of the ``authorization: Bearer <token>`` metadata, None when absent."""
    for key, value in context.invocation_metadata() or ():
        if key.lower() != "authorization":
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        scheme, _, token = text.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise errors.unauthenticated(
                errors.BAD_TOKEN, "authorization: expected 'Bearer <token>'"
            )
        return token
    return None
