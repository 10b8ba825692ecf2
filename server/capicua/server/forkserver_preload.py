"""Imported only by the CPU pool's forkserver process (see :class:`~capicua.server.cpu.CpuPool`).

The forkserver is the parent of the pool's workers; it must not outlive the server, or a
server killed with SIGKILL would leave it and its workers behind. Importing this module
there asks the kernel to kill it with the server.
"""

from capicua.lifetime import die_with_parent

die_with_parent()
