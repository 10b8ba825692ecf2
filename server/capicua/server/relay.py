"""Relayed Play streams: a bot connected to this process plays the matches another process
hosts.

Several ``capicua serve`` processes may share one database. Each ladder's matches are
hosted by the process that leads that ladder, and a bot may connect to any of them. For
each bot stream here whose bot has matches hosted elsewhere, :class:`Relays` opens a Play
stream to that process (the *leader*) with the bot's own bearer token, and:

- passes every message the leader sends it on to the bot's stream, byte for byte (the
  matches' messages and the in-stream errors), but the leader's Welcome (the bot was
  welcomed here) and its ServerStopping (the bot's stream here goes on): the bot sees what
  the leader sends that bot, and nothing else;
- remembers which leader each of those matches came from, and sends the bot's answers for
  them there (everything else goes to this process's own matches); the bot's Hello goes to
  each leader too;
- ends when the bot's stream here ends: the leader sees the bot disconnect, and its turn
  timers apply as to any bot;
- opens again with backoff (:class:`~capicua.common.backoff.Backoff`, a bot's) when the
  leader's stream ends any other way (the leader stopping, unreachable), and stops, logged,
  on the statuses on which a bot stops (:data:`STOP_CODES`: the token refused, another
  stream of the bot took over there): retrying cannot fix them.

Which leaders a bot's stream is relayed to is :meth:`Relays.want`'s to say, whenever it
changes. A relayed stream says so in its metadata (:data:`RELAYED`) and is never relayed
again: a leader relaying it back to where it came from would replace the bot's own stream
there.

The leader is reached in plaintext: the processes' own traffic stays on the operators'
private network.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from capicua.common.backoff import Backoff
from capicua.common.channel import FirstStatus, aio_channel, bearer
from capicua.common.tokens import Kind
from capicua.server import auth
from capicua.v1 import play_pb2

if TYPE_CHECKING:
    from capicua.server.play import Stream

log = structlog.get_logger("capicua.server.relay")

PLAY_METHOD = f"/{play_pb2.DESCRIPTOR.services_by_name['PlayService'].full_name}/Play"

#: The metadata key that marks a Play stream opened by a relay.
RELAYED = "capicua-relayed"

#: How a leader's stream ends when retrying cannot help (docs/protocol.md, "How a Play
#: stream ends": the ones on which a bot stops). ABORTED: another stream of the bot took its
#: place there (the bot connected to the leader itself, or to another process that relays
#: it); fighting over the seat would only cut each other's streams.
STOP_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)

#: What a leader sends that is not the bot's to see: the relay's own Welcome, and that the
#: leader stops (the bot's stream here goes on; the relay reconnects).
NOT_RELAYED = frozenset({"welcome", "stopping"})

#: The relayed matches whose leader a bot's stream remembers, the newest (more than a bot
#: may play at once on one server by default, ``--max-matches-per-bot``): a late answer to
#: an ended one still reaches its leader, which says STALE_TURN.
ROUTES_KEPT = 2000


def relayed(context: Any) -> bool:
    """Whether the Play call of ``context`` was opened by a relay (:data:`RELAYED`)."""
    return any(key == RELAYED for key, _ in context.invocation_metadata() or ())


class RelayRefused(Exception):
    """The leader welcomed the relay as someone else than the bot: nothing it sends is the
    bot's."""


