"""The token format shared by the server and its clients: three kinds of token, told
apart by a prefix (``bot_``, ``seat_``, ``host_``) before ``secrets.token_urlsafe(32)``.

The server issues them and goes by their digest (``capicua.server.auth``); a client reads
the prefix to refuse a token of the wrong kind before sending it. Neither side imports the
other: this module is what they share.
"""

from __future__ import annotations

import secrets
from enum import StrEnum


class Kind(StrEnum):
    BOT = "bot"
    SEAT = "seat"
    HOST = "host"
    ADMIN = "admin"


#: The environment variable clients and the server read the admin token from.
ADMIN_TOKEN_ENV = "CAPICUA_ADMIN_TOKEN"

#: The prefix of each kind of token this server issues.
PREFIXES = {Kind.BOT: "bot_", Kind.SEAT: "seat_", Kind.HOST: "host_"}

#: ``secrets.token_urlsafe(32)`` is always 43 characters: with the length, a prefix can be
#: told apart from an unprefixed (older) token that merely starts with the same letters.
_RANDOM_CHARS = 43


def new_token(kind: Kind) -> str:
    return PREFIXES[kind] + secrets.token_urlsafe(32)


def new_admin_token() -> str:
    """A fresh admin token, for a server of one's own (no kind prefix: the server does not
    issue admin tokens, its operator gives it one)."""
    return secrets.token_urlsafe(32)


def kind_of(token: str) -> Kind | None:
    """The kind of a token this server issued, from its prefix; None for any other (an
    admin token, a bot token from before the prefixes, another server's token)."""
    for kind, prefix in PREFIXES.items():
        if token.startswith(prefix) and len(token) == len(prefix) + _RANDOM_CHARS:
            return kind
    return None


def wrong_kind(token: str, source: str, allowed: set[Kind], wanted: str) -> str | None:
    """The one-line complaint about a token whose prefix names a kind not in ``allowed``
    (None when it is allowed or its kind cannot be told). ``source`` says where the token
    came from (``--host-token``, ``$CAPICUA_BOT_TOKEN``), ``wanted`` what to use instead."""
    kind = kind_of(token)
    if kind is None or kind in allowed:
        return None
    return f"the token from {source} is a {kind} token; {wanted}"
