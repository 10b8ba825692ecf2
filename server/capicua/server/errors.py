"""Errors of the server: canonical status codes with one ``google.rpc.ErrorInfo`` (AIP-193).

Unary RPCs end with :func:`abort` (the rich status travels in the ``grpc-status-details-bin``
trailer, so ``grpc_status.rpc_status.from_call`` reads it back). Inside the Play stream the
same :class:`google.rpc.status_pb2.Status` is sent as a message and the stream stays open.

Code paths raise :class:`ApiError` (a plain exception carrying the code, the ``reason``, a
message that names the field and the ErrorInfo metadata); :func:`rpc`, on every handler,
turns it into a status in one place. Anything else a handler raises is a server bug:
:func:`rpc` logs it with its traceback and answers INTERNAL (the message names the
exception's type only, never its text, which might hold anything).

The metadata names what a refusal refers to, so that a client need not parse the message:
``match``, ``seat``, ``turn_id``, ``field``, ``bot``, ``request_id``, ``limit``, as the
comment on each ErrorReason value in errors.proto lists them (tests/test_error_reasons.py
holds the same table and checks every refusal it provokes against it). Only what the
caller sent or may see goes there: never a tile, a token, or another seat's data.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar, cast

import grpc
import structlog
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from capicua.server.faults import Faults
from capicua.v1 import errors_pb2

log = structlog.get_logger("capicua.server.rpc")

#: ErrorInfo.domain of every error this server sends.
DOMAIN = "capicua.dev"


def _reason(value: errors_pb2.ErrorReason.ValueType) -> str:
    """The wire form of a reason: the name of its ``capicua.v1.ErrorReason`` value."""
    return errors_pb2.ErrorReason.Name(value)


# ErrorInfo.reason values. Their one home is the enum capicua.v1.ErrorReason
# (proto/capicua/v1/errors.proto says when each is sent and with which status code); these
# are its names, one constant per value, so that a reason missing from the enum fails at
# import. tests/test_error_reasons.py checks the two agree and that no call sends another.
INVALID_ARGUMENT = _reason(errors_pb2.INVALID_ARGUMENT)
UNKNOWN_TURN = _reason(errors_pb2.UNKNOWN_TURN)
ILLEGAL_ACTION = _reason(errors_pb2.ILLEGAL_ACTION)
STALE_TURN = _reason(errors_pb2.STALE_TURN)
MATCH_STARTED = _reason(errors_pb2.MATCH_STARTED)
MATCH_FINISHED = _reason(errors_pb2.MATCH_FINISHED)
MATCH_NOT_FINISHED = _reason(errors_pb2.MATCH_NOT_FINISHED)
SEAT_TAKEN = _reason(errors_pb2.SEAT_TAKEN)
NO_OPEN_SEAT = _reason(errors_pb2.NO_OPEN_SEAT)
MISSING_TOKEN = _reason(errors_pb2.MISSING_TOKEN)
BAD_TOKEN = _reason(errors_pb2.BAD_TOKEN)
NOT_HOST = _reason(errors_pb2.NOT_HOST)
NOT_ADMIN = _reason(errors_pb2.NOT_ADMIN)
NOT_YOUR_SEAT = _reason(errors_pb2.NOT_YOUR_SEAT)
NOT_RESERVABLE = _reason(errors_pb2.NOT_RESERVABLE)
TOO_MANY_REGISTRATIONS = _reason(errors_pb2.TOO_MANY_REGISTRATIONS)
SEED_NOT_ALLOWED = _reason(errors_pb2.SEED_NOT_ALLOWED)
SEED_CHOSEN = _reason(errors_pb2.SEED_CHOSEN)
LADDER_NOT_FOUND = _reason(errors_pb2.LADDER_NOT_FOUND)
NOT_ON_LADDER = _reason(errors_pb2.NOT_ON_LADDER)
TOO_MANY_ENTRIES = _reason(errors_pb2.TOO_MANY_ENTRIES)
LADDER_REFUSED = _reason(errors_pb2.LADDER_REFUSED)
MATCH_NOT_FOUND = _reason(errors_pb2.MATCH_NOT_FOUND)
REPLAY_NOT_FOUND = _reason(errors_pb2.REPLAY_NOT_FOUND)
UNKNOWN_MATCH = _reason(errors_pb2.UNKNOWN_MATCH)
BOT_EXISTS = _reason(errors_pb2.BOT_EXISTS)
REQUEST_ID_REUSED = _reason(errors_pb2.REQUEST_ID_REUSED)
TOO_MANY_MATCHES = _reason(errors_pb2.TOO_MANY_MATCHES)
SLOW_CONSUMER = _reason(errors_pb2.SLOW_CONSUMER)
STREAM_REPLACED = _reason(errors_pb2.STREAM_REPLACED)
SHUTTING_DOWN = _reason(errors_pb2.SHUTTING_DOWN)
INTERNAL = _reason(errors_pb2.INTERNAL)
REPLAY_FAILED = _reason(errors_pb2.REPLAY_FAILED)

#: Every reason the server may send (the enum's names but ERROR_REASON_UNSPECIFIED).
REASONS: frozenset[str] = frozenset(
    v.name for v in errors_pb2.ErrorReason.DESCRIPTOR.values if v.number
)


class ApiError(Exception):
    """A request the server refuses: a status code, an ErrorInfo reason and a message."""

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata = dict(metadata or {})

    def status(self) -> status_pb2.Status:
        return make_status(self.code, self.reason, self.message, self.metadata)

    def naming(self, **metadata: str) -> None:
        """Add ``metadata`` where this error has no such key yet: an outer layer that knows
        more of the request (CreateMatch its ``request_id``) says so without overriding what
        the code that refused it said."""
        self.metadata = {**metadata, **self.metadata}


def invalid(field: str, problem: str, reason: str = INVALID_ARGUMENT, **metadata: str) -> ApiError:
    """INVALID_ARGUMENT naming ``field`` (``"seats[2].kind: ..."``)."""
    return ApiError(
        grpc.StatusCode.INVALID_ARGUMENT,
        reason,
        f"{field}: {problem}",
        {"field": field, **metadata},
    )


def not_found(reason: str, message: str, **metadata: str) -> ApiError:
    return ApiError(grpc.StatusCode.NOT_FOUND, reason, message, metadata)


def precondition(reason: str, message: str, **metadata: str) -> ApiError:
    return ApiError(grpc.StatusCode.FAILED_PRECONDITION, reason, message, metadata)


def unauthenticated(reason: str, message: str) -> ApiError:
    return ApiError(grpc.StatusCode.UNAUTHENTICATED, reason, message)


def denied(reason: str, message: str, **metadata: str) -> ApiError:
    return ApiError(grpc.StatusCode.PERMISSION_DENIED, reason, message, metadata)


def exhausted(reason: str, message: str, *, limit: int, **metadata: str) -> ApiError:
    """RESOURCE_EXHAUSTED: a limit was reached; metadata ``limit`` says which number, so that
    a client can tell how far it may go without parsing the message."""
    return ApiError(
        grpc.StatusCode.RESOURCE_EXHAUSTED, reason, message, {"limit": str(limit), **metadata}
    )


def shutting_down(**metadata: str) -> ApiError:
    """UNAVAILABLE: the server is stopping (a client retries later)."""
    return ApiError(
        grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN, "the server is shutting down", metadata
    )


def internal(message: str, reason: str = INTERNAL, **metadata: str) -> ApiError:
    """INTERNAL: the server failed, not the request."""
    return ApiError(grpc.StatusCode.INTERNAL, reason, message, metadata)


def server_bug(where: str, error: BaseException) -> ApiError:
    """The INTERNAL answer to an unexpected exception (its type only: the text may hold
    anything); the traceback goes to the log, not to the client."""
    return internal(
        f"internal server error {where} ({type(error).__name__}); the server log has the details"
    )


def make_status(
    code: grpc.StatusCode, reason: str, message: str, metadata: Mapping[str, str] | None = None
) -> status_pb2.Status:
    """A ``google.rpc.Status`` with one ErrorInfo in the capicua domain."""
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=dict(metadata or {}))
    detail = any_pb2.Any()
    detail.Pack(info)
    number: int = code.value[0]
    return status_pb2.Status(code=number, message=message, details=[detail])


async def abort(context: Any, error: ApiError) -> NoReturn:
    """End a unary (or server-streaming) RPC with ``error``'s rich status."""
    await context.abort_with_status(rpc_status.to_status(error.status()))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


