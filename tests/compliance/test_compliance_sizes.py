"""A message's length says nothing private (docs/security.md, "Sizes on the wire").

TLS hides a message's bytes, not its length. A DecisionRequest carries the seat's legal
actions (about 20 bytes each), and in sets past double-nine the texts of its tiles and
draws ("10-12" is longer than "3-6"): without padding, an observer of the encrypted stream
reads off how many legal plays the seat has. The server pads those parts to whole
256-byte buckets, so a message's length is its public parts' plus a number of buckets that
no preset's hand reaches past one.

Each request a real bot received over real gRPC is measured against its public twin: the
same message with every private part set to what an observer knows anyway (no legal
actions, every own tile text three characters long, no padding).
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from google.protobuf.message import Message

from capicua.v1 import play_pb2
from tests.compliance.client import Lobby, oneof_body, prefer
from tests.compliance.test_compliance_matches import play_match

BUCKET = 256
LOW = "0-0"  # an observer knows how many tiles a seat holds and draws, not their texts


def _public_twin(message: play_pb2.PlayResponse) -> play_pb2.PlayResponse:
    """``message`` with only what an on-path observer who follows the match in public can
    compute: every part only the receiving seat may see replaced by a fixed stand-in."""
    twin = play_pb2.PlayResponse()
    twin.CopyFrom(message)
    kind, body = oneof_body(twin)
    body.ClearField("padding")
    if kind == "decision":
        del body.legal_actions[:]
    seat = body.seat
    views = [body.view] if kind in ("decision", "match_started") else []
    event_lists = [v.events for v in views] + ([body.events] if kind != "match_started" else [])
    for view in views:
        view.tiles[:] = [LOW] * len(view.tiles)
    for events in event_lists:
        for event in events:
            if event.HasField("draw") and event.draw.seat == seat and event.draw.tile:
                event.draw.tile = LOW
    return twin


def _extra(message: play_pb2.PlayResponse) -> int:
    """How many bytes longer ``message``'s body (its decision, match_started or events) is
    than its public twin's. (The envelope's length prefix then follows from the body's
    length: one byte more for a body past 127 bytes, which a padded one always is.)"""
    body: Message = oneof_body(message)[1]
    public: Message = oneof_body(_public_twin(message))[1]
    return body.ByteSize() - public.ByteSize()


@pytest.mark.parametrize(
    "preset, overrides",
    [
        ("block", ["target=50"]),
        ("cuban", ["target=60"]),
        ("draw", ["target=50", "max_pip=12"]),  # tile texts of three to five characters
    ],
)
async def test_a_requests_length_does_not_tell_its_legal_actions(
    lobby: Lobby, preset: str, overrides: list[str]
) -> None:
    """Every DecisionRequest is exactly one bucket longer than its public twin, whatever
    the seat's legal actions (1 to a dozen) and tiles: requests alike in public are alike
    in length. Messages that carry no legal actions (MatchStarted, EventBatch) are as long
    as their twins up to double-nine, and whole buckets longer past it."""
    name, bots, _, _ = await play_match(
        lobby, preset, [0, 1, 2, 3], overrides=overrides, seed=11, chooser=prefer()
    )
    legal_by_twin: dict[bytes, set[int]] = defaultdict(set)
    seen = padded = 0
    for bot in bots:
        for message in bot.by_match[name]:
            kind = message.WhichOneof("message")
            if kind not in ("decision", "match_started", "events"):
                continue
            extra = _extra(message)
            if kind == "decision":
                seen += 1
                assert extra == BUCKET, (extra, len(message.decision.legal_actions))
                twin = _public_twin(message)
                twin.decision.ClearField("time_left_ms")  # the clock is not the seat's secret
                twin.decision.ClearField("deadline")
                key = twin.SerializeToString(deterministic=True)
                legal_by_twin[key].add(len(message.decision.legal_actions))
            else:
                assert extra % BUCKET == 0, (kind, extra)
                if "max_pip=12" not in overrides:
                    assert extra == 0, (kind, extra)
                else:
                    padded += extra > 0
    assert seen > 20
    assert padded > 0 or "max_pip=12" not in overrides  # the long texts were padded too
    counts = {n for ns in legal_by_twin.values() for n in ns}
    assert len(counts) >= 3, counts  # the legal actions did vary: the length did not follow