class Relays:
    """The relays of the bots connected here (one :class:`BotRelays` per bot stream), to
    the leaders :meth:`want` names."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        self._backoff = backoff or Backoff()
        self._wanted: dict[str, frozenset[str]] = {}  # bot_id -> leaders' addresses
        self._bots: dict[str, BotRelays] = {}  # bot_id -> its current stream's relays
        self._tasks: set[asyncio.Task[None]] = set()  # every relay's, until it ends

    def want(self, wanted: Mapping[str, frozenset[str]]) -> None:
        """For each bot id, the addresses of the other processes whose matches it plays; the
        relays of the bots connected here are opened and closed to match."""
        self._wanted = {bot_id: frozenset(to) for bot_id, to in wanted.items() if to}
        for bot_id, relays in self._bots.items():
            relays.follow(self._wanted.get(bot_id, frozenset()))

    def attach(self, stream: Stream, context: Any) -> None:
        """A Play stream opened here: a bot's own (not a relayed one) gets its relays."""
        principal = stream.principal
        if principal.kind is not Kind.BOT or relayed(context):
            return
        token = auth.bearer_token(context)
        assert token is not None  # the call was authenticated with it
        relays = BotRelays(stream, token, self._backoff, self._tasks)
        old = self._bots.pop(principal.bot_id, None)
        if old is not None:  # the bot reconnected here: its older stream's relays end
            relays.ending = {to: task for to, task in old.close().items() if not task.done()}
        self._bots[principal.bot_id] = relays
        relays.follow(self._wanted.get(principal.bot_id, frozenset()))

    def detach(self, stream: Stream) -> None:
        """A Play stream ended: its relays end (the leaders see the bot disconnect)."""
        relays = self._of(stream)
        if relays is not None:
            del self._bots[stream.principal.bot_id]
            relays.close()

    def hello(self, stream: Stream, hello: play_pb2.Hello) -> None:
        relays = self._of(stream)
        if relays is not None:
            relays.hello(hello)

    def route(self, stream: Stream, reply: play_pb2.ActionReply) -> bool:
        """Send ``reply`` to the leader of its match, if a relay of ``stream`` brought the
        match; False: the match is not relayed (it is this process's to answer)."""
        relays = self._of(stream)
        return relays is not None and relays.route(reply)

    def _of(self, stream: Stream) -> BotRelays | None:
        relays = self._bots.get(stream.principal.bot_id)
        return relays if relays is not None and relays.stream is stream else None

    async def close(self) -> None:
        """End every relay, and wait for them to let go of their streams."""
        for relays in self._bots.values():
            relays.close()
        self._bots.clear()
        if self._tasks:
            await asyncio.wait(set(self._tasks))


class BotRelays:
    """The relays of one bot stream, one per leader, and which leader each relayed match
    came from."""

    def __init__(
        self, stream: Stream, token: str, backoff: Backoff, tasks: set[asyncio.Task[None]]
    ) -> None:
        self.stream = stream
        self.metadata = (*bearer(token), (RELAYED, "1"))
        self.last_hello: play_pb2.Hello | None = None  # the bot's, sent to each new relay
        self._backoff = backoff
        self._tasks = tasks
        self._relays: dict[str, Relay] = {}  # leader's address -> the relay to it
        # leader's address -> the task of a relay there that was closed, which a new relay
        # there waits for: the leader must never see the older stream replace the newer
        self.ending: dict[str, asyncio.Task[None]] = {}
        self._routes: OrderedDict[str, Relay] = OrderedDict()  # match name -> its relay

    @property
    def bot(self) -> str:
        return self.stream.principal.name

    def follow(self, leaders: frozenset[str]) -> None:
        """Relay to ``leaders`` and no others."""
        for address in self._relays.keys() - leaders:
            self._close(address)
        for address in leaders - self._relays.keys():
            after = self.ending.pop(address, None)
            relay = self._relays[address] = Relay(self, address, self._backoff, after)
            self._tasks.add(relay.task)
            relay.task.add_done_callback(self._tasks.discard)

    def close(self) -> dict[str, asyncio.Task[None]]:
        """End every relay; returns their tasks by address (:attr:`ending`)."""
        for address in list(self._relays):
            self._close(address)
        return self.ending

    def _close(self, address: str) -> None:
        relay = self._relays.pop(address)
        relay.task.cancel()
        self.ending[address] = relay.task
        for name in [name for name, via in self._routes.items() if via is relay]:
            del self._routes[name]

    def hello(self, hello: play_pb2.Hello) -> None:
        self.last_hello = hello
        for relay in self._relays.values():
            relay.send(play_pb2.PlayRequest(hello=hello))

    def route(self, reply: play_pb2.ActionReply) -> bool:
        relay = self._routes.get(reply.match)
        if relay is None:
            return False
        relay.send(play_pb2.PlayRequest(action=reply))
        return True

    def deliver(self, relay: Relay, data: bytes) -> None:
        """A message of ``relay``'s leader: passed on to the bot as it came, its match
        remembered as that leader's."""
        message = play_pb2.PlayResponse.FromString(data)
        kind = message.WhichOneof("message")
        if kind in NOT_RELAYED:
            return
        if kind is not None and kind != "error":  # every other message names its match
            self._remember(getattr(message, kind).match, relay)
        self.stream.put_serialized(data)

    def _remember(self, match: str, relay: Relay) -> None:
        routes = self._routes
        if routes.get(match) is not relay:
            routes[match] = relay
        routes.move_to_end(match)
        if len(routes) > ROUTES_KEPT:
            routes.popitem(last=False)


