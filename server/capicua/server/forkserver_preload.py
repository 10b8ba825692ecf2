"""Imported only by the CPU pool's forkserver process (see :class:`~capicua.server.cpu.CpuPool`).

The forkserver is the parent of the pool's workers; it must not outlive the server, or a
server killed with SIGKILL would leave it and its workers behind. Importing this module
there asks the kernel to kill it with the server, and records its pid for the workers.

The request names no expected parent (unlike the workers'): multiprocessing starts the
forkserver with a command of its own, so the server has no way to hand it its pid short of
changing the environment of the whole server process. A server that died before this
import is therefore missed here (``getppid()`` already reads init or a subreaper); that is
the one race left to the workers to close, and they do (see ``cpu._worker_init``). Until
then this forkserver has started no worker, and it exits by itself when its "alive" pipe
reaches EOF, after forking a worker for each fork request the server had already queued on
its socket (those hold the pipe open); each such worker finds the server dead and exits.

The kernel's request follows the server *thread* that started this forkserver: the pool
starts it from the event loop's thread (``run_in_executor`` submits there), the main thread.
"""

import os
import signal

from capicua.common.lifetime import die_with_parent

#: The pid of this forkserver, inherited by every worker it forks: the parent those must
#: die with, known without asking the kernel after the fork (a forkserver restarted by
#: multiprocessing imports this module again, and its workers get its own pid).
FORKSERVER_PID = os.getpid()

die_with_parent()  # see the module docstring for the race this cannot close alone

# SIGTERM sent to the server's whole process group must not end the forkserver before the
# server has settled its matches: the workers die with it (multiprocessing ignores SIGINT
# here for the same reason; it dies with the server either way).
signal.signal(signal.SIGTERM, signal.SIG_IGN)