F = TypeVar("F", bound=Callable[..., Any])


def rpc(method: F) -> F:
    """Decorate a servicer method (``async def``, unary or an async generator) so that what
    it raises becomes the call's status: an :class:`ApiError` its rich status, any other
    exception INTERNAL, logged with its traceback. grpc's own exceptions (an abort already
    sent, a call the client ended) pass through to grpc, which handles them. The servicer
    has a ``faults`` attribute (:class:`~capicua.server.faults.Faults`, None but in tests)."""
    name = method.__name__
    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def streaming(self: Any, request: Any, context: Any) -> Any:
            try:
                _inject(self.faults, name)
                # aclosing: a stream the client ends runs the handler's cleanup at once
                async with contextlib.aclosing(method(self, request, context)) as messages:
                    async for message in messages:
                        yield message
            except grpc.aio.BaseError:
                raise
            except Exception as e:
                await abort(context, _answer(name, e))

        return cast(F, streaming)

    @functools.wraps(method)
    async def unary(self: Any, request: Any, context: Any) -> Any:
        try:
            _inject(self.faults, name)
            return await method(self, request, context)
        except grpc.aio.BaseError:
            raise
        except Exception as e:
            await abort(context, _answer(name, e))

    return cast(F, unary)


def _inject(faults: Faults | None, name: str) -> None:
    """A test's bug in handler ``name`` (:attr:`Faults.rpc`), raised where the handler's
    own would be."""
    if faults is not None and faults.rpc is not None:
        faults.rpc(name)


def _answer(name: str, error: Exception) -> ApiError:
    """The refusal to send for ``error``; a server fault is logged (a bug with its
    traceback)."""
    if isinstance(error, ApiError):
        if error.code is grpc.StatusCode.INTERNAL:
            log.error("rpc_failed", rpc=name, reason=error.reason, message=error.message)
        return error
    log.error("rpc_failed", rpc=name, exc_info=error)
    return server_bug(f"in {name}", error)
