"""Standing ladders on the server: which ladders it runs, and which bots have joined them
(LadderService, proto/capicua/v1/ladder.proto).

The server keeps the roster only: each ladder's definition (given at start, from
``capicua serve --ladder FILE``) and its entries, one per version of each bot that joined,
stored in the server's store. Pairing the entries, playing their matches and rating them is
the arena's ladder runner (:mod:`capicua.arena.ladder.hosted`), a client of this server like
any other: it reads the roster with GetLadder and reserves the entries' bots seats, so their
matches reach them on their usual Play stream.

A version is an entry (``{bot_id}@{version}``): a bot that joins with a new label retires
its current entry (SUPERSEDED: its results stay, it plays no more) and starts a new one
linked to it; the same label rejoins the same entry. Limits (``--max-ladder-entries``,
``--max-versions-per-day``) keep one client from flooding a ladder's roster.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import structlog
from google.protobuf import timestamp_pb2

from capicua.server import auth, errors
from capicua.server.faults import Faults
from capicua.server.play import Hub
from capicua.server.store import Store
from capicua.v1 import ladder_pb2, ladder_pb2_grpc

log = structlog.get_logger("capicua.server.ladders")

VERSION = re.compile(r"[A-Za-z0-9_.-]{1,32}")
LADDER_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
#: A bot's matches at once on one ladder, at most (JoinLadderRequest.max_concurrent_matches).
MAX_CONCURRENT_MATCHES = 32
DAY_NS = 86_400 * 10**9

ACTIVE = ladder_pb2.ENTRY_STATE_ACTIVE
LEFT = ladder_pb2.ENTRY_STATE_LEFT
SUPERSEDED = ladder_pb2.ENTRY_STATE_SUPERSEDED


@dataclass(frozen=True)
class LadderDef:
    """A ladder the server runs, as its file gives it (the arena parses the file)."""

    ladder_id: str  # [a-z0-9-], the resource's last part: "ladders/{ladder_id}"
    title: str
    preset: str
    overrides: tuple[str, ...]
    turn_timer_ms: int
    built_in: tuple[str, ...] = ()  # the ladder's own entries (built-in bots)

    @property
    def name(self) -> str:
        return f"ladders/{self.ladder_id}"


@dataclass
class Entry:
    """One version of one bot on one ladder."""

    ladder_id: str
    bot_id: str
    version: str
    predecessor: str  # entry id, "" for a first version
    state: int
    max_matches: int
    join_ns: int

    @property
    def entry_id(self) -> str:
        return f"{self.bot_id}@{self.version}"

    def row(self) -> tuple[str, str, str, str, str, int, int, int]:
        return (
            self.ladder_id, self.entry_id, self.bot_id, self.version, self.predecessor,
            self.state, self.max_matches, self.join_ns,
        )  # fmt: skip


@dataclass
class Roster:
    """Every ladder's entries, in the order they joined."""

    entries: dict[str, list[Entry]] = field(default_factory=dict)  # ladder_id -> entries

    def current(self, ladder_id: str, bot_id: str) -> Entry | None:
        """The bot's latest entry on the ladder (active, left or superseded)."""
        mine = [e for e in self.entries.get(ladder_id, []) if e.bot_id == bot_id]
        return mine[-1] if mine else None

    def find(self, ladder_id: str, entry_id: str) -> Entry | None:
        return next((e for e in self.entries.get(ladder_id, []) if e.entry_id == entry_id), None)

    def active(self, ladder_id: str) -> int:
        return sum(e.state == ACTIVE for e in self.entries.get(ladder_id, []))


