"""A bot on raw grpc, without the SDK, for tests/test_bot_check.py: it plays a random legal
action and follows the lifecycle table (docs/protocol.md), unless told to break one rule:

    python tests/bots/rawbot.py                     # a correct bot
    python tests/bots/rawbot.py --answer-withdrawn  # answers every withdrawn turn anyway
    python tests/bots/rawbot.py --reconnect-always  # reconnects even after STREAM_REPLACED
    python tests/bots/rawbot.py --crash-on-error    # exits 3 on any error in the stream
    python tests/bots/rawbot.py --no-backoff        # reconnects every 50 ms, without backoff

It reads CAPICUA_SERVER and CAPICUA_TOKEN, as every client does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
from collections.abc import AsyncIterator

import grpc

from capicua.v1 import play_pb2, play_pb2_grpc

#: Endings after which a correct bot stops (the lifecycle table); anything else: reconnect.
STOP = {
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
}


def reply(match: str, turn_id: int, action_id: int) -> play_pb2.PlayRequest:
    return play_pb2.PlayRequest(
        action=play_pb2.ActionReply(match=match, turn_id=turn_id, action_id=action_id)
    )


async def session(address: str, token: str, flags: argparse.Namespace) -> tuple[bool, bool]:
    """One Play stream until it ends: (stop now, the server welcomed us)."""
    outbox: asyncio.Queue[play_pb2.PlayRequest] = asyncio.Queue()
    welcomed = False

    async def requests() -> AsyncIterator[play_pb2.PlayRequest]:
        yield play_pb2.PlayRequest(hello=play_pb2.Hello(client="rawbot"))
        while True:
            yield await outbox.get()

    async with grpc.aio.insecure_channel(address) as channel:
        call = play_pb2_grpc.PlayServiceStub(channel).Play(
            requests(), metadata=(("authorization", f"Bearer {token}"),)
        )
        try:
            async for message in call:
                kind = message.WhichOneof("message")
                welcomed = welcomed or kind == "welcome"
                if kind == "decision":
                    d = message.decision
                    choice = random.randrange(len(d.legal_actions))
                    outbox.put_nowait(reply(d.match, d.turn_id, choice))
                elif kind == "decision_withdrawn" and flags.answer_withdrawn:
                    w = message.decision_withdrawn
                    outbox.put_nowait(reply(w.match, w.turn_id, 0))
                elif kind == "error" and flags.crash_on_error:
                    print(f"rawbot: error in the stream: {message.error.message}", file=sys.stderr)
                    sys.exit(3)
        except grpc.aio.AioRpcError as e:
            print(f"rawbot: the stream ended {e.code().name}: {e.details()}", file=sys.stderr)
            return e.code() in STOP and not flags.reconnect_always, welcomed
    return not flags.reconnect_always, welcomed  # OK: a seat token's match ended


async def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--answer-withdrawn", "--reconnect-always", "--crash-on-error", "--no-backoff"):
        parser.add_argument(flag, action="store_true")
    flags = parser.parse_args()
    address = os.environ.get("CAPICUA_SERVER", "127.0.0.1:50051")
    token = os.environ["CAPICUA_TOKEN"]
    delay = 0.1
    while True:
        stop, welcomed = await session(address, token, flags)
        if stop:
            return
        delay = 0.1 if welcomed else min(10.0, delay * 2)
        await asyncio.sleep(0.05 if flags.no_backoff else delay * random.uniform(0.8, 1.2))


if __name__ == "__main__":
    asyncio.run(main())
