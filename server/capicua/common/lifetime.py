"""Child processes that never outlive their parent.

On Linux a child asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so
an arena or server killed with ``kill -9`` leaves no bot, server or worker process behind.
Elsewhere this is a no-op and orphans are cleaned up only on a normal exit.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence

_PR_SET_PDEATHSIG = 1
_PARENT_FLAG = "--parent="


def die_with_parent(expected_parent: int | None = None) -> None:
    """Ask for SIGKILL when the parent process exits (Linux; a no-op elsewhere), or exit at
    once (status 1) if it has exited already: the request would then never fire.

    ``expected_parent`` is the pid of the process that forked this one, as that process
    knew it before the fork (its own ``os.getpid()``, passed down). It makes the check
    race-free, as ``PR_SET_PDEATHSIG(2const)`` says to do it: the request goes in first,
    then ``getppid()`` is compared with it. A parent that dies after the request sends the
    signal; one that died before it has already handed this process over to init (or a
    subreaper), so ``getppid()`` differs, and this process exits.

    Without it, the parent is the one ``getppid()`` reads here, which only covers a parent
    dying during this call: one that died *before* it (between the fork and this call)
    goes unnoticed, since ``getppid()`` then already reads init (or the subreaper) both
    times, and this process lives on as an orphan. Call it so only where that cannot
    happen or cannot matter, and say why there.

    The kernel sends the signal when the *thread* that forked this process exits: fork
    children from a thread that lives as long as its process (the main thread)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid() if expected_parent is None else expected_parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no usable libc
        return
    if os.getppid() != parent:  # the parent died before the request was in place
        os._exit(1)


def die_with_creator(expected_parent: int | None = None) -> None:
    """In a multiprocessing child (a pool worker's initializer): :func:`die_with_parent`,
    then exit at once if the process that created this one through multiprocessing is
    already gone. That process's sentinel (the pipe it wrote this child's start data into)
    is at EOF once it is dead, whoever forked the child (the creator itself, or a
    forkserver). A creator alive at this check was alive when the request above was made,
    so the parent dies no later than it, and this process with the parent."""
    die_with_parent(expected_parent)
    if not sys.platform.startswith("linux"):
        return
    import multiprocessing  # here: this module is imported by every launched command

    creator = multiprocessing.parent_process()
    if creator is not None and not creator.is_alive():
        os._exit(1)


def with_parent_death(argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped so that the process gets SIGKILL when its parent dies (Linux);
    elsewhere ``argv`` unchanged. Start it without a ``preexec_fn``, from this process
    (the wrapped command names it as the parent to die with) and directly, not through a
    shell or another launcher (it would take that for a parent that died, and exit).

    Running Python code between fork and exec (a ``preexec_fn``) is unsafe in a process
    that uses gRPC (its fork handlers can abort the child), so this module's :func:`main`
    makes the request after the exec instead, then becomes the real command. It is told
    this process's pid: by the time it runs, its parent may already be dead (see
    :func:`die_with_parent`)."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    # -I: the launcher ignores the environment and the working directory when importing;
    # the command it becomes gets both unchanged
    return [
        sys.executable,
        "-I",
        "-m",
        "capicua.common.lifetime",
        f"{_PARENT_FLAG}{os.getpid()}",
        *argv,
    ]


def main(argv: Sequence[str]) -> None:
    """Ask for SIGKILL with the parent, then exec the command (exit 127 if it cannot run).

    ``argv``: ``--parent=PID`` (the pid of the process that starts this one, as
    :func:`with_parent_death` writes it; optional), then the command."""
    expected: int | None = None
    if argv and argv[0].startswith(_PARENT_FLAG):
        expected = int(argv[0].removeprefix(_PARENT_FLAG))
        argv = argv[1:]
    die_with_parent(expected)
    try:
        os.execvp(argv[0], list(argv))
    except OSError as e:
        sys.stderr.write(f"cannot run {argv[0]!r}: {e.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
