"""PlayService: bot registration and the Play stream.

One Play stream per principal (a bot, or one seat of a one-seat client). A newer stream for
the same principal replaces the older one (whose call ends ABORTED / STREAM_REPLACED): that is
how a bot reconnects. A new stream gets a
Welcome, then for every running match with one of its seats a MatchStarted (with the view
now) and the pending DecisionRequest again, so a client needs no memory.

Messages to a stream go through its outbox (:mod:`capicua.server.outbox`); a match never
waits for a client to read. A client that leaves more than ``--max-unread-bytes`` unread,
beyond what its stream was sent on opening, is disconnected (RESOURCE_EXHAUSTED /
SLOW_CONSUMER; it may reconnect).

Every ending the server chooses is the call's final status, never an in-stream error followed
by OK, so that a client decides from the status alone whether to stop or reconnect (the table
in docs/protocol.md): OK only when the client half-closed or a seat token's match ended.

What a client sends is read by a task of its own (:meth:`PlayService._read`). A client that
goes away, or sends bytes that are no PlayRequest, only ends its stream (logged at info); a
server bug while handling a message is logged with its traceback and ends the stream with
INTERNAL (the client may reconnect and is sent its pending requests again).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

import grpc
import structlog
from google.protobuf.message import DecodeError

from capicua.common.sqldb import is_integrity_error
from capicua.common.tokens import Kind
from capicua.server import auth, errors
from capicua.server.addresses import ADDRESS, AddressGroups, client_address, shown
from capicua.server.auth import Principal, Tokens, digest
from capicua.server.faults import Faults
from capicua.server.matches import Registry
from capicua.server.names import BOT_ID, MATCH_NAME
from capicua.server.outbox import MAX_UNREAD_BYTES, Outbox
from capicua.server.store import Store, StoredBot
from capicua.v1 import play_pb2, play_pb2_grpc

if TYPE_CHECKING:
    from capicua.server.relay import Relays

log = structlog.get_logger("capicua.server.play")

#: What reading a stream raises when the client is at fault or gone, not the server: grpc's
#: errors for a call that ended (cancelled, the server stopping) and a message that does not
#: parse as a PlayRequest.
CLIENT_ENDED: tuple[type[Exception], ...] = (grpc.aio.BaseError, DecodeError)


def match_id_of(field: str, name: str) -> str:
    """The id of a ``matches/{match_id}`` name; INVALID_ARGUMENT naming ``field`` otherwise."""
    found = MATCH_NAME.fullmatch(name)
    if found is None:
        raise errors.invalid(field, f"expected 'matches/{{match_id}}', got {name[:80]!r}")
    return found.group(1)


class Stream:
    """One Play stream's outgoing messages (its :class:`Outbox`) and preferences."""

    def __init__(self, principal: Principal, max_unread_bytes: int = MAX_UNREAD_BYTES) -> None:
        self.principal = principal
        self.outbox = Outbox(max_unread_bytes)
        self.ask_forced = False
        # CAPABILITY_INCREMENTAL_DECISIONS: one message per decision (fanout, matches)
        self.incremental = False
        self.client = ""
        self.failure: errors.ApiError | None = None  # the call's status, when the server failed
        self.opened = time.monotonic()

    @property
    def closed(self) -> bool:
        return self.outbox.closed

    def put(self, message: play_pb2.PlayResponse) -> None:
        self.put_serialized(message.SerializeToString())

    def put_serialized(self, data: bytes) -> None:
        """Queue a serialized PlayResponse (one relayed from another server, as it came)."""
        if self.outbox.closed:
            return
        if not self.outbox.put(data):
            self._too_slow()

    def put_opening(self, message: play_pb2.PlayResponse) -> None:
        """Queue part of the stream's opening (its Welcome, and a view and the pending
        request per seat), which the bound does not count (:meth:`Outbox.put_over`)."""
        self.outbox.put_over(message.SerializeToString())

    def _too_slow(self) -> None:
        bound = self.outbox.bound
        log.warning("stream_too_slow", principal=self.principal.name, unread=self.outbox.unread)
        error = errors.exhausted(
            errors.SLOW_CONSUMER,
            f"the client left more than {bound} bytes unread; reconnect",
            limit=bound,
        )
        self.fail(error)

    def close(self) -> None:
        """End the stream after what is queued."""
        self.outbox.close()

    def fail(self, error: errors.ApiError) -> None:
        """End the stream after what is queued, with ``error`` as the call's status."""
        if not self.outbox.closed:
            self.failure = error
        self.outbox.close()


