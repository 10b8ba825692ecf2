"""CreateMatch's ``request_id`` (AIP-155): a retried call gets the first call's answer.

A client that sends CreateMatch and loses the reply (a timeout, a dropped connection)
cannot tell whether the match was created. With a ``request_id`` it may simply send the
same request again: when the server remembers that id from the same request of the same
caller, it answers with the response it sent the first time (the same match, the same host
token) and creates nothing; a different request under a remembered id is refused
(ALREADY_EXISTS / REQUEST_ID_REUSED), since the client must mean another match.

"The same request" is the request as the server serializes it, ``request_id`` left out
(compared by SHA-256, so a large custom ruleset costs 32 bytes); "the same caller" is the
principal of the call's token, or no token for both. Each principal has one token here (a
host or seat token per match or seat, one token per bot, one admin token), so that is the
same token.

Only successful creations are remembered: a refused request (a bad field, a limit) may be
sent again under the same id once it can succeed.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass

import grpc

from capicua.server import errors
from capicua.v1 import match_pb2

#: How many request_ids the server remembers: the newest ones, by first use. A count rather
#: than "the ids of the matches the registry still holds": a match of CPUs can finish (and a
#: busy server drop it) within a second, while its creator may still be retrying; and a
#: count bounds the memory whatever the matches do: each entry holds the response as sent
#: (250 bytes for a preset; 1.3 KB with 16 tags of 64 characters) and two short strings, so
#: 10,000 of them cost a few MB, under 20 MB at worst.
REMEMBERED = 10_000

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_NIL = "00000000-0000-0000-0000-000000000000"


def request_id_of(request: match_pb2.CreateMatchRequest) -> str | None:
    """The request's ``request_id`` in lowercase (None when unset); INVALID_ARGUMENT unless
    it is a UUID in the 8-4-4-4-12 text form (any version, either case) other than the nil
    UUID, which a client that forgot to fill it in would share with every other."""
    text = request.request_id
    if not text:
        return None
    if not _UUID.fullmatch(text) or text == _NIL:
        raise errors.invalid(
            "request_id",
            f"expected a UUID such as {'123e4567-e89b-42d3-a456-426614174000'!r} (a fresh "
            f"UUID4 per match), got {text[:80]!r}",
        )
    return text.lower()


@dataclass(frozen=True, slots=True)
class _Created:
    """What the server remembers of one request_id."""

    caller: str  # the principal's name; "" without a token
    request: bytes  # SHA-256 of the request as serialized, request_id cleared
    response: bytes  # the CreateMatchResponse as it was sent
    stored: asyncio.Future[None]  # the match's journal write (its reply waits for it)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One CreateMatch call, as :class:`RequestIds` sees it. ``earlier`` is the response to
    send again when the call retries a remembered one (else None: create the match, then
    :meth:`RequestIds.remember` the response)."""

    request_id: str | None
    caller: str
    request: bytes
    earlier: match_pb2.CreateMatchResponse | None = None
    # the write of the earlier call's match, while it is not done (await it before answering)
    stored: asyncio.Future[None] | None = None


class RequestIds:
    """The last :data:`REMEMBERED` request_ids of successful CreateMatch calls, in memory
    only: each holds a host token in the clear, which is never written anywhere (the store
    keeps digests), so a restart forgets them.

    Between :meth:`attempt` and :meth:`remember` the handler must not await: the two run in
    one step of the event loop, so that two copies of one request sent at once cannot both
    create a match. The second copy then waits for the first one's write (``stored``)."""

    def __init__(self, limit: int = REMEMBERED) -> None:
        self._limit = limit
        self._created: OrderedDict[str, _Created] = OrderedDict()

    def __len__(self) -> int:
        return len(self._created)

    def attempt(self, request: match_pb2.CreateMatchRequest, caller: str) -> Attempt:
        """Check ``request``'s request_id (INVALID_ARGUMENT when malformed; ALREADY_EXISTS /
        REQUEST_ID_REUSED when it is remembered from another request or caller) and find the
        earlier response of a retry."""
        request_id = request_id_of(request)
        if request_id is None:
            return Attempt(None, caller, b"")
        bare = match_pb2.CreateMatchRequest()
        bare.CopyFrom(request)
        bare.ClearField("request_id")
        digest = hashlib.sha256(bare.SerializeToString(deterministic=True)).digest()
        created = self._created.get(request_id)
        if created is None:
            return Attempt(request_id, caller, digest)
        if created.caller != caller or created.request != digest:
            raise errors.ApiError(
                grpc.StatusCode.ALREADY_EXISTS,
                errors.REQUEST_ID_REUSED,
                f"request_id: {request_id} was used for another CreateMatch request (other "
                "fields or another caller); send a new request_id for a new match",
                # the id as the client sent it (it compares with what it sent)
                {"field": "request_id", "request_id": request.request_id},
            )
        earlier = match_pb2.CreateMatchResponse.FromString(created.response)
        stored = None if created.stored.done() else created.stored
        return Attempt(request_id, caller, digest, earlier, stored)

    def remember(
        self,
        attempt: Attempt,
        response: match_pb2.CreateMatchResponse,
        stored: asyncio.Future[None],
    ) -> None:
        """Keep ``response`` for retries of ``attempt`` (nothing without a request_id),
        with ``stored``, the write its reply waits for; the oldest request_id goes when
        there are more than the limit."""
        if attempt.request_id is None or attempt.earlier is not None:
            return
        self._created[attempt.request_id] = _Created(
            attempt.caller, attempt.request, response.SerializeToString(), stored
        )
        while len(self._created) > self._limit:
            self._created.popitem(last=False)

    def forget(self, attempt: Attempt) -> None:
        """``attempt`` created no match after all (its write failed)."""
        if attempt.request_id is not None:
            self._created.pop(attempt.request_id, None)
