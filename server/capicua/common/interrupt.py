"""Ctrl-C: one rule for every ``capicua`` command.

Whenever it comes (while Python is still importing the command, while a server starts,
in the middle of the work, while it stops), Ctrl-C ends a command with one line on stderr,

    capicua: interrupted; <what running the same command again does>

and exit code 130; never a traceback, and nothing half-made left behind. A command says
what a rerun does with :func:`rerun` before it changes anything, and again as that changes
(a directory that holds results resumes; one that holds nothing starts afresh); until then
(Python starting, the command's modules loading, its options read) the line says that
nothing was changed.

Two ways lead to the line, and both end at :func:`exit_interrupted` (the entry point and
the click group call it). Most of the time Python's own handler raises KeyboardInterrupt
wherever the command is, and it unwinds (``finally`` blocks stop what was started). A
command whose work must be put in order first (cancel the matches in flight, keep what
finished) takes the signals itself while that work runs (:func:`signals`), stops cleanly,
and then raises :class:`Interrupted`, a KeyboardInterrupt that takes the same way out.
What must never be cut in half (a directory and its lock made or taken back, a database
bound to its run, a batch of results committed with its count) runs :func:`shielded`:
a signal that comes meanwhile raises at its end. A KeyboardInterrupt that Python itself
drops (raised inside a weakref callback or a ``__del__``, where it cannot propagate) is
not lost: the entry point sends the signal again (:mod:`capicua.entry`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import NoReturn

#: What every interrupted command prints first.
PREFIX = "capicua: interrupted"
#: Until a command says otherwise: what runs before it changes anything changes nothing.
BEFORE_START = "nothing was changed: the same command starts from the beginning"
#: The exit code of an interrupted command (128 + SIGINT, as a shell reports one).
EXIT_CODE = 130

_rerun: list[str | Callable[[], str]] = [BEFORE_START]


def rerun(text: str | Callable[[], str]) -> None:
    """From now on an interrupt says ``text``: what running the same command again does
    (a function: worked out when the interrupt comes, from what is on disk then)."""
    _rerun[0] = text


def rerun_text() -> str:
    """What an interrupt says now about running the command again."""
    text = _rerun[0]
    return text if isinstance(text, str) else text()


class Interrupted(KeyboardInterrupt):
    """A command stopped by a signal, its work put in order; ``rerun`` (when given) is what
    running it again does, else the last :func:`rerun` text holds."""

    def __init__(self, rerun: str | None = None) -> None:
        super().__init__(rerun or "")
        self.rerun = rerun


def line(error: BaseException | None = None) -> str:
    """The one line an interrupt prints (``error``: the exception that ended the command,
    or what caused it)."""
    while error is not None and not isinstance(error, Interrupted):
        error = error.__cause__ or error.__context__  # click's Abort wraps the interrupt
    text = error.rerun if error is not None and error.rerun else rerun_text()
    return f"{PREFIX}; {text}"


def exit_interrupted(error: BaseException | None = None) -> NoReturn:
    """Print :func:`line` and exit 130."""
    said = line(error) + "\n"
    _exit_on_another_signal(said)
    _say_once(said)
    _forget_interrupted_exec()
    # What the interrupt left half-built is finalized as the process ends: an event loop
    # interrupted in its constructor fails in its __del__, a coroutine never started
    # warns. Both are the interrupt itself, already reported in the line above.
    sys.unraisablehook = lambda _: None
    warnings.simplefilter("ignore")
    sys.exit(EXIT_CODE)


def _forget_interrupted_exec() -> None:
    """Keep ``python -m capicua`` from ending as killed by SIGINT (-2) instead of 130.

    CPython (3.11 here; 3.12's source does the same) runs source strings (``exec`` or
    ``eval`` of a ``str``, which dataclasses, namedtuple and others do while modules load)
    through ``run_eval_code_obj``, which sets the runtime's "unhandled KeyboardInterrupt" flag when
    such a string ends with a KeyboardInterrupt, even one caught afterwards. Under ``-m``,
    ``Py_RunMain`` checks that flag after the interpreter has finalized and, when it is set,
    kills the process with SIGINT, whatever the exit code (the console script runs as a
    file, whose exit skips that check). So a Ctrl-C landing in a dataclass being built made
    the command print its line and still die by the signal. Every string evaluation clears
    the flag first, and one that ends normally leaves it clear: this one, run once no signal
    can raise KeyboardInterrupt any more (:func:`_exit_on_another_signal`), does that."""
    exec("None", {})  # a constant string, evaluated for its effect on that flag


_said: list[str] = []


def _say_once(text: str) -> None:
    if not _said:
        _said.append(text)
        sys.stderr.write(text)
        sys.stderr.flush()


def _exit_on_another_signal(said: str) -> None:
    """From here on a SIGINT or SIGTERM ends the process at once, with the same code and
    the same line.

    The command is on its way out (what it recorded is recorded), and Python still has to
    finalize: join threads, run exit handlers. A signal that lands then (a second Ctrl-C,
    or the first one still pending when a command that took the signals itself hands them
    back to Python's handler) would raise KeyboardInterrupt there, and Python reports an
    interpreter ended by KeyboardInterrupt as killed by SIGINT: status -2 instead of 130.
    Python's last steps put its handlers back to the default, which kills with the signal
    too, so once the exit handlers run the signals are ignored instead (the kernel keeps an
    ignored signal ignored). Only the main thread sets handlers (elsewhere this changes
    nothing)."""

    def exit_now(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError, ValueError):
            _say_once(said)
            sys.stdout.flush()
        os._exit(EXIT_CODE)

    def ignore() -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, exit_now)
        atexit.register(ignore)  # registered last: the first exit handler to run


@contextlib.contextmanager
def signals(on_signal: Callable[[int], None]) -> Iterator[None]:
    """While inside (a coroutine of the main thread's running loop), SIGINT and SIGTERM call
    ``on_signal(signum)`` on the loop instead of raising KeyboardInterrupt wherever the code
    is, so the command can stop what it does in order. Elsewhere (another thread, a
    platform without loop signal handlers) it changes nothing."""
    import asyncio  # here: the entry point imports this module before anything else

    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, on_signal, signum)
                installed.append(signum)
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While inside, SIGTERM unwinds like Ctrl-C (a KeyboardInterrupt): what is committed
    stays and the children are stopped on the way out. Only the main thread may set a
    signal handler: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: The handlers that raise KeyboardInterrupt where the code is: what :func:`shielded` holds.
_RAISING = (signal.default_int_handler, _raise_interrupt)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Run the block to its end whatever signal comes: a SIGINT or SIGTERM that would raise
    KeyboardInterrupt inside it is held and raised as the block ends (on the main thread;
    signals a running event loop takes (:func:`signals`) never raise, so there and on
    other threads this changes nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler in _RAISING:
            previous[signum] = signal.signal(signum, lambda n, _: held.append(n))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if held:
        raise KeyboardInterrupt
