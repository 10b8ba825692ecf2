"""A bot on raw grpc, without the SDK, for tests/test_bot_check.py: it plays a random legal
action and follows the lifecycle table (docs/protocol.md), unless told to break one rule:

    python tests/bots/rawbot.py                     # a correct bot
    python tests/bots/rawbot.py --answer-withdrawn  # answers every withdrawn turn anyway
    python tests/bots/rawbot.py --replay-turns      # on a new stream, sends its last answers again
    python tests/bots/rawbot.py --ignore-redeal     # never answers a redeal offer
    python tests/bots/rawbot.py --defer             # defers every opening it is offered
    python tests/bots/rawbot.py --think S           # answers each request S seconds after it
    python tests/bots/rawbot.py --two-streams       # two streams on its token at once, for ever
    python tests/bots/rawbot.py --reconnect-always  # reconnects even after STREAM_REPLACED
    python tests/bots/rawbot.py --crash-on-error    # exits 3 on any error in the stream
    python tests/bots/rawbot.py --no-backoff        # reconnects every 50 ms, without backoff
    python tests/bots/rawbot.py --snoop DIR         # first hunts for secrets (snoop.py), then plays

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

from capicua.v1 import play_pb2, play_pb2_grpc, view_pb2

#: Endings after which a correct bot stops (the lifecycle table); anything else: reconnect.
STOP = {
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
}

#: The actions of a redeal offer.
REDEAL_KINDS = {view_pb2.ACTION_KIND_REDEAL, view_pb2.ACTION_KIND_KEEP}


def reply(match: str, turn_id: int, action_id: int) -> play_pb2.PlayRequest:
    return play_pb2.PlayRequest(
        action=play_pb2.ActionReply(match=match, turn_id=turn_id, action_id=action_id)
    )


def answer(d: play_pb2.DecisionRequest, flags: argparse.Namespace) -> play_pb2.PlayRequest | None:
    """A random legal answer to ``d`` (None: left unanswered)."""
    kinds = [a.kind for a in d.legal_actions]
    if flags.ignore_redeal and REDEAL_KINDS & set(kinds):
        return None
    if flags.defer and view_pb2.ACTION_KIND_DEFER in kinds:
        return reply(d.match, d.turn_id, kinds.index(view_pb2.ACTION_KIND_DEFER))
    return reply(d.match, d.turn_id, random.randrange(len(d.legal_actions)))


async def session(
    address: str,
    token: str,
    flags: argparse.Namespace,
    last_answers: dict[str, play_pb2.PlayRequest],
) -> tuple[bool, bool]:
    """One Play stream until it ends: (stop now, the server welcomed us). ``last_answers``:
    the last answer sent in each running match, across streams (for --replay-turns)."""
    outbox: asyncio.Queue[play_pb2.PlayRequest] = asyncio.Queue()
    welcomed = False
    remembered = list(last_answers.values())
    loop = asyncio.get_running_loop()

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
                if kind == "welcome" and flags.replay_turns:
                    for old in remembered:  # what the stream before was last answered
                        outbox.put_nowait(old)
                welcomed = welcomed or kind == "welcome"
                if kind == "decision":
                    sent = answer(message.decision, flags)
                    if sent is not None:
                        last_answers[message.decision.match] = sent
                        loop.call_later(flags.think, outbox.put_nowait, sent)
                elif kind == "match_ended":
                    last_answers.pop(message.match_ended.match, None)
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


async def play(address: str, token: str, flags: argparse.Namespace) -> None:
    """Streams one after the other until one ends with a stop."""
    delay = 0.1
    last_answers: dict[str, play_pb2.PlayRequest] = {}
    while True:
        stop, welcomed = await session(address, token, flags, last_answers)
        if stop:
            return
        delay = 0.1 if welcomed else min(10.0, delay * 2)
        await asyncio.sleep(0.05 if flags.no_backoff else delay * random.uniform(0.8, 1.2))


async def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in (
        "--answer-withdrawn",
        "--replay-turns",
        "--ignore-redeal",
        "--defer",
        "--two-streams",
        "--reconnect-always",
        "--crash-on-error",
        "--no-backoff",
    ):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--think", type=float, default=0.0, metavar="S")
    parser.add_argument("--snoop", metavar="DIR")
    flags = parser.parse_args()
    address = os.environ.get("CAPICUA_SERVER", "127.0.0.1:50051")
    token = os.environ["CAPICUA_TOKEN"]
    if flags.snoop:
        from snoop import snoop  # beside this file

        snoop(address, token, os.path.join(flags.snoop, f"{os.getpid()}.json"))
    if flags.two_streams:  # each replaces the other, and comes back when replaced
        flags.reconnect_always = True
        await asyncio.gather(play(address, token, flags), play(address, token, flags))
    else:
        await play(address, token, flags)


if __name__ == "__main__":
    asyncio.run(main())
