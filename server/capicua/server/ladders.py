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
from typing import Any, Protocol

import grpc
import structlog
from google.protobuf import timestamp_pb2

from capicua.common.errors import CapicuaError
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
REMOVED = ladder_pb2.ENTRY_STATE_REMOVED
ENTRY_NAME = re.compile(r"ladders/([a-z0-9][a-z0-9-]{0,62})/entries/([A-Za-z0-9_.@-]{1,100})")


class GauntletRow(Protocol):
    """One opponent of an entry's gauntlets (the ladder runner's numbers)."""

    @property
    def opponent(self) -> str: ...  # entry id
    @property
    def sets(self) -> int: ...
    @property
    def wins(self) -> int: ...
    @property
    def draws(self) -> int: ...
    @property
    def losses(self) -> int: ...
    @property
    def elo(self) -> float | None: ...
    @property
    def lo(self) -> float | None: ...
    @property
    def hi(self) -> float | None: ...


class LadderControl(Protocol):
    """What the ladders' runner does with an owner's or the admin's control call (the
    arena's :class:`~capicua.arena.ladder.hosted.HostedControl`): the server checks who
    may, the runner keeps the ladder's control log. A refusal is a
    :class:`~capicua.common.errors.CapicuaError` whose text is the client's."""

    def paused(self, ladder_id: str) -> bool: ...

    async def block(self, ladder_id: str, entry: str, opponent: str, unblock: bool) -> bool: ...

    async def challenge(self, ladder_id: str, entry: str, opponent: str, sets: int) -> int: ...

    async def gauntlet(
        self, ladder_id: str, entry: str, opponents: Sequence[str], sets: int
    ) -> int: ...

    async def gauntlet_results(self, ladder_id: str, entry: str) -> Sequence[GauntletRow]: ...

    async def pause(self, ladder_id: str, resume: bool) -> None: ...

    async def remove(self, ladder_id: str, entry: str) -> None: ...

    async def start_season(self, ladder_id: str, name: str | None) -> str: ...

    async def end_season(self, ladder_id: str, finals_sets: int | None) -> str: ...


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


#: An entry as stored: ladder, entry, bot, version, predecessor, state, limit, join time.
Row = tuple[str, str, str, str, str, int, int, int]


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

    def row(self) -> Row:
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


