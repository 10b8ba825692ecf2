"""The bot an author writes: one method, ``choose(observation, legal_actions)``.

``observation`` is the engine's :class:`~capicua.engine.observation.Observation` (converted
from the seat's ``View``: everything the seat may know, so a bot needs no memory) and
``legal_actions`` a list of :class:`~capicua.engine.actions.Action`. Return one of them (or
its text, ``"3-6:L"``, or its id). ``choose`` may be a plain method (it then runs in a worker
thread, so a slow decision in one match never holds up another) or ``async def`` (it runs on
the event loop: await, do not block).

Optional hooks, plain or ``async``, called in order for each match: :meth:`Bot.on_match_started`,
:meth:`Bot.on_events`, :meth:`Bot.on_hand_ended`, :meth:`Bot.on_match_ended`, and
:meth:`Bot.on_error` for a refusal from the server (e.g. ILLEGAL_ACTION, with the reason).

Below ``choose`` sits :meth:`Bot.decide`, which gets the whole :class:`Decision` (the raw
``DecisionRequest`` too) and returns the action id to send, or None to send nothing; the
stdio bridge and the terminal seat override it.

``current_decision()`` inside ``choose`` gives that :class:`Decision`: its match, seat and
turn, ``time_left()`` (from the server's own ``time_left_ms``: no clock need agree), the
match's turn timer, and whether the server still wants the answer (``stale``, and
``withdrawal``: why not).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from capicua.common.errors import CapicuaError
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Event, HandResult, Outcome
from capicua.v1 import errors_pb2, play_pb2
from capicua.wire import views

__all__ = [
    "Bot",
    "BotAnswerError",
    "ClientError",
    "Decision",
    "PlayError",
    "SUPERSEDED",
    "WITHDRAWN",
    "as_bot",
    "current_decision",
]

T = TypeVar("T")

#: The message of the CancelledError a decision gets when the server has moved on without
#: withdrawing it (a later request came): distinguishes it from the session stopping.
SUPERSEDED = "superseded: the server moved on"
#: ... and when nobody will take its answer any more: the match ended, or the server stops.
WITHDRAWN = "withdrawn: the match is over"

Answer = Action | str | int
"""What ``choose`` may return: a legal action, its text (``"3-6:L"``) or its id."""


class ClientError(CapicuaError):
    """The session cannot go on: a bad token, no permission, a replaced stream, a stdio
    child that keeps crashing... Raised by :meth:`Session.run`; a bot may raise it from
    ``decide`` or ``choose`` to end the session."""


class BotAnswerError(CapicuaError):
    """``choose`` returned something that is not one of the legal actions."""


@dataclass(frozen=True)
class PlayError:
    """A refusal the server sent in the Play stream (the stream stays open).

    ``reason`` is the ErrorInfo reason (``ILLEGAL_ACTION``, ``STALE_TURN``, ...), the name
    of a ``capicua.v1.ErrorReason`` value: compare :attr:`error_reason` with the enum
    (``error.error_reason == errors_pb2.ILLEGAL_ACTION``) rather than retyping the name.
    ``code`` is the canonical status code name (``FAILED_PRECONDITION``), ``message`` the
    explanation. ``match`` and ``turn_id`` say which answer it is about, when the server
    says so."""

    code: str
    reason: str
    message: str
    match: str | None = None
    turn_id: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code}/{self.reason}: {self.message}"

    @property
    def error_reason(self) -> errors_pb2.ErrorReason.ValueType:
        """:attr:`reason` as a ``capicua.v1.ErrorReason`` value (``errors_pb2.ILLEGAL_ACTION``);
        ERROR_REASON_UNSPECIFIED for none, or for one newer than this SDK."""
        try:
            return errors_pb2.ErrorReason.Value(self.reason)
        except ValueError:
            return errors_pb2.ERROR_REASON_UNSPECIFIED


@dataclass
class _Fate:
    """What became of a request after it arrived (set by the session, read by the bot,
    possibly from ``choose``'s thread)."""

    stale: bool = False
    withdrawal: play_pb2.DecisionWithdrawn | None = None


@dataclass(frozen=True)
class Decision:
    """One decision to take: the server's ``DecisionRequest`` (its view always the full
    one) and its engine values."""

    request: play_pb2.DecisionRequest
    received: float = field(default_factory=time.monotonic)
    #: What the session kept of the seat's view, as engine values (None: convert the whole
    #: view): the observation then converts only what changed since the last decision.
    known: views.Known | None = None
    #: The match's turn timer as the server applies it (MatchStarted.turn_timer; None: the
    #: server did not say).
    turn_timer: play_pb2.TurnTimer | None = None
    _fate: _Fate = field(default_factory=_Fate, repr=False, compare=False)

    @property
    def match(self) -> str:
        return self.request.match

    @property
    def seat(self) -> int:
        return self.request.seat

    @property
    def turn_id(self) -> int:
        return self.request.turn_id

    @cached_property
    def observation(self) -> Observation:
        return views.observation_from_view(self.request.view, self.known)

    @cached_property
    def legal_actions(self) -> list[Action]:
        return views.actions_from_legal(self.request.legal_actions)

    @property
    def deadline(self) -> float | None:
        """When the turn timer runs out, in seconds since the epoch (None: no timer)."""
        if not self.request.HasField("deadline"):
            return None
        return self.request.deadline.ToNanoseconds() / 1e9

    @property
    def time_left_ms(self) -> int | None:
        """How long the server would wait for this answer when it sent the request, in
        milliseconds, as it measured it (None: no timer, or a server that does not say)."""
        return self.request.time_left_ms or None

    def time_left(self) -> float | None:
        """Seconds left to answer (never negative; None: no timer): ``time_left_ms`` less
        the time since the request arrived, on this machine's monotonic clock, so the two
        clocks need not agree; from ``deadline`` and the wall clock when the server does
        not send ``time_left_ms``."""
        left_ms = self.time_left_ms
        if left_ms is not None:
            return max(0.0, left_ms / 1000 - (time.monotonic() - self.received))
        deadline = self.deadline
        return None if deadline is None else max(0.0, deadline - time.time())

    @property
    def stale(self) -> bool:
        """The server no longer wants this answer: it withdrew the request, a later
        request of the match came, or the match ended. A long ``choose`` may check it and
        return early: after a withdrawal for a turn the server played (the seat is
        auto-played), any answer still takes the seat back from the next turn on."""
        return self._fate.stale

    @property
    def withdrawal(self) -> play_pb2.DecisionWithdrawn | None:
        """The server's DecisionWithdrawn for this request, if it sent one (its
        ``reason``: why)."""
        return self._fate.withdrawal

    def id_of(self, answer: Answer) -> int | None:
        """The id to send for ``answer`` (see :func:`capicua.wire.views.parse_answer`)."""
        return views.parse_answer(self.legal_actions, answer)


_current: contextvars.ContextVar[Decision | None] = contextvars.ContextVar(
    "capicua_decision", default=None
)


def current_decision() -> Decision | None:
    """Inside ``choose``: the decision being taken (match, seat, turn_id, ``time_left()``,
    ``turn_timer``, ``stale``)."""
    return _current.get()


# -- running plain functions off the event loop -------------------------------------------

_threads: contextvars.ContextVar[asyncio.Semaphore | None] = contextvars.ContextVar(
    "capicua_threads", default=None
)


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in a daemon thread (a bot stuck in ``choose`` never keeps the
    process from exiting), at most as many at once as the session allows."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            outcome: tuple[bool, Any] = (True, context.run(fn, *args))
        except BaseException as e:  # handed to the awaiting task
            outcome = (False, e)
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    limit = _threads.get()
    if limit is None:
        threading.Thread(target=work, name="capicua-bot", daemon=True).start()
        return await future
    async with limit:
        threading.Thread(target=work, name="capicua-bot", daemon=True).start()
        return await future


async def call_hook(method: Callable[..., Any], *args: Any) -> None:
    """Call a hook: ``async def`` ones on the loop, plain ones in a thread."""
    if inspect.iscoroutinefunction(method):
        await method(*args)
        return
    result = await in_thread(method, *args)
    if inspect.isawaitable(result):
        await result


HOOKS = ("on_match_started", "on_events", "on_hand_ended", "on_match_ended", "on_error")


def overrides(bot: Bot, name: str) -> bool:
    """Whether ``bot`` has its own hook ``name`` (the base class's do nothing)."""
    method = getattr(bot, name)
    return getattr(method, "__func__", method) is not getattr(Bot, name)


class Bot:
    """Subclass this and write :meth:`choose`; every hook is optional.

    One instance plays every seat of every match its token holds, possibly several
    decisions at once (in different matches): keep per-match state keyed by ``match``.
    """

    #: Shown in logs (default: the class name).
    name: str = ""

    def choose(
        self, observation: Observation, legal_actions: Sequence[Action]
    ) -> Answer | Awaitable[Answer]:
        """Return one of ``legal_actions`` (or its text, or its id)."""
        raise NotImplementedError(f"{type(self).__name__} must define choose()")

    def on_match_started(self, match: str, seat: int, observation: Observation) -> Any:
        """A match with seat ``seat`` started (once per seat and session; after a reconnect
        of the same session it is not repeated)."""

    def on_events(self, match: str, seat: int, events: Sequence[Event]) -> Any:
        """Events of ``match`` as ``seat`` may see them (plays, passes, draws, ...)."""

    def on_hand_ended(self, match: str, result: HandResult) -> Any:
        """A hand ended: every seat's tiles, the points, the scores (once per hand)."""

    def on_match_ended(self, match: str, outcome: Outcome) -> Any:
        """The match ended (termination kind, winner, final scores, reason)."""

    def on_error(self, error: PlayError) -> Any:
        """The server refused something this bot sent (the SDK has logged it already).
        After ILLEGAL_ACTION the same request comes again and ``choose`` is asked again."""

    def close(self) -> Any:
        """The session is over: release what the bot holds (processes, files...)."""

    async def decide(self, decision: Decision) -> int | None:
        """The action id to answer ``decision`` with (None: send nothing, so the match's
        timeout policy applies). By default: ask :meth:`choose` and map its answer."""
        observation, legal = decision.observation, decision.legal_actions
        token = _current.set(decision)
        try:
            if inspect.iscoroutinefunction(self.choose):
                answer = await self.choose(observation, legal)
            else:
                answer = await in_thread(self.choose, observation, legal)
                if inspect.isawaitable(answer):
                    answer = await answer
        finally:
            _current.reset(token)
        action_id = views.parse_answer(legal, answer)
        if action_id is None:
            shown = ", ".join(str(a) for a in legal)
            raise BotAnswerError(
                f"choose returned {answer!r}, which is not one of the legal actions ({shown})"
            )
        return action_id

    @property
    def display_name(self) -> str:
        return self.name or type(self).__name__


class _Wrapped(Bot):
    """Any object with ``choose(observation, legal)`` (e.g. a built-in engine bot)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", "") or type(inner).__name__)
        if inspect.iscoroutinefunction(inner.choose):
            self.choose = self._async_choose  # type: ignore[method-assign,assignment]
        for hook in HOOKS:
            if callable(getattr(inner, hook, None)):
                setattr(self, hook, getattr(inner, hook))

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Any:
        return self.inner.choose(observation, legal_actions)

    async def _async_choose(self, observation: Observation, legal: Sequence[Action]) -> Any:
        return await self.inner.choose(observation, legal)


def as_bot(obj: Any) -> Bot:
    """``obj`` as a :class:`Bot`: itself, or a wrapper for any object with ``choose``."""
    if isinstance(obj, Bot):
        return obj
    if callable(getattr(obj, "choose", None)):
        return _Wrapped(obj)
    raise CapicuaError(f"{type(obj).__name__} is not a bot: it has no choose() method")
