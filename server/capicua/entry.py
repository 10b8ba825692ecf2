"""The ``capicua`` command's entry point: everything, imports included, runs under one
guard, so Ctrl-C at any moment (even while the command's modules are still loading) ends
it with one line and exit code 130, never a traceback (:mod:`capicua.common.interrupt`).
This module imports nothing itself: an import here would run before the guard."""

from __future__ import annotations


def main() -> None:
    try:
        _redeliver_swallowed_interrupts()
        from capicua.cli import main as cli

        cli(prog_name="capicua")
    except KeyboardInterrupt as e:
        # imported here, where a Ctrl-C that cut its first import short is caught too
        from capicua.common import interrupt

        interrupt.exit_interrupted(e)


def _redeliver_swallowed_interrupts() -> None:
    """Keep a Ctrl-C that Python would drop: send it again a moment later.

    A KeyboardInterrupt raised where Python cannot propagate it (a weakref callback, a
    ``__del__``: an import's module lock is freed through one as each import ends) is
    printed as "Exception ignored in ..." and dropped, and the command goes on as if the
    key had never been pressed: a server went on to serve. Such an interrupt is sent to
    the main thread again, from a new thread (sent from here, the signal module would
    raise it inside this hook, where it would be dropped again), and lands at the next
    line that can take it, with the same handler a second Ctrl-C would meet. Other
    unraisable exceptions, and interrupts of other threads, go to the hook as before."""
    import _thread
    import contextlib
    import signal
    import sys

    main_thread = _thread.get_ident()
    previous = sys.unraisablehook

    def again() -> None:
        # OSError: the main thread has ended meanwhile, and there is nothing to interrupt
        with contextlib.suppress(OSError):
            if hasattr(signal, "pthread_kill"):  # a real signal: it ends a blocking call too
                signal.pthread_kill(main_thread, signal.SIGINT)
            else:
                _thread.interrupt_main()

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt) and (
            _thread.get_ident() == main_thread
        ):
            # RuntimeError: no new thread while Python shuts down, which ends it anyway
            with contextlib.suppress(RuntimeError):
                _thread.start_new_thread(again, ())
        else:
            previous(unraisable)

    sys.unraisablehook = hook