_COLUMNS = "ladder_id, bot_id, version, predecessor, state, max_matches, join_ns"
_SELECT = f"SELECT {_COLUMNS} FROM ladder_entries ORDER BY join_ns, rowid"
_SELECT_ONE = f"SELECT {_COLUMNS} FROM ladder_entries WHERE ladder_id = ? ORDER BY join_ns, rowid"
_UPSERT = (
    "INSERT OR REPLACE INTO ladder_entries (ladder_id, entry_id, bot_id, version, "
    "predecessor, state, max_matches, join_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _readable(rows: Sequence[tuple[Any, ...]]) -> list[Entry]:
    """The entries of stored rows, in their order; a row that cannot be read is left out
    and logged (that version joins again as new)."""
    out = []
    for row in rows:
        if all(isinstance(v, str) for v in row[:4]) and all(type(v) is int for v in row[4:]):
            out.append(Entry(*row))
        else:
            log.error("ladder_entry_row_ignored", row=repr(row)[:120])
    return out


async def _save(store: Store, rows: Sequence[Row]) -> None:
    """Insert or replace entries (their :meth:`Entry.row`), in one transaction."""
    await store.shared.execute_many(_UPSERT, rows)


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
        self._started = time.monotonic()
        # (ladder, entry id) -> when its uptime is counted from, and its bot's seconds
        # online then
        self._clocks: dict[tuple[str, str], tuple[float, float]] = {}
        self.ladders = {d.ladder_id: d for d in ladders}
        self.store = store
        self.hub = hub
        self.max_entries = max_entries
        self.max_versions_per_day = max_versions_per_day
        self.roster = Roster({d.ladder_id: [] for d in ladders})
        # the ladders' runner, once it runs (None: control calls are UNAVAILABLE)
        self.control: LadderControl | None = None
        self._read(store.shared.query(_SELECT))

    def _read(self, rows: Sequence[tuple[Any, ...]]) -> None:
        entries: dict[str, list[Entry]] = {i: [] for i in self.ladders}
        for entry in _readable(rows):
            if entry.ladder_id in entries:  # a ladder no longer run keeps its rows
                entries[entry.ladder_id].append(entry)
        self.roster = Roster(entries)

    async def refresh(self) -> None:
        """Read the rosters again: what other server processes on the same database
        (``--db``) changed."""
        self._read(await self.store.shared.query_shared(_SELECT))

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
            open=self.control is None or not self.control.paused(d.ladder_id),
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
            uptime=self._uptime(e),
        )

    def _uptime(self, e: Entry) -> float:
        """Its bot's time online since this version joined (since the server started, for
        one that joined before: nothing is known of the time before) over that time."""
        principal = f"bots/{e.bot_id}"
        key = (e.ladder_id, e.entry_id)
        if key not in self._clocks:  # joined before this server started
            self._clocks[key] = (self._started, 0.0)
        since, online_then = self._clocks[key]
        span = time.monotonic() - since
        online = self.hub.online_seconds(principal) - online_then
        return round(min(1.0, max(0.0, online / span)), 4) if span > 0 else 0.0

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
        entry = self._join(self.roster, d, bot_id, request.version, wanted)[-1]
        changed: list[Entry] = []
        if [entry] != [self.roster.find(d.ladder_id, entry.entry_id)]:  # a flood costs nothing
            changed, entry = await self.store.shared.transact_shared(
                lambda db: self._join_stored(db, d, bot_id, request.version, wanted)
            )
        if changed:
            self._apply(d, changed)  # stored first: the join holds once it survives a restart
            if (d.ladder_id, entry.entry_id) not in self._clocks:
                online = self.hub.online_seconds(f"bots/{bot_id}")
                self._clocks[(d.ladder_id, entry.entry_id)] = (time.monotonic(), online)
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

    def _join_stored(
        self, db: Any, d: LadderDef, bot_id: str, version: str, wanted: int
    ) -> tuple[list[Entry], Entry]:
        """The join, in the store's transaction (on its thread), from the ladder's entries
        as stored now (another server process on the same database may have changed them):
        the entries it changes, written (none when it changes nothing), and the joined one."""
        roster = Roster({d.ladder_id: _readable(db.execute(_SELECT_ONE, (d.ladder_id,)))})
        changed = self._join(roster, d, bot_id, version, wanted)
        entry = changed[-1]
        if changed == [roster.find(d.ladder_id, entry.entry_id)]:
            return [], entry
        db.executemany(_UPSERT, [e.row() for e in changed])
        return changed, entry

    def _join(
        self, roster: Roster, d: LadderDef, bot_id: str, version: str, wanted: int
    ) -> list[Entry]:
        """The entries the join changes, as they will be (the joined one last); ``roster``
        is unchanged."""
        now = time.time_ns()
        entries = roster.entries[d.ladder_id]
        same = roster.find(d.ladder_id, f"{bot_id}@{version}")
        current = roster.current(d.ladder_id, bot_id)
        if same is not None and same.state == REMOVED:
            raise errors.invalid(
                "version",
                f"{version!r} was removed from {d.name} by its admin: join with a new label",
            )
        if same is not None and same.state != SUPERSEDED:
            if same.state != ACTIVE:
                self._check_room(roster, d)
            return [replace(same, state=ACTIVE, max_matches=wanted)]
        if same is not None:  # an older version again: a new entry would reuse its id
            raise errors.invalid(
                "version",
                f"{version!r} was superseded on {d.name} by a later version; a version "
                "cannot come back: join with a new label",
            )
        self._check_room(roster, d)
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
        if current is not None and current.state not in (SUPERSEDED, REMOVED):
            changed.append(replace(current, state=SUPERSEDED))
        pred = current.entry_id if current is not None else ""
        return [*changed, Entry(d.ladder_id, bot_id, version, pred, ACTIVE, wanted, now)]

    def _check_room(self, roster: Roster, d: LadderDef) -> None:
        if roster.active(d.ladder_id) >= self.max_entries:
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
        d = self._ladder(request.ladder, "ladder")
        left = replace(self._owner(d), state=LEFT)
        await _save(self.store, [left.row()])
        self._apply(d, [left])
        log.info("ladder_left", ladder=d.ladder_id, entry=left.entry_id)
        return ladder_pb2.LeaveLadderResponse(entry=self.entry_message(d, left))

    # -- control ------------------------------------------------------------------------

    def _control(self, d: LadderDef) -> LadderControl:
        if self.control is None:
            raise errors.ApiError(
                grpc.StatusCode.UNAVAILABLE,
                errors.LADDER_REFUSED,
                f"{d.name}: its runner is not running yet; try again",
                {"ladder": d.name},
            )
        return self.control

    def _entry_of(self, name: str, field_name: str) -> tuple[LadderDef, str]:
        """A ladder entry's resource name: its ladder and its entry id."""
        found = ENTRY_NAME.fullmatch(name)
        if found is None:
            raise errors.invalid(field_name, f"{name!r} is not ladders/LADDER_ID/entries/ENTRY_ID")
        return self._ladder(f"ladders/{found[1]}", field_name), found[2]

    def _owner(self, d: LadderDef) -> Entry:
        """The calling bot's active entry on ``d``."""
        bot_id = auth.required_caller().bot_id
        current = self.roster.current(d.ladder_id, bot_id)
        if current is None or current.state != ACTIVE:
            raise errors.precondition(
                errors.NOT_ON_LADDER,
                f"bots/{bot_id} has no active entry on {d.name}",
                ladder=d.name,
            )
        return current

    async def _act(self, d: LadderDef, action: Any) -> Any:
        """Run a control action; its refusal is FAILED_PRECONDITION / LADDER_REFUSED."""
        try:
            return await action
        except CapicuaError as e:
            raise errors.precondition(errors.LADDER_REFUSED, str(e), ladder=d.name) from None

    @errors.rpc
    async def BlockEntry(
        self, request: ladder_pb2.BlockEntryRequest, context: Any
    ) -> ladder_pb2.BlockEntryResponse:
        d, opponent = self._entry_of(request.opponent, "opponent")
        mine = self._owner(d)
        control = self._control(d)
        changed = await self._act(
            d, control.block(d.ladder_id, mine.entry_id, opponent, request.unblock)
        )
        return ladder_pb2.BlockEntryResponse(changed=changed)

    @errors.rpc
    async def ChallengeEntry(
        self, request: ladder_pb2.ChallengeEntryRequest, context: Any
    ) -> ladder_pb2.ChallengeEntryResponse:
        d, opponent = self._entry_of(request.opponent, "opponent")
        mine = self._owner(d)
        control = self._control(d)
        sets = request.sets or 1
        number = await self._act(d, control.challenge(d.ladder_id, mine.entry_id, opponent, sets))
        return ladder_pb2.ChallengeEntryResponse(request=number)

    @errors.rpc
    async def StartGauntlet(
        self, request: ladder_pb2.StartGauntletRequest, context: Any
    ) -> ladder_pb2.StartGauntletResponse:
        d = self._ladder(request.ladder, "ladder")
        opponents = []
        for i, name in enumerate(request.opponents):
            other, opponent = self._entry_of(name, f"opponents[{i}]")
            if other is not d:
                raise errors.invalid(f"opponents[{i}]", f"{name} is not an entry of {d.name}")
            opponents.append(opponent)
        mine = self._owner(d)
        control = self._control(d)
        sets = request.sets or 1
        number = await self._act(d, control.gauntlet(d.ladder_id, mine.entry_id, opponents, sets))
        return ladder_pb2.StartGauntletResponse(request=number)

    @errors.rpc
    async def GetGauntlet(
        self, request: ladder_pb2.GetGauntletRequest, context: Any
    ) -> ladder_pb2.GetGauntletResponse:
        d = self._ladder(request.ladder, "ladder")
        mine = self._owner(d)
        rows = await self._act(d, self._control(d).gauntlet_results(d.ladder_id, mine.entry_id))
        return ladder_pb2.GetGauntletResponse(
            results=[
                ladder_pb2.GauntletResult(
                    opponent=f"{d.name}/entries/{r.opponent}",
                    sets=r.sets,
                    wins=r.wins,
                    draws=r.draws,
                    losses=r.losses,
                    elo=r.elo,
                    elo_low=r.lo,
                    elo_high=r.hi,
                )  # fmt: skip
                for r in rows
            ]
        )

    @errors.rpc
    async def PauseLadder(
        self, request: ladder_pb2.PauseLadderRequest, context: Any
    ) -> ladder_pb2.PauseLadderResponse:
        d = self._ladder(request.ladder, "ladder")
        await self._act(d, self._control(d).pause(d.ladder_id, request.resume))
        log.info("ladder_paused" if not request.resume else "ladder_resumed", ladder=d.ladder_id)
        return ladder_pb2.PauseLadderResponse(ladder=self.describe(d))

    @errors.rpc
    async def RemoveEntry(
        self, request: ladder_pb2.RemoveEntryRequest, context: Any
    ) -> ladder_pb2.RemoveEntryResponse:
        d, entry_id = self._entry_of(request.entry, "entry")
        await self._act(d, self._control(d).remove(d.ladder_id, entry_id))
        joined = self.roster.find(d.ladder_id, entry_id)
        if joined is not None:
            removed = replace(joined, state=REMOVED)
            await _save(self.store, [removed.row()])
            self._apply(d, [removed])
        log.info("ladder_entry_removed", ladder=d.ladder_id, entry=entry_id)
        return ladder_pb2.RemoveEntryResponse()

    @errors.rpc
    async def StartSeason(
        self, request: ladder_pb2.StartSeasonRequest, context: Any
    ) -> ladder_pb2.StartSeasonResponse:
        d = self._ladder(request.ladder, "ladder")
        control = self._control(d)
        name = await self._act(d, control.start_season(d.ladder_id, request.season or None))
        return ladder_pb2.StartSeasonResponse(season=name)

    @errors.rpc
    async def EndSeason(
        self, request: ladder_pb2.EndSeasonRequest, context: Any
    ) -> ladder_pb2.EndSeasonResponse:
        d = self._ladder(request.ladder, "ladder")
        control = self._control(d)
        name = await self._act(d, control.end_season(d.ladder_id, request.finals_sets or None))
        return ladder_pb2.EndSeasonResponse(season=name)
