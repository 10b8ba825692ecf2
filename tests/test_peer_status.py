"""A Play stream the server ends while the client is writing reports the server's status,
not grpc.aio's INTERNAL "Internal error from Core" (grpc/grpc#36066): a bot whose stream
another client replaced (ABORTED / STREAM_REPLACED) must stop, and with INTERNAL the SDK
reconnected instead (`capicua bot check`'s `replaced` row failed now and then)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from capicua.client.transport import GrpcTransport
from capicua.v1 import play_pb2

ATTEMPTS = 40


async def _replacing(requests: AsyncIterator[play_pb2.PlayRequest], context: Any) -> Any:
    """Ends the stream ABORTED after the client's third message, as a server does when a
    newer stream of the same token arrives while the bot is answering."""
    seen = 0
    async for _ in requests:
        seen += 1
        if seen == 3:
            await context.abort(grpc.StatusCode.ABORTED, "a newer Play stream replaced this one")
    yield play_pb2.PlayResponse()


async def _answers() -> AsyncIterator[play_pb2.PlayRequest]:
    for turn in range(200):
        yield play_pb2.PlayRequest(action=play_pb2.ActionReply(match="matches/m", turn_id=turn))


async def test_a_stream_ended_while_writing_ends_with_the_servers_status() -> None:
    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(
        _replacing,
        request_deserializer=play_pb2.PlayRequest.FromString,
        response_serializer=play_pb2.PlayResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("capicua.v1.PlayService", {"Play": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        transport = GrpcTransport(f"127.0.0.1:{port}", None)
        codes = []
        for _ in range(ATTEMPTS):
            async with transport.play(_answers(), ()) as call:
                with pytest.raises(grpc.aio.AioRpcError) as ended:
                    while await call.read() is not grpc.aio.EOF:
                        pass
                codes.append(ended.value.code())
        assert codes == [grpc.StatusCode.ABORTED] * ATTEMPTS
    finally:
        await server.stop(None)
