"""What the check's proxy saw of a bot's Play streams, in the order it happened.

Every message the proxy delivers to the bot and every answer the bot sends is kept with the
time it passed the proxy (``time.monotonic``), so that a row can ask afterwards what the bot
did and when: which requests it answered, how late, after which withdrawal or match end, and
how often it opened a stream. Waiting is by event, not by clock: :meth:`Recorder.until`
wakes at every new record (and when the bot's process ends, :meth:`Recorder.changed`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from capicua.client.lobby import error_info
from capicua.v1 import play_pb2

T = TypeVar("T")

#: Messages that tell a bot something went differently than it expected, by name.
_NEWS = {
    "decision_withdrawn": "a DecisionWithdrawn",
    "match_ended": "a MatchEnded",
    "stopping": "ServerStopping",
}

#: A decision of a match as the bot's principal was asked it: (match name, turn_id).
Turn = tuple[str, int]


@dataclass
class Delivered:
    """A message the proxy passed to the bot."""

    at: float
    stream: int  # the index of the stream in Recorder.streams
    message: play_pb2.PlayResponse

    @property
    def turn(self) -> Turn:
        """The (match, turn_id) of a request or a withdrawal."""
        body: Any = getattr(self.message, self.message.WhichOneof("message") or "welcome")
        return body.match, body.turn_id


@dataclass
class Answered:
    """An answer of the bot, with what it had been sent before it."""

    at: float
    stream: int
    reply: play_pb2.ActionReply
    request: Delivered | None  # the latest delivery of the turn it names, if any
    withdrawn: Delivered | None  # the turn's DecisionWithdrawn, when delivered before
    match_ended: Delivered | None  # its match's MatchEnded, when delivered before

    @property
    def turn(self) -> Turn:
        return self.reply.match, self.reply.turn_id

    def where(self) -> str:
        return f"turn {self.reply.turn_id} of {self.reply.match}"


@dataclass
class StreamLog:
    """One Play call of the bot through the proxy."""

    index: int
    opened: float
    refused: bool = False  # the proxy played a server that is down: UNAVAILABLE at once
    principal: str = ""  # from the Welcome
    hellos: list[play_pb2.Hello] = field(default_factory=list)  # as the bot sent them
    closed: float | None = None  # when the server ended it
    told: float | None = None  # when the proxy passed that end on to the bot (held or not)
    status: str = ""  # the final status code's name ("" while open)
    reason: str = ""  # its ErrorInfo reason, if the server gave one
    by_bot: bool = False  # the bot cancelled the call (went away) rather than the server


class Recorder:
    """Everything the proxy passed, both ways, for every stream of one bot process."""

    def __init__(self) -> None:
        self.streams: list[StreamLog] = []
        self.delivered: list[Delivered] = []
        self.answers: list[Answered] = []
        self.requests: dict[Turn, list[Delivered]] = {}
        self.withdrawals: dict[Turn, Delivered] = {}
        self.match_ended: dict[str, Delivered] = {}
        self.errors: list[Delivered] = []
        self._changed = asyncio.Event()

    # -- recording (the proxy) -------------------------------------------------------------

    def open(self, *, refused: bool = False) -> StreamLog:
        log = StreamLog(len(self.streams), time.monotonic(), refused=refused)
        if refused:
            log.closed = log.told = log.opened
            log.status = "UNAVAILABLE"
        self.streams.append(log)
        self.changed()
        return log

    def down(self, log: StreamLog, message: play_pb2.PlayResponse) -> None:
        item = Delivered(time.monotonic(), log.index, message)
        self.delivered.append(item)
        kind = message.WhichOneof("message")
        if kind == "welcome":
            log.principal = message.welcome.principal
        elif kind == "decision":
            self.requests.setdefault(item.turn, []).append(item)
        elif kind == "decision_withdrawn":
            self.withdrawals.setdefault(item.turn, item)
        elif kind == "match_ended":
            self.match_ended.setdefault(message.match_ended.match, item)
        elif kind == "error":
            self.errors.append(item)
        self.changed()

    def up(self, log: StreamLog, reply: play_pb2.ActionReply) -> Answered:
        turn = (reply.match, reply.turn_id)
        asked = self.requests.get(turn)
        answer = Answered(
            time.monotonic(),
            log.index,
            reply,
            asked[-1] if asked else None,
            self.withdrawals.get(turn),
            self.match_ended.get(reply.match),
        )
        self.answers.append(answer)
        self.changed()
        return answer

    def hello(self, log: StreamLog, hello: play_pb2.Hello) -> None:
        log.hellos.append(hello)
        self.changed()

    def close(
        self,
        log: StreamLog,
        status: str,
        reason: str = "",
        *,
        by_bot: bool = False,
        told: bool = True,
    ) -> None:
        """The call ended (``told``: and the bot was told so at once)."""
        if log.closed is None:
            log.closed, log.status, log.reason, log.by_bot = (
                time.monotonic(),
                status,
                reason,
                by_bot,
            )
            if told:
                log.told = log.closed
        self.changed()

    def told(self, log: StreamLog) -> None:
        """The proxy passed the call's end on to the bot (after holding it)."""
        if log.told is None:
            log.told = time.monotonic()
        self.changed()

    # -- waiting (the rows) ----------------------------------------------------------------

    def changed(self) -> None:
        """Wake whatever waits in :meth:`until` (also called when the bot's process ends)."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def until(self, check: Callable[[], T]) -> T:
        """The first truthy value of ``check()``, evaluated now and after every change.
        Unbounded: the row's own timeout bounds it."""
        while True:
            event = self._changed
            value = check()
            if value:
                return value
            await event.wait()

    # -- reading ---------------------------------------------------------------------------

    def of_kind(self, kind: str, match: str | None = None) -> list[Delivered]:
        """The delivered messages of ``kind`` (``decision``, ``match_started``...), of
        ``match`` if given."""
        out = []
        for item in self.delivered:
            if item.message.WhichOneof("message") != kind:
                continue
            if match is None or getattr(item.message, kind).match == match:
                out.append(item)
        return out

    def answers_to(self, turn: Turn, after: float = 0.0) -> list[Answered]:
        return [a for a in self.answers if a.turn == turn and a.at >= after]

    def news_since_last_answer(self) -> str:
        """The first message that can upset a bot delivered after its last answer: an
        in-stream error (its reason), a withdrawal, a MatchEnded, a ServerStopping ("" for
        none)."""
        last = self.answers[-1].at if self.answers else 0.0
        for item in self.delivered:
            if item.at < last:
                continue
            kind = item.message.WhichOneof("message")
            if kind == "error":
                return error_info(item.message.error)[0] or "an error"
            if kind in _NEWS:
                return _NEWS[kind]
        return ""

    def attempts(self, since: float = 0.0) -> list[StreamLog]:
        """The Play calls the bot opened at or after ``since`` (refused ones included)."""
        return [s for s in self.streams if s.opened >= since]

    def welcomed(self) -> list[StreamLog]:
        return [s for s in self.streams if s.principal]