class LadderService(ladder_pb2_grpc.LadderServiceServicer):
    """ListLadders, GetLadder, JoinLadder and LeaveLadder."""

    def __init__(
        self,
        ladders: Sequence[LadderDef],
        *,
        store: Store,
        hub: Hub,
        max_entries: int = 1000,
        max_versions_per_day: int = 24,
        faults: Faults | None = None,
    ) -> None:
        self.faults = faults  # tests only (errors.rpc reads it)
        self.ladders = {d.ladder_id: d for d in ladders}
        self.store = store
        self.hub = hub
        self.max_entries = max_entries
        self.max_versions_per_day = max_versions_per_day
        self.roster = Roster({d.ladder_id: [] for d in ladders})
        self.paused: set[str] = set()
        for (
            ladder_id,
            bot_id,
            version,
            pred,
            state,
            max_matches,
            join_ns,
        ) in store.load_ladder_entries():
            if ladder_id in self.roster.entries:  # a ladder no longer run keeps its rows
                entry = Entry(ladder_id, bot_id, version, pred, state, max_matches, join_ns)
                self.roster.entries[ladder_id].append(entry)

    def _ladder(self, name: str, field_name: str) -> LadderDef:
        ladder_id = name.removeprefix("ladders/")
        d = self.ladders.get(ladder_id) if name.startswith("ladders/") else None
        if d is None:
            raise errors.not_found(
                errors.LADDER_NOT_FOUND,
                f"{field_name}: this server runs no ladder {name!r} (ListLadders lists them)",
                field=field_name,
            )
        return d

    def describe(self, d: LadderDef) -> ladder_pb2.Ladder:
        return ladder_pb2.Ladder(
            name=d.name,
            title=d.title,
            preset=d.preset,
            overrides=d.overrides,
            turn_timer_ms=d.turn_timer_ms,
            active_entries=self.roster.active(d.ladder_id) + len(d.built_in),
            open=d.ladder_id not in self.paused,
        )

    def entry_message(self, d: LadderDef, e: Entry) -> ladder_pb2.LadderEntry:
        joined = timestamp_pb2.Timestamp()
        joined.FromNanoseconds(e.join_ns)
        return ladder_pb2.LadderEntry(
            name=f"{d.name}/entries/{e.entry_id}",
            bot=f"bots/{e.bot_id}",
            version=e.version,
            predecessor=f"{d.name}/entries/{e.predecessor}" if e.predecessor else "",
            state=e.state,  # type: ignore[arg-type]  # an EntryState value
            max_concurrent_matches=e.max_matches,
            connected=self.hub.connected(f"bots/{e.bot_id}"),
            joined_at=joined,
        )

    @errors.rpc
    async def ListLadders(
        self, request: ladder_pb2.ListLaddersRequest, context: Any
    ) -> ladder_pb2.ListLaddersResponse:
        return ladder_pb2.ListLaddersResponse(
            ladders=[self.describe(d) for d in self.ladders.values()]
        )

    @errors.rpc
    async def GetLadder(
        self, request: ladder_pb2.GetLadderRequest, context: Any
    ) -> ladder_pb2.GetLadderResponse:
        d = self._ladder(request.name, "name")
        built_in = [
            ladder_pb2.LadderEntry(
                name=f"{d.name}/entries/{name}",
                state=ACTIVE,
                max_concurrent_matches=MAX_CONCURRENT_MATCHES,
                built_in=True,
            )
            for name in d.built_in
        ]
        joined = [self.entry_message(d, e) for e in self.roster.entries[d.ladder_id]]
        return ladder_pb2.GetLadderResponse(ladder=self.describe(d), entries=built_in + joined)

    @errors.rpc
    async def JoinLadder(
        self, request: ladder_pb2.JoinLadderRequest, context: Any
    ) -> ladder_pb2.JoinLadderResponse:
        bot_id = auth.required_caller().bot_id
        d = self._ladder(request.ladder, "ladder")
        if not VERSION.fullmatch(request.version):
            raise errors.invalid(
                "version", f"{request.version!r} is not 1-32 characters of [A-Za-z0-9_.-]"
            )
        wanted = request.max_concurrent_matches or 1
        if not 1 <= wanted <= MAX_CONCURRENT_MATCHES:
            raise errors.invalid(
                "max_concurrent_matches",
                f"{request.max_concurrent_matches} is not between 1 and {MAX_CONCURRENT_MATCHES}",
            )
        changed = self._join(d, bot_id, request.version, wanted)
        entry = changed[-1]
        if changed != [self.roster.find(d.ladder_id, entry.entry_id)]:  # else nothing to do
            # stored first: the join holds only once it would survive a restart
            await self.store.save_ladder_entries([e.row() for e in changed])
            self._apply(d, changed)
        log.info("ladder_joined", ladder=d.ladder_id, entry=entry.entry_id, matches=wanted)
        return ladder_pb2.JoinLadderResponse(entry=self.entry_message(d, entry))

    def _apply(self, d: LadderDef, changed: Sequence[Entry]) -> None:
        """Put stored entries in the roster (replacing those of the same id)."""
        entries = self.roster.entries[d.ladder_id]
        for e in changed:
            at = next((i for i, old in enumerate(entries) if old.entry_id == e.entry_id), None)
            if at is None:
                entries.append(e)
            else:
                entries[at] = e

    def _join(self, d: LadderDef, bot_id: str, version: str, wanted: int) -> list[Entry]:
        """The entries the join changes, as they will be (the joined one last); the roster
        is unchanged until they are stored (:meth:`_apply`)."""
        now = time.time_ns()
        entries = self.roster.entries[d.ladder_id]
        same = self.roster.find(d.ladder_id, f"{bot_id}@{version}")
        current = self.roster.current(d.ladder_id, bot_id)
        if same is not None and same.state != SUPERSEDED:
            if same.state != ACTIVE:
                self._check_room(d)
            return [replace(same, state=ACTIVE, max_matches=wanted)]
        if same is not None:  # an older version again: a new entry would reuse its id
            raise errors.invalid(
                "version",
                f"{version!r} was superseded on {d.name} by a later version; a version "
                "cannot come back: join with a new label",
            )
        self._check_room(d)
        recent = [e for e in entries if e.bot_id == bot_id and now - e.join_ns < DAY_NS]
        if len(recent) >= self.max_versions_per_day:
            raise errors.exhausted(
                errors.TOO_MANY_ENTRIES,
                f"bots/{bot_id} started {len(recent)} versions on {d.name} in the last 24 "
                f"hours, the most this server allows (--max-versions-per-day)",
                limit=self.max_versions_per_day,
                ladder=d.name,
            )
        changed = []
        if current is not None and current.state != SUPERSEDED:
            changed.append(replace(current, state=SUPERSEDED))
        pred = current.entry_id if current is not None else ""
        return [*changed, Entry(d.ladder_id, bot_id, version, pred, ACTIVE, wanted, now)]

    def _check_room(self, d: LadderDef) -> None:
        if self.roster.active(d.ladder_id) >= self.max_entries:
            raise errors.exhausted(
                errors.TOO_MANY_ENTRIES,
                f"{d.name} has {self.max_entries} active entries, the most this server "
                "allows (--max-ladder-entries)",
                limit=self.max_entries,
                ladder=d.name,
            )

    @errors.rpc
    async def LeaveLadder(
        self, request: ladder_pb2.LeaveLadderRequest, context: Any
    ) -> ladder_pb2.LeaveLadderResponse:
        bot_id = auth.required_caller().bot_id
        d = self._ladder(request.ladder, "ladder")
        current = self.roster.current(d.ladder_id, bot_id)
        if current is None or current.state != ACTIVE:
            raise errors.precondition(
                errors.NOT_ON_LADDER,
                f"bots/{bot_id} has no active entry on {d.name}",
                ladder=d.name,
            )
        left = replace(current, state=LEFT)
        await self.store.save_ladder_entries([left.row()])
        self._apply(d, [left])
        log.info("ladder_left", ladder=d.ladder_id, entry=left.entry_id)
        return ladder_pb2.LeaveLadderResponse(entry=self.entry_message(d, left))
