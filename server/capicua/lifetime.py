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


def die_with_parent() -> None:
    """Ask for SIGKILL when the parent process exits (Linux; a no-op elsewhere).

    For a pool initializer or an import in a child process (see :func:`with_parent_death`
    for commands). Exits at once if the parent is already gone (the request would then
    never fire)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no usable libc
        return
    if os.getppid() != parent:  # the parent died before the request was in place
        os._exit(1)


def with_parent_death(argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped so that the process gets SIGKILL when its parent dies (Linux);
    elsewhere ``argv`` unchanged. Start it without a ``preexec_fn``.

    Running Python code between fork and exec (a ``preexec_fn``) is unsafe in a process
    that uses gRPC (its fork handlers can abort the child), so this module's :func:`main`
    makes the request after the exec instead, then becomes the real command."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    # -I: the launcher ignores the environment and the working directory when importing;
    # the command it becomes gets both unchanged
    return [sys.executable, "-I", "-m", "capicua.lifetime", *argv]


def main(argv: Sequence[str]) -> None:
    """Ask for SIGKILL with the parent, then exec ``argv`` (exit 127 if it cannot run)."""
    die_with_parent()
    try:
        os.execvp(argv[0], list(argv))
    except OSError as e:
        sys.stderr.write(f"cannot run {argv[0]!r}: {e.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
