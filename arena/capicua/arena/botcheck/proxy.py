"""The check's man in the middle: a grpc.aio server on loopback that the bot takes for the
capicua server (its ``CAPICUA_SERVER``).

Each ``Play`` call is forwarded to the real server as a call of its own, with the bot's
``authorization`` metadata, and every message passes through a :class:`Recorder` both ways.
The call ends as the server's did: the same status code, message and ``ErrorInfo``
(``grpc-status-details-bin``), so the bot sees exactly the lifecycle the server chose. The
methods that only read (:data:`READ_ONLY`: list and get matches, rulesets and replays,
watch a match) are forwarded as raw bytes; any other is refused ``PERMISSION_DENIED``: a bot
under check plays, and changes nothing else on the check's server (no bot registered, no
match created, joined, started or cancelled, no access granted).

The bot never holds a real token: its ``CAPICUA_TOKEN`` is a stand-in (:attr:`Proxy.stand_in`,
a token of the same kind) that the proxy swaps for the real one on the way. Read from the
bot's environment by another process, it is good at this proxy only, which plays and reads
for this one bot.

:class:`Faults` is what a row changes on the way: the ``Hello`` (``ask_forced``), an answer
replaced, doubled, held back or dropped. With :attr:`Proxy.down` set the proxy plays a
server that is not there: every new ``Play`` is refused ``UNAVAILABLE`` without an
``ErrorInfo``, as a dead address would be (while the real server restarts behind it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.rpc import status_pb2

from capicua.client.lobby import error_info
from capicua.common.channel import aio_channel
from capicua.common.tokens import Kind, kind_of, new_token
from capicua.v1 import match_pb2, play_pb2

from .record import Answered, Recorder, StreamLog

#: Metadata keys never forwarded: grpc's own, and the HTTP/2 pseudo-headers.
_HOP_BY_HOP = ("grpc-", ":")
#: The methods besides Play that a bot under check may call: those that change nothing.
READ_ONLY = frozenset(
    {"ListRulesets", "GetRuleset", "ListMatches", "GetMatch", "GetReplay", "WatchMatch"}
)

Send = Callable[[play_pb2.ActionReply], None]


class Faults:
    """What the proxy does to the bot's messages: by default nothing. A row subclasses it."""

    def first_hello(self) -> play_pb2.Hello | None:
        """A Hello to send the server as soon as a stream opens, before anything of the
        bot's (None: none). Lets a row decide ``ask_forced`` even for a bot that sends no
        Hello at all."""
        return None

    def hello(self, hello: play_pb2.Hello) -> play_pb2.Hello:
        """The bot's Hello as the server gets it."""
        return hello

    def answer(self, answered: Answered, send: Send) -> None:
        """Forward the bot's answer (``send``), or not, or something else, now or later
        (``send`` does nothing once the stream is gone). ``answered`` has the answer and
        the request it names, as recorded."""
        send(answered.reply)


