"""Mistakes and interruptions end with one line and the right exit code, never a traceback:
real subprocesses, real signals, real files."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capicua.client import launch_server
from tests.tooling import cpython_start_interrupted, default_sigint, in_our_code

PY = sys.executable


def capicua(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "capicua", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("command", ["standings", "report"])
def test_a_corrupt_results_file_is_one_line(tmp_path: Path, command: str) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.sqlite").write_text("this is not a database\n")
    r = capicua("arena", command, "out", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "capicua: error: out/results.sqlite: not a readable results database "
        "(file is not a database); nothing was changed"
    ]
    assert (tmp_path / "out" / "results.sqlite").read_text() == "this is not a database\n"


def test_a_port_in_use_is_one_line_without_grpc_noise(tmp_path: Path) -> None:
    first = launch_server(["--log-level", "warning"], log=tmp_path / "first.log")
    try:
        port = first.address.rsplit(":", 1)[1]
        r = capicua("serve", "--port", port, cwd=tmp_path)
        assert r.returncode == 2
        assert r.stderr.strip().splitlines() == [
            f"capicua: error: cannot listen on 127.0.0.1:{port}: address already in use"
        ]
    finally:
        first.process.send_signal(signal.SIGTERM)  # a normal stop: exit 0
        first.process.wait(timeout=60)
    assert first.process.returncode == 0, first.tail()


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.6, 1.2])
def test_ctrl_c_at_any_moment_of_the_servers_start(delay: float) -> None:
    """From the imports to the running server: one line (or none) and exit 130 or 0."""
    # Ctrl-C as a terminal gives it (see default_sigint)
    with default_sigint():
        proc = subprocess.Popen(
            [PY, "-m", "capicua", "serve", "--port", "0", "--log-level", "warning"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if cpython_start_interrupted(err):
        # CPython's own report, before any line of capicua ran (importing `site`, or runpy
        # compiling `-m capicua`'s __main__)
        assert proc.returncode != 0 and not in_our_code(err), err
        return
    assert "Traceback" not in err and "Exception" not in err, err
    # 130 from the guard; or death by the signal itself (a shell shows 130 too) when it
    # lands while the interpreter is starting or ending, before or after any Python code
    assert proc.returncode in (130, -signal.SIGINT), err
    lines = err.strip().splitlines()
    assert lines == [] or (len(lines) == 1 and lines[0].startswith("capicua: interrupted; ")), err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["experiment", "ab"],
            "capicua: error: Missing option '--base'. (see 'capicua experiment ab --help')",
        ),
        (["play", "--rules", "block", "--seed", "x"], "capicua: error: Invalid value for '--seed'"),
        (["nope"], "capicua: error: No such command 'nope'. (see 'capicua --help')"),
        (["rules", "show", "block", "--bogus"], "capicua: error: No such option '--bogus'"),
        (
            ["serve", "--ipv4-group-prefix", "/33"],
            "capicua: error: Invalid value for '--ipv4-group-prefix': 33 is not in the range "
            "8<=x<=32.",
        ),
        (
            ["serve", "--ipv6-group-prefix", "0"],
            "capicua: error: Invalid value for '--ipv6-group-prefix': 0 is not in the range "
            "32<=x<=128.",
        ),
    ],
)
def test_usage_errors_have_the_same_form_as_every_error(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    r = capicua(*args, cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), r.stderr


def test_version_and_help_load_no_grpc() -> None:
    code = (
        "import sys\n"
        "from capicua.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('grpc' in sys.modules, 'capicua.server' in sys.modules)\n"
    )
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "False False"
    assert "experiment" in r.stdout and "arena" in r.stdout


_DROPPED_INTERRUPT = """
import threading, weakref
from capicua import entry

if {redeliver}:
    entry._redeliver_swallowed_interrupts()

class Lock: pass

def freed(_):  # as an import's module lock is freed: a Ctrl-C here cannot propagate
    raise KeyboardInterrupt

lock = Lock()
ref = weakref.ref(lock, freed)
try:
    del lock
    threading.Event().wait({wait})  # a real Ctrl-C (sent again) ends this wait at once
    print("lost")
except KeyboardInterrupt:
    print("delivered")
"""


@pytest.mark.parametrize("redeliver", [True, False])
def test_a_ctrl_c_python_would_drop_is_sent_again(redeliver: bool) -> None:
    """A KeyboardInterrupt raised where Python cannot propagate it (here a weakref
    callback, as CI saw while an import's module lock was freed) is not lost: the entry
    point sends it again, and it lands in the next line of the main thread."""
    r = subprocess.run(
        # without the hook nothing can end the wait: the dropped interrupt is looked for
        # at once
        [PY, "-c", _DROPPED_INTERRUPT.format(redeliver=redeliver, wait=120 if redeliver else 0)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    if redeliver:
        assert (r.stdout, r.stderr) == ("delivered\n", "")
    else:  # what Python does by itself: the interrupt is printed and dropped
        assert r.stdout == "lost\n" and "Exception ignored in" in r.stderr
