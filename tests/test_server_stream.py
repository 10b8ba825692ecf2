"""White-box: a Play stream's outbox (order, close, back-pressure in bytes)."""

from __future__ import annotations

import asyncio

from google.rpc import error_details_pb2

from capicua.server import errors, play
from capicua.server.auth import Principal
from capicua.server.outbox import MESSAGE_OVERHEAD, Outbox, cost
from capicua.v1 import play_pb2


def message(n: int) -> play_pb2.PlayResponse:
    return play_pb2.PlayResponse(welcome=play_pb2.Welcome(server_version=str(n)))


async def drain(stream: play.Stream) -> list[play_pb2.PlayResponse]:
    """What the Play handler writes: everything queued, in order, until closed."""
    return [play_pb2.PlayResponse.FromString(data) async for data in stream.outbox.drain()]


def versions(got: list[play_pb2.PlayResponse]) -> list[str]:
    return [m.welcome.server_version for m in got]


async def test_stream_order_and_close() -> None:
    stream = play.Stream(Principal.bot("a"))
    reader = asyncio.create_task(drain(stream))
    await asyncio.sleep(0)
    for n in range(5):
        stream.put(message(n))
        if n % 2:
            await asyncio.sleep(0)
    stream.close()
    stream.put(message(100))  # after close: dropped
    got = await asyncio.wait_for(reader, 5)
    assert versions(got) == ["0", "1", "2", "3", "4"]


async def test_stream_back_pressure_counts_bytes() -> None:
    size = cost(message(0).SerializeToString())
    stream = play.Stream(Principal.bot("a"), max_unread_bytes=3 * size)
    for n in range(5):
        stream.put(message(n))
    got = await asyncio.wait_for(drain(stream), 5)
    # what fits goes out, then the call ends with SLOW_CONSUMER as its status
    assert versions(got) == ["0", "1", "2"]
    assert stream.closed and stream.failure is not None
    status = stream.failure.status()
    assert status.code == 8  # RESOURCE_EXHAUSTED
    [detail] = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info) and info.reason == errors.SLOW_CONSUMER
    assert dict(info.metadata) == {"limit": str(3 * size)}  # bytes, as the message says
    assert f"more than {3 * size} bytes unread" in status.message


async def test_the_opening_is_not_counted() -> None:
    """A new stream's opening (its Welcome, a view and the pending request per seat) goes
    out whatever its size: a bot in many matches can always reconnect. The bound counts
    what comes after it."""
    size = cost(message(0).SerializeToString())
    stream = play.Stream(Principal.bot("a"), max_unread_bytes=size)
    for n in range(4):
        stream.put_opening(message(n))
    stream.put(message(4))  # fits: one message beyond the opening
    stream.put(message(5))  # does not
    got = await asyncio.wait_for(drain(stream), 5)
    assert versions(got) == ["0", "1", "2", "3", "4"]
    assert stream.failure is not None and stream.failure.reason == errors.SLOW_CONSUMER


async def test_a_message_counts_until_grpc_takes_the_next() -> None:
    """The one message handed to gRPC still counts: until its send completes (the handler
    asks for the next message) it is in memory all the same."""
    outbox = Outbox(1 << 20)
    data = [b"x" * n for n in (10, 20, 30)]
    for d in data:
        assert outbox.put(d)
    assert outbox.unread == 60 + 3 * MESSAGE_OVERHEAD
    messages = outbox.drain()
    assert await anext(messages) == data[0]
    assert outbox.unread == 60 + 3 * MESSAGE_OVERHEAD  # sent, not yet taken
    assert await anext(messages) == data[1]
    assert outbox.unread == 50 + 2 * MESSAGE_OVERHEAD
    outbox.close()
    assert [d async for d in messages] == [data[2]]
    assert outbox.unread == 0