class Proxy:
    """A Play proxy in front of the server at ``upstream`` for the bot whose real token is
    ``token`` (see the module doc)."""

    def __init__(
        self, upstream: str, recorder: Recorder, token: str, faults: Faults | None = None
    ) -> None:
        self.recorder = recorder
        self.faults = faults or Faults()
        self.down = False
        self.address = ""
        # the token the bot is given: a real one's shape (clients check the prefix)
        self.stand_in = new_token(kind_of(token) or Kind.BOT)
        # set (not None): the end of a Play call is passed on to the bot only once it is
        # set; the bot's messages meanwhile are still recorded
        self.hold_ends: asyncio.Event | None = None
        self._bearer = (f"Bearer {self.stand_in}", f"Bearer {token}")
        self._upstream = upstream
        self._channel: Any = None
        self._server: Any = None
        # token -> how many Play streams the bot opened with it: a newer one replaces the
        # older on the server, so an older one forwards nothing more (see _play)
        self._opened: dict[str, int] = {}

    def superseded(self) -> None:
        """A newer Play stream of the bot's token was opened past the proxy (straight to
        the server, as the ``replaced`` row does): the server ends the bot's streams, so
        they forward nothing more from now on (see :meth:`_play`: a message written while
        the server ends the call turns its status into INTERNAL, grpc/grpc#36066)."""
        real = self._bearer[1]
        self._opened[real] = self._opened.get(real, 0) + 1

    async def start(self) -> str:
        """Listen on a free loopback port; returns ``127.0.0.1:PORT``."""
        self._channel = aio_channel(self._upstream)
        self._server = grpc.aio.server()
        self._server.add_generic_rpc_handlers(self._handlers())
        port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()
        self.address = f"127.0.0.1:{port}"
        return self.address

    async def retarget(self, upstream: str) -> None:
        """Forward new calls to ``upstream`` (a restarted server) over a new channel: the
        old one may be in grpc's own reconnect backoff, which is not the bot's."""
        old, self._upstream = self._channel, upstream
        self._channel = aio_channel(upstream)
        if old is not None:
            await old.close()

    async def close(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
        if self._channel is not None:
            await self._channel.close()

    # -- handlers --------------------------------------------------------------------------

    def _handlers(self) -> tuple[Any, ...]:
        handlers = []
        for module, service in ((play_pb2, "PlayService"), (match_pb2, "MatchService")):
            descriptor = module.DESCRIPTOR.services_by_name[service]
            methods: dict[str, Any] = {}
            for method in descriptor.methods:
                path = f"/{descriptor.full_name}/{method.name}"
                if method.name == "Play":
                    methods[method.name] = grpc.stream_stream_rpc_method_handler(
                        self._play,
                        request_deserializer=play_pb2.PlayRequest.FromString,
                        response_serializer=play_pb2.PlayResponse.SerializeToString,
                    )
                elif method.name not in READ_ONLY:
                    methods[method.name] = _refuse(method)
                elif method.server_streaming:
                    methods[method.name] = grpc.unary_stream_rpc_method_handler(
                        self._forward_stream(path)
                    )
                elif not method.client_streaming:
                    methods[method.name] = grpc.unary_unary_rpc_method_handler(
                        self._forward_unary(path)
                    )
            handlers.append(grpc.method_handlers_generic_handler(descriptor.full_name, methods))
        return tuple(handlers)

    def _forward_unary(self, path: str) -> Callable[[bytes, Any], Any]:
        async def forward(request: bytes, context: Any) -> bytes:
            call = self._channel.unary_unary(path)
            try:
                reply: bytes = await call(
                    request, metadata=self._metadata(context), timeout=context.time_remaining()
                )
                return reply
            except grpc.aio.AioRpcError as e:
                await _abort_as(context, e)
                raise  # not reached: abort raises

        return forward

    def _forward_stream(self, path: str) -> Callable[[bytes, Any], AsyncIterator[bytes]]:
        async def forward(request: bytes, context: Any) -> AsyncIterator[bytes]:
            call = self._channel.unary_stream(path)(request, metadata=self._metadata(context))
            try:
                async for reply in call:
                    yield reply
            except grpc.aio.AioRpcError as e:
                await _abort_as(context, e)
            finally:
                call.cancel()

        return forward

    async def _play(
        self, requests: AsyncIterator[play_pb2.PlayRequest], context: Any
    ) -> AsyncIterator[play_pb2.PlayResponse]:
        if self.down:
            self.recorder.open(refused=True)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses")
        log = self.recorder.open()
        metadata = self._metadata(context)
        token = dict(metadata).get("authorization", "")
        mine = self._opened[token] = self._opened.get(token, 0) + 1
        # Once a newer stream of the same token is opened, the server ends this one
        # (STREAM_REPLACED): a message written to it then could race those trailers, and
        # grpc's client reports such a lost race as INTERNAL "Internal error from Core"
        # instead of the server's status (grpc/grpc#36066). The server would drop the
        # message anyway; it is still recorded, which is what the rows judge.
        outbox = _Outbox(lambda: self._opened[token] == mine)
        first = self.faults.first_hello()
        if first is not None:
            outbox.put_nowait(play_pb2.PlayRequest(hello=first))
        call = self._channel.stream_stream(
            "/capicua.v1.PlayService/Play",
            request_serializer=play_pb2.PlayRequest.SerializeToString,
            response_deserializer=play_pb2.PlayResponse.FromString,
        )(_drain(outbox), metadata=metadata)
        pump = asyncio.ensure_future(self._pump(requests, outbox, log))
        ended = False
        try:
            async for message in call:
                self.recorder.down(log, message)
                yield message
            ended = True
            self.recorder.close(log, "OK")
        except grpc.aio.AioRpcError as e:
            ended = True
            reason = _reason(e)
            self.recorder.close(log, e.code().name, reason, told=False)
            if self.hold_ends is not None:
                await self.hold_ends.wait()
            self.recorder.told(log)
            await _abort_as(context, e)
        finally:
            if not ended:  # the bot went away (its call was cancelled)
                self.recorder.close(log, "CANCELLED", by_bot=True)
            pump.cancel()
            call.cancel()

    async def _pump(
        self, requests: AsyncIterator[play_pb2.PlayRequest], outbox: _Outbox, log: StreamLog
    ) -> None:
        """The bot's messages to the server, through the recorder and the faults; the bot's
        half-close is passed on (the server then ends the call OK)."""
        open_ = [True]

        def send(reply: play_pb2.ActionReply) -> None:
            if open_[0]:
                outbox.put_nowait(play_pb2.PlayRequest(action=reply))

        try:
            async for request in requests:
                kind = request.WhichOneof("message")
                if kind == "hello":
                    self.recorder.hello(log, request.hello)
                    outbox.put_nowait(play_pb2.PlayRequest(hello=self.faults.hello(request.hello)))
                elif kind == "action":
                    self.faults.answer(self.recorder.up(log, request.action), send)
                else:
                    outbox.put_nowait(request)
        except (grpc.aio.AioRpcError, grpc.aio.UsageError):
            pass  # the bot's side is gone: the call's end says the rest
        finally:
            open_[0] = False
            outbox.put_nowait(None)

    def _metadata(self, context: Any) -> tuple[tuple[str, str], ...]:
        """The caller's metadata as the server should get it: the bot's stand-in token
        swapped for the real one (any other token passes as it is, to be refused by the
        server as it would be)."""
        stand_in, real = self._bearer
        return tuple(
            (key, real if key == "authorization" and value == stand_in else value)
            for key, value in context.invocation_metadata() or ()
            if not key.startswith(_HOP_BY_HOP)
        )


class _Outbox(asyncio.Queue[play_pb2.PlayRequest | None]):
    """What one Play call forwards to the server, while ``current()`` (no newer stream of
    its token was opened); its end (None) always goes through."""

    def __init__(self, current: Callable[[], bool]) -> None:
        super().__init__()
        self.current = current

    def put_nowait(self, item: play_pb2.PlayRequest | None) -> None:
        if item is None or self.current():
            super().put_nowait(item)


async def _drain(outbox: _Outbox) -> AsyncIterator[play_pb2.PlayRequest]:
    while (item := await outbox.get()) is not None:
        yield item


def _refuse(method: Any) -> Any:
    """A handler that refuses ``method`` (not one of :data:`READ_ONLY`), whatever its
    shape: one clear line, and nothing reaches the server."""
    text = (
        f"capicua bot check: a bot under check may play and read, not call {method.name} "
        "(the check's proxy forwards Play and the calls that change nothing)"
    )

    async def refuse(request: Any, context: Any) -> Any:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, text)

    if method.client_streaming and method.server_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if method.client_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    if method.server_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)


def _reason(error: Any) -> str:
    """The ErrorInfo reason of a failed call ("" without one)."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            return error_info(status_pb2.Status.FromString(value))[0]
    return ""


async def _abort_as(context: Any, error: Any) -> None:
    """End the bot's call as the server ended ours: code, message and rich status."""
    trailing = tuple(
        (k, v) for k, v in error.trailing_metadata() or () if k == "grpc-status-details-bin"
    )
    await context.abort(error.code(), error.details() or "", trailing)
