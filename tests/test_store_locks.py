"""Two connections of one process to a results directory, and a reader in another: the
second open must not drop the first's locks (closing any descriptor of a SQLite file drops
all of the process's POSIX locks on it), or the reader, closing last as it believes,
checkpoints and deletes the journal under the first connection, whose next commits then go
to a deleted file: a server's ladder runner and its control calls, or a run and its web
pages, share a process this way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from capicua.arena.store import Results

READ = """
import sys
from pathlib import Path
from capicua.arena.store import Results
r = Results(Path(sys.argv[1]), read_only=True)
print(",".join(sorted(b.name for b in r.bots())))
r.close()
"""


def _bots_seen_elsewhere(directory: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", READ, str(directory)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return set(filter(None, done.stdout.strip().split(",")))


def test_a_second_open_in_the_process_keeps_the_first_ones_commits(tmp_path: Path) -> None:
    writer = Results(tmp_path)
    try:
        writer.add_bot("first", "builtin:random")
        second = Results(tmp_path)  # e.g. a control call beside the running ladder
        second.close()
        assert _bots_seen_elsewhere(tmp_path) == {"first"}  # a reader opens and closes
        writer.add_bot("second", "builtin:easy")  # committed by the first connection
        assert _bots_seen_elsewhere(tmp_path) == {"first", "second"}
    finally:
        writer.close()
    assert _bots_seen_elsewhere(tmp_path) == {"first", "second"}
