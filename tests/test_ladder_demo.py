"""`capicua ladder demo`: a server of its own with the demo ladder, the example bots
joining it over the protocol, and its leaderboard: the page's table shows an example bot's
rated matches, then Ctrl-C ends it with one line."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

EXAMPLE = "python-easy@v1"  # the Python example bot's entry: always there


def _lines(stream: IO[str]) -> tuple[queue.Queue[str], threading.Thread]:
    """The stream's lines as they come (read by a thread: a read never blocks the test),
    and the thread, which ends at the stream's end."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def _until_line(lines: queue.Queue[str], text: str, seen: list[str]) -> str:
    """The first line holding ``text`` (the ones before kept in ``seen``); bounded."""
    while True:
        line = lines.get(timeout=120)
        seen.append(line)
        if text in line:
            return line


def _table(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}api/ladders/demo-ladder", timeout=30) as answer:
        table: dict[str, Any] = json.load(answer)
        return table


def test_the_demo_serves_a_live_table_with_the_example_bots(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "capicua", "ladder", "demo", "--http", "0"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        (lines, reader), said = _lines(proc.stderr), list[str]()
        url = _until_line(lines, "leaderboard: ", said).split("leaderboard: ", 1)[1].split()[0]
        base = url.split("ladders/")[0]
        assert any("example bots joining ladders/demo-ladder: python-easy" in s for s in said)
        deadline = time.monotonic() + 300  # bounded: the table is polled, as a page is
        rated = 0
        while rated == 0 and time.monotonic() < deadline:
            rows = {e["name"]: e for e in _table(base)["entries"]}
            rated = rows[EXAMPLE]["matches"] if EXAMPLE in rows else 0
            time.sleep(0.5)
        assert rated > 0, "no rated match of the Python example bot"
        assert {"random", "easy", "medium", "hard"} <= rows.keys()
        with urllib.request.urlopen(url, timeout=30) as page:
            assert EXAMPLE in page.read().decode()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    reader.join(60)
    err = "".join(said + [lines.get() for _ in range(lines.qsize())])
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("capicua: interrupted"), err
    assert "Traceback" not in err
