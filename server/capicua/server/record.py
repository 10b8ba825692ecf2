"""What a match leaves behind: its journal, its think times, its replay and its record.

While it runs, the match is journaled as it happens (created, seated, started, each action
applied: :mod:`capicua.server.store` commits them every few milliseconds), so that a server
that crashes can resume it (:meth:`~capicua.server.matches.Registry.restore`).

The runner notes how long each client decision took (:meth:`Record.think`); when the match
ends, :meth:`Record.close` builds the replay (the engine's, with those think times) and
stores the final Match message with it before anyone is told the match ended. A replay that
cannot be built is logged and remembered by its exception's type (GetReplay then answers
INTERNAL / REPLAY_FAILED); a store that fails is logged and the match still ends.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from capicua.engine.game import MatchState
from capicua.engine.records import ThinkTime, with_think_times
from capicua.server.faults import Faults
from capicua.server.journal import JournalDamage, LiveMatch
from capicua.server.names import BOT_ID, PLAYER_CHARS, UINT32_MAX
from capicua.server.seats import Seat
from capicua.server.store import Store
from capicua.v1 import match_pb2
from capicua.wire import codec


def seats_to_json(seats: Sequence[Seat]) -> str:
    return json.dumps([dataclasses.asdict(s) for s in seats], separators=(",", ":"))


def seats_from_json(text: str, count: int) -> list[Seat]:
    """The ``count`` seats journaled as ``text`` (:func:`seats_to_json`), every field
    checked: raises :class:`~capicua.server.journal.JournalDamage` naming what is wrong."""
    try:
        items = json.loads(text)
    except ValueError:
        raise JournalDamage("live_matches.seats_json does not parse") from None
    if not isinstance(items, list) or len(items) != count:
        raise JournalDamage(f"live_matches.seats_json is not a list of {count} seats")
    return [_seat(n, item) for n, item in enumerate(items)]


def _count(value: object) -> bool:
    """A counter the wire can carry (``uint32``): a larger one would fail every answer
    that shows the match (``ListMatches`` for everyone) instead of cancelling it."""
    return type(value) is int and 0 <= value <= UINT32_MAX


_SEAT_KINDS = frozenset(match_pb2.SeatKind.values())
_CPU_LEVELS = frozenset(match_pb2.CpuLevel.values())
# each journaled field of a Seat, and whether a value is one it may hold
_SEAT_FIELDS: dict[str, Callable[[object], bool]] = {
    "index": lambda v: type(v) is int,
    "kind": lambda v: type(v) is int and v in _SEAT_KINDS,
    "bot_id": lambda v: isinstance(v, str) and (v == "" or BOT_ID.fullmatch(v) is not None),
    "cpu_level": lambda v: type(v) is int and v in _CPU_LEVELS,
    "player": lambda v: isinstance(v, str) and len(v) <= PLAYER_CHARS,
    "principal": lambda v: v is None or isinstance(v, str),
    "autoplay": lambda v: type(v) is bool,
    "timeouts": _count,
    "auto_played": _count,
}


def _seat(n: int, item: object) -> Seat:
    where = f"live_matches.seats_json[{n}]"
    if not isinstance(item, dict):
        raise JournalDamage(f"{where} is not an object")
    for key, value in item.items():
        valid = _SEAT_FIELDS.get(key)
        if valid is None or not valid(value):
            raise JournalDamage(f"{where}.{str(key)[:40]} is {str(value)[:40]!r}")
    seat = Seat(**item)
    if seat.index != n:
        raise JournalDamage(f"{where}.index is {seat.index}")
    if seat.kind == match_pb2.SEAT_KIND_BOT and not seat.bot_id:
        raise JournalDamage(f"{where} is a bot's seat without a bot_id")
    return seat


class Record:
    """The record of one match, kept by its runner."""

    def __init__(
        self, store: Store, log: Any, match_id: str, *, faults: Faults | None = None
    ) -> None:
        self.store = store
        self.faults = faults  # a test's bugs (capicua.server.faults); None in use
        self.log = log
        self.match_id = match_id
        self.applied_count = 0  # actions journaled
        # hand -> the think times of its client decisions, for the replay
        self.think_times: dict[int, list[ThinkTime]] = {}
        self.replay: bytes | None = None  # the replay, as protobuf bytes
        self.replay_error: str | None = None  # why the replay could not be built
        self.final: match_pb2.Match | None = None  # the record, once stored
        self.stored = False  # ... and whether the store took it

    # -- the journal --------------------------------------------------------------------

    def created(self, live: LiveMatch, host_digest: str) -> None:
        self.store.journal_created(live, host_digest)

    def token(self, digest: str, seat: int) -> None:
        """A seat token was issued for ``seat``."""
        self.store.journal_token(self.match_id, digest, seat)

    def seated(self, seats: Sequence[Seat], auto_forced: Sequence[bool] | None = None) -> None:
        """The seats changed (a join), or the match started (``auto_forced`` given)."""
        auto = None if auto_forced is None else "".join("1" if a else "0" for a in auto_forced)
        self.store.journal_seats(self.match_id, seats_to_json(seats), auto)

    def applied(self, code: int) -> None:
        self.applied_count += 1
        self.store.journal_action(self.match_id, self.applied_count, code)

    # -- the end --------------------------------------------------------------------------

    def think(self, state: MatchState, seat: int, micros: int) -> None:
        """A client decision of ``seat`` took ``micros``; its event is the next one of the
        current hand (the engine appends it first when the answer is applied)."""
        event = ThinkTime(len(state.log.raw_events()), micros, seat)
        self.think_times.setdefault(state.hand, []).append(event)

    def build_replay(
        self, state: MatchState, players: list[str], match_id: str, tags: list[str]
    ) -> None:
        """The replay of the finished ``state``; a failure is logged, never raised."""
        try:
            if self.faults is not None and self.faults.replay is not None:
                self.faults.replay()
            replay = with_think_times(
                state.log.replay(players, match_id=match_id, tags=tags), self.think_times
            )
            self.replay = codec.replay_to_proto(replay).SerializeToString()
        except Exception as e:
            self.replay_error = type(e).__name__  # GetReplay answers with it, not its text
            self.log.exception("replay_failed")

    async def close(self, snapshot: match_pb2.Match, *, create_ns: int, public: bool) -> None:
        """Store the final record (and the replay, if built): the match as it ended."""
        snapshot.state = match_pb2.MATCH_STATE_FINISHED
        for seat in snapshot.seats:
            seat.connected = seat.kind == match_pb2.SEAT_KIND_CPU
        try:
            await self.store.save_match(
                snapshot,
                create_ns=create_ns,
                finish_ns=time.time_ns(),
                public=public,
                replay=self.replay,
                replay_error=self.replay_error,
            )
            self.stored = True
        except Exception:  # a full disk must not take the server down; say so loudly
            self.log.exception("persist_failed")
        self.final = snapshot

    def release(self) -> None:
        """After the end: the think times are in the replay, and a stored replay is read
        from the store (one the store refused stays here, the only copy)."""
        self.think_times = {}
        if self.stored:
            self.replay = None
