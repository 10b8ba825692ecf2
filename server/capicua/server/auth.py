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

Which RPC takes which tokens is declared once, below (:class:`Need`), and checked by
:meth:`Tokens.caller`; an RPC not listed goes by no token and ignores the metadata. The
handlers call :meth:`Tokens.caller` where their checks put it (after the shutting-down check,
and in StartMatch and CancelMatch after the match's name), so that a request with two faults
is told the same one as before the table existed.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from capicua.server import errors
from capicua.tokens import Kind, new_token

BOT_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")


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
#: CreateMatch: no token needed, but one sent must be valid.
CREATE_MATCH = Need()
#: JoinMatch: a bot token seats the bot; no token gets a seat token.
JOIN_MATCH = Need(
    frozenset({Kind.BOT}),
    refusal="authorization: JoinMatch takes a bot token, or no token for a seat token",
)
#: StartMatch, CancelMatch: some token; whether it may is the match's (:func:`hosts`).
HOST = Need(required=True)


def hosts(principal: Principal, match_id: str) -> bool:
    """Whether ``principal`` may start and cancel match ``match_id``: its host, or the admin."""
    return principal.kind is Kind.ADMIN or (
        principal.kind is Kind.HOST and principal.match_id == match_id
    )


def digest(token: str) -> str:
    """The SHA-256 hex digest under which a token is kept."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Tokens:
    """Token digests -> principals. The tokens themselves are never stored."""

    def __init__(self, admin_token: str | None = None) -> None:
        self._by_digest: dict[str, Principal] = {}
        self._admin = digest(admin_token) if admin_token else None

    @property
    def admin_required(self) -> bool:
        return self._admin is not None

    def issue(self, principal: Principal) -> str:
        """A new token for ``principal`` (returned once; only its digest is kept)."""
        token = new_token(principal.kind)
        self._by_digest[digest(token)] = principal
        return token

    def add_digest(self, token_digest: str, principal: Principal) -> None:
        """Restore a persisted token (bots survive a restart with the same --data)."""
        self._by_digest[token_digest] = principal

    def revoke(self, principal: Principal) -> None:
        for key in [k for k, p in self._by_digest.items() if p == principal]:
            del self._by_digest[key]

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
