"""What a streaming call has yet to send its client: serialized messages, bounded in bytes.

A Play stream and a WatchMatch spectator each get an :class:`Outbox`. A match never waits
for a client to read: it puts its messages here and goes on, and the call's handler sends
them (:meth:`Outbox.drain`) as fast as gRPC takes them. A client that stops reading would
make the outbox grow without end, so it holds at most ``limit`` bytes; the put that would
go over is refused, and the caller ends the call (``RESOURCE_EXHAUSTED`` /
``SLOW_CONSUMER``).

The messages are kept serialized, not as protobuf objects: a message object took about
2 KB of memory for a typical 150 bytes on the wire (an upb arena each), while a ``bytes``
costs its size plus :data:`MESSAGE_OVERHEAD`, which is counted too. So ``limit`` bounds the
memory the outbox holds, not only what would cross the wire. The handlers send these bytes
as they are (their methods are registered without a response serializer:
``capicua.server.app``).

What gRPC holds beyond the outbox: a message counts as unread until gRPC has taken it, that
is until its send completes, which in gRPC's HTTP/2 transport is when flow control let it
out to the connection; after that it is in the connection's write buffer and the kernel's
socket buffer, which are per connection (docs/security.md, "What a client that stops
reading costs").
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

#: The default bound of one outbox, in bytes (``capicua serve --max-unread-bytes``): about
#: 16,500 typical messages. A bot that reads its stream does not come near it: while one
#: pauses, each of its matches soon waits for it, having sent at most its pending request
#: (1 to 2 KB, padded) and a few event batches, about 2 to 3 MB for the 1,000 matches a bot
#: may hold (``--max-matches-per-bot``), by estimate; a spectator's whole match is at most
#: 36 KB in the presets measured.
MAX_UNREAD_BYTES = 4 << 20

#: What holding one message costs beyond its bytes: the ``bytes`` object's header (33 bytes,
#: rounded up by the allocator) and its slot in the deque (8); measured 30 to 55 bytes.
MESSAGE_OVERHEAD = 64


def cost(data: bytes) -> int:
    """What holding ``data`` counts against an outbox's limit."""
    return len(data) + MESSAGE_OVERHEAD


class Outbox:
    """Serialized messages waiting to be sent, in order, and at most one waiting sender.

    A deque and one future rather than an :class:`asyncio.Queue`: the sender takes every
    message queued in one go, and a put costs an append (plus waking the sender when it
    waits)."""

    def __init__(self, limit: int) -> None:
        self.bound = limit  # the server's setting, as a refusal reports it
        self.limit = limit  # the bound plus what was put over it (:meth:`put_over`)
        self.unread = 0  # bytes held (:func:`cost`): queued, and the one being sent
        self.closed = False
        self._messages: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, data: bytes) -> bool:
        """Queue ``data``; False, and nothing queued, when it would take the outbox over its
        limit (or the outbox is closed)."""
        size = cost(data)
        if self.closed or self.unread + size > self.limit:
            return False
        self._append(data, size)
        return True

    def put_over(self, data: bytes) -> None:
        """Queue ``data`` whatever the limit, and raise the limit by as much: for what a
        call must send anyway, such as a new Play stream's opening (a view and the pending
        request for each seat of its principal: about 4 KB a seat, so a bot in many matches
        could not reconnect if the bound counted it)."""
        if self.closed:
            return
        size = cost(data)
        self.limit += size
        self._append(data, size)

    def _append(self, data: bytes, size: int) -> None:
        self.unread += size
        self._messages.append(data)
        self._wake()

    def close(self) -> None:
        """End the call once what is queued is sent; later puts are refused."""
        if not self.closed:
            self.closed = True
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> AsyncIterator[bytes]:
        """Every message, in order, as gRPC takes them, until the outbox is closed and
        empty. A message counts as unread until the caller asks for the next one, which a
        gRPC handler does once gRPC has taken the message."""
        messages = self._messages
        loop = asyncio.get_running_loop()  # once: each call is a system call in CPython 3.11
        while True:
            while messages:
                data = messages.popleft()
                yield data
                self.unread -= cost(data)
            if self.closed:
                return
            waiter = self._waiter = loop.create_future()
            await waiter
