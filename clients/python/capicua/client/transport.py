"""How a :class:`~capicua.client.session.Session` opens its Play streams.

A session asks its transport for one ``Play`` call per connection and reads it until it
ends. The default, :class:`GrpcTransport`, opens a gRPC channel to the server for each
call and closes it after; any other object with the same ``play`` method may stand in
for it (the SDK's tests give a scripted one, so that the session's own logic is tested
without starting a server).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from capicua.common.channel import ClientTLS, FirstStatus, aio_channel
from capicua.v1 import play_pb2, play_pb2_grpc

__all__ = ["GrpcTransport", "Metadata", "PlayCall", "PlayTransport"]

#: Call metadata: (key, value) pairs, as :func:`capicua.common.channel.bearer` gives them.
Metadata = Sequence[tuple[str, str]]


class PlayCall(Protocol):
    """One open Play stream, as the session uses it (grpc.aio's stream-stream call is one).

    ``read`` returns the server's next ``PlayResponse``, or ``grpc.aio.EOF`` once the
    stream ended with OK; a stream that ended with another status raises
    ``grpc.aio.AioRpcError`` (its ``code()`` and ``details()`` say why)."""

    async def read(self) -> Any: ...

    def cancel(self) -> bool: ...


class PlayTransport(Protocol):
    """Opens Play streams: ``play`` writes ``requests`` (the session's Hello first, then
    its answers) to a new stream sent with ``metadata``, and yields the call; leaving the
    context releases whatever the stream held."""

    def play(
        self, requests: AsyncIterator[play_pb2.PlayRequest], metadata: Metadata
    ) -> AbstractAsyncContextManager[PlayCall]: ...


@dataclass(frozen=True)
class GrpcTransport:
    """Play streams over gRPC to ``address``: a channel of its own for each stream, so
    that a reconnection starts from a fresh connection (``tls``: None for plaintext)."""

    address: str
    tls: ClientTLS | None

    @contextlib.asynccontextmanager
    async def play(
        self, requests: AsyncIterator[play_pb2.PlayRequest], metadata: Metadata
    ) -> AsyncIterator[PlayCall]:
        channel = aio_channel(self.address, self.tls)
        try:
            stub = play_pb2_grpc.PlayServiceStub(channel)
            yield _PeerStatusCall(stub.Play(requests, metadata=tuple(metadata)))
        finally:
            await channel.close(grace=None)


class _PeerStatusCall:
    """A Play call whose end is the server's status, also when an answer written as the
    server ended the stream made grpc.aio report INTERNAL instead (:class:`FirstStatus`):
    a stream replaced by another client's (ABORTED / STREAM_REPLACED) must stop the bot,
    where an INTERNAL would make it reconnect and take the stream back."""

    def __init__(self, call: Any) -> None:
        self._call = call
        self._first = FirstStatus(call)

    async def read(self) -> Any:
        try:
            return await self._call.read()
        except grpc.aio.AioRpcError as e:
            real = self._first.instead_of(e)
            if real is e:
                raise
            if real is None:
                return grpc.aio.EOF
            raise real from None

    def cancel(self) -> bool:
        return bool(self._call.cancel())