class Hub:
    """The current stream of each principal (implements :class:`matches.Streams`)."""

    def __init__(self, max_unread_bytes: int = MAX_UNREAD_BYTES) -> None:
        self.streams: dict[str, Stream] = {}
        self.max_unread_bytes = max_unread_bytes  # each new stream's bound
        # principal -> (seconds connected before its current stream, when that one opened
        # or None): its uptime since the server started (a ladder entry's)
        self._online: dict[str, tuple[float, float | None]] = {}

    def attach(self, stream: Stream) -> Stream | None:
        name = stream.principal.name
        old = self.streams.get(name)
        self.streams[name] = stream
        before, since = self._online.get(name, (0.0, None))
        if since is None:
            self._online[name] = (before, time.monotonic())
        return old

    def detach(self, stream: Stream) -> None:
        name = stream.principal.name
        if self.streams.get(name) is stream:
            del self.streams[name]
            before, since = self._online.get(name, (0.0, None))
            if since is not None:
                self._online[name] = (before + time.monotonic() - since, None)

    def online_seconds(self, principal: str) -> float:
        """Seconds ``principal`` had a stream open since the server started."""
        before, since = self._online.get(principal, (0.0, None))
        return before + (time.monotonic() - since if since is not None else 0.0)

    def send(self, principal: str, message: play_pb2.PlayResponse) -> None:
        stream = self.streams.get(principal)
        if stream is not None:
            stream.put(message)

    def send_data(self, principal: str, data: bytes) -> None:
        """:meth:`send` of a PlayResponse already serialised."""
        stream = self.streams.get(principal)
        if stream is not None:
            stream.put_serialized(data)

    def connected(self, principal: str) -> bool:
        stream = self.streams.get(principal)
        return stream is not None and not stream.closed

    def ask_forced(self, principal: str) -> bool:
        stream = self.streams.get(principal)
        return stream is not None and stream.ask_forced

    def incremental(self, principal: str) -> bool:
        stream = self.streams.get(principal)
        return stream is not None and stream.incremental

    def broadcast(self, message: play_pb2.PlayResponse) -> None:
        for stream in list(self.streams.values()):
            stream.put(message)

    def finished(self, principal: str) -> None:
        # A seat token holds one seat of one match: once its MatchEnded is queued the stream
        # has nothing more to carry, so it ends OK and the client stops (reconnecting would
        # only be told MATCH_FINISHED). A bot's stream stays open for its next matches.
        stream = self.streams.get(principal)
        if stream is not None and stream.principal.kind is Kind.SEAT:
            stream.close()

    def close_all(self, error: errors.ApiError) -> None:
        for stream in list(self.streams.values()):
            stream.fail(error)


ANYONE = "*"
MAX_RESERVERS = 100
HOUR_S = 3600.0
MAX_ADDRESSES_KEPT = 100_000  # address groups whose registrations are counted (oldest dropped)


class Registrations:
    """Bots registered without a token in the last hour, per client address group
    (:class:`~capicua.server.addresses.AddressGroups`): an open server keeps every bot for
    good, so one group may add only so many an hour. The store keeps when and from which
    address each bot was registered, so a restart forgets nothing (:meth:`add` with the
    stored times), whatever the groups were then."""

    def __init__(
        self,
        per_hour: int,
        clock: Callable[[], float] = time.monotonic,
        groups: AddressGroups | None = None,
    ) -> None:
        self.per_hour = per_hour
        self.clock = clock
        self.groups = groups or AddressGroups()
        self._times: OrderedDict[str, deque[float]] = OrderedDict()  # group -> times

    def take(self, address: str) -> float:
        """Count one registration from ``address`` now, or refuse it if the address's
        group registered ``per_hour`` bots in the last hour. The check and the count are
        one step (no await between), so that concurrent calls cannot all pass the check; a
        registration that then fails is handed back (:meth:`give_back`). Returns the
        registration's time."""
        group = self.groups.of(address)
        times = self._recent(group)
        if times is not None and len(times) >= self.per_hour:
            wait = int(times[0] + HOUR_S - self.clock()) + 1
            raise errors.exhausted(
                errors.TOO_MANY_REGISTRATIONS,
                f"{shown(group)} registered {len(times)} bots in the last "
                f"hour (limit {self.per_hour}, --max-registrations-per-hour); try again in "
                f"{wait} s, or ask the operator",
                limit=self.per_hour,
            )
        now = self.clock()
        self.add(address, now)
        return now

    def give_back(self, address: str, when: float) -> None:
        """A registration counted by :meth:`take` did not happen after all."""
        times = self._times.get(self.groups.of(address))
        if times is not None and when in times:
            times.remove(when)

    def add(self, address: str, when: float) -> None:
        """Count a registration from ``address`` at ``when`` (on the clock)."""
        if when <= self.clock() - HOUR_S:
            return
        group = self.groups.of(address)
        times = self._recent(group)
        if times is None:
            times = self._times[group] = deque()
            while len(self._times) > MAX_ADDRESSES_KEPT:
                self._times.popitem(last=False)
        times.append(when)
        if len(times) > 1 and times[-2] > when:  # stored ones come in any order
            times = self._times[group] = deque(sorted(times))
        self._times.move_to_end(group)

    def _recent(self, group: str) -> deque[float] | None:
        times = self._times.get(group)
        if times is None:
            return None
        horizon = self.clock() - HOUR_S
        while times and times[0] <= horizon:
            times.popleft()
        return times


