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

    Safe in a ``preexec_fn`` (between fork and exec) and in a pool initializer. Exits at
    once if the parent is already gone (the request would then never fire)."""
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


# A tiny launcher: ask for the signal, then become the real command. Running Python code
# between fork and exec (a ``preexec_fn``) is unsafe in a process that uses gRPC (its fork
# handlers can abort the child), so the request is made after the exec instead.
_LAUNCHER = (
    "import os,sys,ctypes,signal\n"
    "p=os.getppid()\n"
    "try:ctypes.CDLL(None).prctl(1,signal.SIGKILL,0,0,0)\n"
    "except Exception:pass\n"
    "os.getppid()==p or os._exit(1)\n"
    "try:os.execvp(sys.argv[1],sys.argv[1:])\n"
    "except OSError as e:\n"
    " sys.stderr.write(f'cannot run {sys.argv[1]!r}: {e.strerror}\\n');os._exit(127)\n"
)


def with_parent_death(argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped so that the process gets SIGKILL when its parent dies (Linux);
    elsewhere ``argv`` unchanged. Start it without a ``preexec_fn``."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-S", "-c", _LAUNCHER, *argv]
