"""White-box: a Play stream's outgoing queue (order, close, back-pressure)."""

from __future__ import annotations

import asyncio

import pytest
from google.rpc import error_details_pb2

from capicua.server import errors, play
from capicua.server.auth import Principal
from capicua.v1 import play_pb2


def message(n: int) -> play_pb2.PlayResponse:
    return play_pb2.PlayResponse(welcome=play_pb2.Welcome(server_version=str(n)))


async def drain(stream: play.Stream) -> list[play_pb2.PlayResponse]:
    """What the Play handler writes: everything queued, in order, until closed."""
    out = []
    while True:
        while stream.queue:
            out.append(stream.queue.popleft())
        if stream.closed:
            return out
        await stream.wait()


async def test_stream_order_and_close() -> None:
    stream = play.Stream(Principal.bot("a"))
    reader = asyncio.create_task(drain(stream))
    await asyncio.sleep(0)
    for n in range(5):
        stream.put(message(n))
        if n % 2:
            await asyncio.sleep(0)
    stream.close(message(99))
    stream.put(message(100))  # after close: dropped
    got = await asyncio.wait_for(reader, 5)
    assert [m.welcome.server_version for m in got] == ["0", "1", "2", "3", "4", "99"]


async def test_stream_back_pressure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(play, "STREAM_QUEUE", 3)
    stream = play.Stream(Principal.bot("a"))
    for n in range(5):
        stream.put(message(n))
    got = await asyncio.wait_for(drain(stream), 5)
    # what was queued goes out, then the call ends with SLOW_CONSUMER as its status
    assert [m.WhichOneof("message") for m in got] == ["welcome"] * 3
    assert stream.closed and stream.failure is not None
    status = stream.failure.status()
    assert status.code == 8  # RESOURCE_EXHAUSTED
    [detail] = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info) and info.reason == errors.SLOW_CONSUMER
    assert dict(info.metadata) == {"limit": "3"}  # the queue's limit, as the message says
