"""A match's seats before and while it runs: who holds each, and how a seat is taken.

The lobby's part of a match: reserving seats for bots and CPUs at creation, a bot or a
one-seat client joining, and filling what is left open with CPUs when the match starts.
Nothing here touches the rules or the streams; :class:`~capicua.server.matches.Match`
asks :class:`Seating` and says when (only while the match waits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from capicua.server import errors
from capicua.server.cpu import EASY
from capicua.v1 import match_pb2
from capicua.wire.codec import CPU_LEVELS

#: The built-in bot each CpuLevel plays: the level of the same name (CPU_LEVEL_HARD: hard),
#: easy when none is given.
LEVEL_NAMES = {match_pb2.CPU_LEVEL_UNSPECIFIED: EASY} | {
    level: name for name, level in CPU_LEVELS.items()
}


class Connections(Protocol):
    """Whether a principal has a Play stream (implemented by the Play service's hub)."""

    def connected(self, principal: str) -> bool: ...


@dataclass
class Seat:
    """One seat of a match. ``principal`` is who plays it over a Play stream (None: a CPU)."""

    index: int
    kind: match_pb2.SeatKind.ValueType
    bot_id: str = ""
    cpu_level: match_pb2.CpuLevel.ValueType = match_pb2.CPU_LEVEL_UNSPECIFIED
    player: str = ""
    principal: str | None = None
    autoplay: bool = False  # the server plays it until the client answers again
    timeouts: int = 0  # times its turn timer ran out (three illegal answers count as one)
    auto_played: int = 0  # turns the server played for it because it was late

    @property
    def owner(self) -> str | None:
        """Who plays it: the principal, or for a seat reserved for a bot that bot."""
        if self.principal is None and self.kind == match_pb2.SEAT_KIND_BOT:
            return f"bots/{self.bot_id}"
        return self.principal

    @property
    def is_cpu(self) -> bool:
        return self.kind == match_pb2.SEAT_KIND_CPU

    @property
    def is_open(self) -> bool:
        return self.kind == match_pb2.SEAT_KIND_OPEN and self.principal is None

    def status(self, streams: Connections) -> match_pb2.SeatStatus:
        """What GetMatch shows of it."""
        return match_pb2.SeatStatus(
            seat=self.index,
            kind=self.kind,
            player=self.player,
            bot_id=self.bot_id,
            cpu_level=self.cpu_level,
            occupied=self.is_cpu or self.owner is not None,
            connected=self.is_cpu or (self.owner is not None and streams.connected(self.owner)),
            timeouts=self.timeouts,
            auto_played=self.auto_played,
        )


class Seating:
    """The seats of match ``name``, in seat order."""

    def __init__(self, name: str, seats: list[Seat]) -> None:
        self.name = name
        self.seats = seats

    @property
    def players(self) -> list[str]:
        return [s.player or f"seat{s.index}" for s in self.seats]

    def of(self, principal: str) -> list[Seat]:
        return [s for s in self.seats if s.principal == principal]

    def take(
        self,
        principal: str | None,
        *,
        bot_id: str,
        player: str,
        seat: int | None,
        open_allowed: bool = True,
    ) -> Seat:
        """Give a seat to bot ``bot_id`` (its principal ``bots/{bot_id}``) or, with
        ``principal`` None, to a one-seat client (``matches/{id}/seats/{n}``): ``seat``, else
        one reserved for the bot, else the first open one. An open seat only if
        ``open_allowed`` (the joiner accepted the seed its creator chose)."""
        chosen = self._chosen(bot_id, seat) if seat is not None else self._first_free(bot_id)
        if chosen.is_open and not open_allowed:
            raise errors.precondition(
                errors.SEED_CHOSEN,
                f"accept_chosen_seed: the creator of {self.name} chose its seed, with which "
                "it can compute every seat's tiles; join with accept_chosen_seed to play it "
                "anyway",
                match=self.name,
            )
        chosen.principal = principal or f"{self.name}/seats/{chosen.index}"
        chosen.player = player or bot_id or f"guest{chosen.index}"
        if bot_id:
            chosen.kind = match_pb2.SEAT_KIND_BOT
            chosen.bot_id = bot_id
        return chosen

    def _chosen(self, bot_id: str, seat: int) -> Seat:
        if not 0 <= seat < len(self.seats):
            raise errors.invalid(
                "seat", f"{self.name} has seats 0..{len(self.seats) - 1}", match=self.name
            )
        chosen = self.seats[seat]
        reserved = chosen.kind == match_pb2.SEAT_KIND_BOT and chosen.bot_id == bot_id
        if not (chosen.is_open or (bot_id and reserved and chosen.principal is None)):
            raise errors.precondition(
                errors.SEAT_TAKEN,
                f"seat: seat {seat} of {self.name} is not open",
                match=self.name,
                seat=str(seat),
            )
        return chosen

    def _first_free(self, bot_id: str) -> Seat:
        candidates = [
            s
            for s in self.seats
            if bot_id and s.kind == match_pb2.SEAT_KIND_BOT and s.bot_id == bot_id
            if s.principal is None
        ] or [s for s in self.seats if s.is_open]
        if not candidates:
            raise errors.precondition(
                errors.NO_OPEN_SEAT, f"name: {self.name} has no open seat", match=self.name
            )
        return candidates[0]

    def fill(self) -> None:
        """At the start: open seats become Easy CPUs (unless a level was set), and seats
        reserved for a bot that never joined are played by that bot's stream."""
        for s in self.seats:
            if s.is_open:
                s.kind = match_pb2.SEAT_KIND_CPU
                s.cpu_level = s.cpu_level or match_pb2.CPU_LEVEL_EASY
            if s.is_cpu:
                s.principal = None
                s.player = s.player or f"cpu:{LEVEL_NAMES.get(s.cpu_level, EASY)}"
            elif s.kind == match_pb2.SEAT_KIND_BOT and s.principal is None:
                s.principal = f"bots/{s.bot_id}"
                s.player = s.player or s.bot_id