class Relay:
    """One bot's Play stream to one leader, opened again with backoff until it is closed
    (its task cancelled) or the leader refuses it."""

    def __init__(
        self,
        owner: BotRelays,
        address: str,
        backoff: Backoff,
        after: asyncio.Task[None] | None = None,
    ) -> None:
        self.owner = owner
        self.address = address
        self._backoff = backoff
        self._after = after  # an older relay of the bot to that leader, ending
        # what the open stream has yet to send the leader (None: no stream open)
        self._requests: asyncio.Queue[play_pb2.PlayRequest | None] | None = None
        self._welcomed = False
        self.task = asyncio.create_task(self._run(), name=f"relay {owner.bot} to {address}")

    def send(self, request: play_pb2.PlayRequest) -> None:
        """Send ``request`` on the open stream. None open: dropped, as over a cut
        connection (the leader sends a pending request again to the next stream)."""
        if self._requests is not None:
            self._requests.put_nowait(request)

    async def _run(self) -> None:
        where = {"bot": self.owner.bot, "leader": self.address}
        attempt = 0
        try:
            if self._after is not None:
                await asyncio.wait({self._after})
            while True:
                try:
                    await self._connect_once()
                    why = "the leader ended the stream"
                except grpc.aio.AioRpcError as e:
                    if e.code() in STOP_CODES:
                        log.warning(
                            "relay_stopped", **where, code=e.code().name, message=e.details()
                        )
                        return
                    why = f"{e.code().name}: {e.details()}"
                attempt = 0 if self._welcomed else attempt + 1
                delay = self._backoff.delay(attempt)
                log.info("relay_reconnecting", **where, why=why, seconds=round(delay, 3))
                await asyncio.sleep(delay)
        except RelayRefused as e:
            log.warning("relay_stopped", **where, code="", message=str(e))
        except Exception as e:  # a bug here must not pass unseen; the bot's stream goes on
            log.error("relay_failed", **where, exc_info=e)

    async def _connect_once(self) -> None:
        """One stream to the leader, until it ends (raises AioRpcError unless OK)."""
        self._welcomed = False
        welcomed = asyncio.Event()
        requests = self._requests = asyncio.Queue()
        if self.owner.last_hello is not None:
            requests.put_nowait(play_pb2.PlayRequest(hello=self.owner.last_hello))
        try:
            async with aio_channel(self.address) as channel:
                play = channel.stream_stream(
                    PLAY_METHOD,
                    request_serializer=play_pb2.PlayRequest.SerializeToString,
                    response_deserializer=None,  # bytes: passed on as they came
                )
                call = play(_once_welcomed(welcomed, requests), metadata=self.owner.metadata)
                first = FirstStatus(call)  # the leader's status, not a lost write's INTERNAL
                try:
                    async for data in call:
                        if self._welcomed:
                            self.owner.deliver(self, data)
                        else:
                            self._welcome(data)
                            welcomed.set()
                except grpc.aio.AioRpcError as e:
                    real = first.instead_of(e)
                    if real is not None:
                        raise real from None
                finally:
                    call.cancel()
        finally:
            self._requests = None
            # End the requests' iterator. A call that failed on its own (the leader gone)
            # is not cancelled by call.cancel() (already done), and grpc then leaves the
            # task that feeds it the iterator waiting on it for good.
            requests.put_nowait(None)
            welcomed.set()

    def _welcome(self, data: bytes) -> None:
        principal = play_pb2.PlayResponse.FromString(data).welcome.principal
        if principal != self.owner.bot:
            raise RelayRefused(f"the leader welcomed {principal or 'nobody'!r}, not the bot")
        self._welcomed = True
        log.info("relay_connected", bot=self.owner.bot, leader=self.address)


async def _once_welcomed(
    welcomed: asyncio.Event, requests: asyncio.Queue[play_pb2.PlayRequest | None]
) -> AsyncIterator[play_pb2.PlayRequest]:
    """``requests`` up to a None, from the leader's Welcome on (or the stream's end): a
    leader that refuses the stream at its opening is then seen by its status, not grpc's
    error for a write that lost the race with the refusal (grpc/grpc#36066)."""
    await welcomed.wait()
    while (request := await requests.get()) is not None:
        yield request