class Bots:
    """Registered bots: bot_id -> description, and who else may reserve its seats (tokens
    live in :class:`Tokens`)."""

    def __init__(self) -> None:
        self.descriptions: dict[str, str] = {}
        self.access: dict[str, frozenset[str]] = {}  # bot_id -> reservable_by
        self.seed_consent: set[str] = set()  # bots whose reservers may also choose the seed
        # bot_id -> the address ("address:ip") it was registered from without a token: the
        # caller's own, not its group, so that other --ipv4/6-group-prefix still apply
        self.origins: dict[str, str] = {}
        # held while their registration is being written: taken, but not yet grantable
        # (a write that fails frees the name, and an access entry would outlive it)
        self.registering: set[str] = set()

    def __contains__(self, bot_id: object) -> bool:
        return bot_id in self.descriptions

    def origin_of(self, creator: str) -> str:
        """The client address whose group's limit a match created by ``creator`` counts
        against (:attr:`~capicua.server.matches.Match.creator`): the caller's own address
        without a token, the address a bot was registered from for a bot; "" for the admin
        and the bots it registered."""
        if creator.startswith(ADDRESS):
            return creator
        if creator.startswith("bots/"):
            return self.origins.get(creator.removeprefix("bots/"), "")
        return ""

    def may_reserve(self, bot_id: str, caller: Principal | None) -> bool:
        """Whether ``caller`` (None: no token) may create a match with a seat reserved for
        ``bot_id``: the bot itself, the admin, or a caller the bot lets (its
        ``reservable_by``: ``bots/x``, or ``*`` for anyone)."""
        allowed = self.access.get(bot_id, frozenset())
        if ANYONE in allowed:
            return True
        if caller is None:
            return False
        if caller.kind is Kind.ADMIN:
            return True
        return caller.kind is Kind.BOT and (caller.bot_id == bot_id or caller.name in allowed)

    def may_choose_seed(self, bot_id: str, caller: Principal | None) -> bool:
        """Whether ``caller``, who may reserve ``bot_id``'s seats (:meth:`may_reserve`), may
        also choose the match's seed, with which it can compute the bot's tiles: the bot
        itself, the admin, or anyone it lets reserve it if it accepts chosen seeds."""
        if caller is not None and (
            caller.kind is Kind.ADMIN or (caller.kind is Kind.BOT and caller.bot_id == bot_id)
        ):
            return True
        return bot_id in self.seed_consent

    def set_access(self, bot_id: str, reservable_by: Sequence[str], seeds: bool) -> None:
        """Who else may reserve ``bot_id``'s seats, and whether they may choose the seed."""
        self.access[bot_id] = frozenset(reservable_by)
        if seeds:
            self.seed_consent.add(bot_id)
        else:
            self.seed_consent.discard(bot_id)

    def reservers(self, given: Any, field: str) -> tuple[str, ...]:
        """``reservable_by`` as given in a request, checked: each entry ``*`` or
        ``bots/{bot_id}`` of a registered bot (a name nobody holds yet could be registered by
        anyone); sorted, without duplicates."""
        entries = sorted(set(given))
        if len(entries) > MAX_RESERVERS:
            raise errors.invalid(field, f"at most {MAX_RESERVERS} entries")
        for entry in entries:
            if entry == ANYONE:
                continue
            bot_id = entry.removeprefix("bots/")
            if bot_id == entry or not BOT_ID.fullmatch(bot_id):
                raise errors.invalid(field, f"{entry!r} is neither '*' nor 'bots/BOT_ID'")
            if bot_id not in self or bot_id in self.registering:
                raise errors.invalid(field, f"no bot {entry} is registered")
        return tuple(entries)


def _bot_exists(bot_id: str) -> errors.ApiError:
    return errors.ApiError(
        grpc.StatusCode.ALREADY_EXISTS,
        errors.BOT_EXISTS,
        f"bot_id: bots/{bot_id} is already registered",
        {"bot": f"bots/{bot_id}"},
    )


class PlayService(play_pb2_grpc.PlayServiceServicer):
    def __init__(
        self,
        *,
        tokens: Tokens,
        bots: Bots,
        registry: Registry,
        hub: Hub,
        store: Store,
        version: str,
        registrations: Registrations | None = None,
        faults: Faults | None = None,
        relays: Relays | None = None,
    ) -> None:
        self.tokens = tokens
        self.faults = faults  # a test's bugs (capicua.server.faults); None in use
        # the bots' streams to the servers that host their other matches (None: no others)
        self.relays = relays
        self.registrations = registrations or Registrations(60)
        self.bots = bots
        self.registry = registry
        self.hub = hub
        self.store = store
        self.version = version

    @errors.rpc
    async def RegisterBot(
        self, request: play_pb2.RegisterBotRequest, context: Any
    ) -> play_pb2.RegisterBotResponse:
        bot_id = request.bot_id
        if not BOT_ID.fullmatch(bot_id):
            raise errors.invalid("bot_id", "expected 1-64 characters of [A-Za-z0-9_.-]")
        if len(request.description) > 500:
            raise errors.invalid("description", "at most 500 characters")
        if bot_id in self.bots:
            raise _bot_exists(bot_id)
        reservable_by = self.bots.reservers(request.reservable_by, "reservable_by")
        # without a token (an open server): counted per address group; the admin is not
        address = client_address(context.peer() or "") if auth.caller() is None else ""
        # From here to the await, every change is made in one step: a concurrent call sees
        # the name taken and the registration counted (and the failure path undoes both).
        counted = self.registrations.take(address) if address else 0.0
        seeds = request.accept_chosen_seeds
        self.bots.descriptions[bot_id] = request.description
        self.bots.set_access(bot_id, reservable_by, seeds)
        if address:
            self.bots.origins[bot_id] = address
        self.bots.registering.add(bot_id)
        principal = Principal.bot(bot_id)
        token = self.tokens.issue(principal)
        stored = StoredBot(
            bot_id,
            request.description,
            digest(token),
            reservable_by,
            address,
            accepts_chosen_seeds=seeds,
        )
        try:
            await self.store.shared.add_bot(stored, time.time_ns())
        except Exception as e:  # not registered after all; errors.rpc answers INTERNAL
            del self.bots.descriptions[bot_id]
            del self.bots.access[bot_id]
            self.bots.seed_consent.discard(bot_id)
            self.bots.origins.pop(bot_id, None)
            self.tokens.revoke(principal)
            if address:
                self.registrations.give_back(address, counted)
            if is_integrity_error(e):  # another server process on --db registered it first
                raise _bot_exists(bot_id) from None
            raise
        finally:
            self.bots.registering.discard(bot_id)
        log.info("bot_registered", bot=bot_id, reservable_by=reservable_by, seeds=seeds)
        return play_pb2.RegisterBotResponse(
            name=f"bots/{bot_id}",
            token=token,
            reservable_by=reservable_by,
            accept_chosen_seeds=seeds,
        )

    @errors.rpc
    async def SetBotAccess(
        self, request: play_pb2.SetBotAccessRequest, context: Any
    ) -> play_pb2.SetBotAccessResponse:
        bot_id = auth.required_caller().bot_id
        reservable_by = self.bots.reservers(request.reservable_by, "reservable_by")
        seeds = (
            request.accept_chosen_seeds
            if request.HasField("accept_chosen_seeds")
            else bot_id in self.bots.seed_consent
        )
        # stored first: the change holds only once it would survive a restart
        await self.store.shared.set_bot_access(bot_id, reservable_by, seeds)
        self.bots.set_access(bot_id, reservable_by, seeds)
        log.info("bot_access_set", bot=bot_id, reservable_by=reservable_by, seeds=seeds)
        return play_pb2.SetBotAccessResponse(
            name=f"bots/{bot_id}", reservable_by=reservable_by, accept_chosen_seeds=seeds
        )

    @errors.rpc
    async def Play(  # type: ignore[override]  # sends bytes: registered without a serializer
        self, request_iterator: AsyncIterator[play_pb2.PlayRequest], context: Any
    ) -> AsyncIterator[bytes]:
        principal = auth.required_caller()
        stream = Stream(principal, self.hub.max_unread_bytes)
        old = self.hub.attach(stream)
        if old is not None:
            replaced = errors.ApiError(
                grpc.StatusCode.ABORTED,
                errors.STREAM_REPLACED,
                "a newer Play stream of the same principal replaced this one",
            )
            old.fail(replaced)
        stream.put_opening(
            play_pb2.PlayResponse(
                welcome=play_pb2.Welcome(principal=principal.name, server_version=self.version)
            )
        )
        for match in self.registry.of_principal(principal.name):
            for resumed in match.resume(principal.name):
                stream.put_opening(resumed)
            match.seats_changed()
        log.info("stream_opened", principal=principal.name, replaced=old is not None)
        if self.relays is not None:
            self.relays.attach(stream, context)
        reader = asyncio.create_task(self._read(stream, request_iterator))
        try:
            async for data in stream.outbox.drain():
                yield data
        finally:
            reader.cancel()
            if self.relays is not None:
                self.relays.detach(stream)
            self.hub.detach(stream)
            stream.close()
            for match in self.registry.of_principal(principal.name):
                match.seats_changed()
            log.info("stream_closed", principal=principal.name)
        if stream.failure is not None:
            raise stream.failure

    async def _read(
        self, stream: Stream, request_iterator: AsyncIterator[play_pb2.PlayRequest]
    ) -> None:
        try:
            async for request in request_iterator:
                self._on_request(stream, request)
        except CLIENT_ENDED as e:  # the client went away mid-read, or sent garbage
            log.info("stream_read_ended", principal=stream.principal.name, error=type(e).__name__)
        except Exception as e:  # a server bug: say so, and end this stream with INTERNAL
            log.error("stream_read_failed", principal=stream.principal.name, exc_info=e)
            stream.fail(errors.server_bug("while reading this stream", e))
        finally:
            stream.close()

    def _on_request(self, stream: Stream, request: play_pb2.PlayRequest) -> None:
        kind = request.WhichOneof("message")
        if self.faults is not None and self.faults.play_message is not None:
            self.faults.play_message(kind or "")
        if kind == "action":
            self._on_action(stream, request.action)
        elif kind == "hello":
            hello = request.hello
            stream.ask_forced = hello.ask_forced
            stream.incremental = play_pb2.CAPABILITY_INCREMENTAL_DECISIONS in hello.capabilities
            stream.client = hello.client[:100]
            if self.relays is not None:
                self.relays.hello(stream, hello)
            log.info(
                "hello",
                principal=stream.principal.name,
                client=stream.client,
                ask_forced=stream.ask_forced,
                incremental=stream.incremental,
            )
        else:
            error = errors.invalid("message", "empty PlayRequest: set hello or action")
            stream.put(play_pb2.PlayResponse(error=error.status()))

    def _on_action(self, stream: Stream, reply: play_pb2.ActionReply) -> None:
        if self.relays is not None and self.relays.route(stream, reply):
            return  # a match another server hosts: answered there
        principal = stream.principal
        try:
            match_id = match_id_of("match", reply.match)
            # A refusal names the answer it refuses (its match and turn_id, both the
            # client's own): a bot playing several matches on one stream can tell which
            # answer failed. Only once the name is well formed: a malformed one is not
            # echoed (the message shows at most 80 characters of it).
            answer = {"match": reply.match, "turn_id": str(reply.turn_id)}
            if principal.kind is Kind.SEAT and principal.match_id != match_id:
                raise errors.denied(
                    errors.NOT_YOUR_SEAT,
                    f"match: this seat token plays {principal.name}, not {reply.match}",
                    **answer,
                )
            match = self.registry.get(match_id)
            if match is None:
                raise errors.not_found(
                    errors.UNKNOWN_MATCH, f"match: no match {reply.match}", **answer
                )
            for message in match.answer(principal.name, reply):
                stream.put(message)
        except errors.ApiError as e:
            stream.put(play_pb2.PlayResponse(error=e.status()))
