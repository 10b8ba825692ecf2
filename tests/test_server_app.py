"""``capicua serve`` as people run it: the listening line, JSON logs without tokens,
graceful shutdown on SIGTERM (running matches recorded CANCELLED with a replay that
verifies), restart on the same --data, the admin token, a port already in use."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from capicua.server.store import DB_NAME, Store
from capicua.v1 import game_pb2, match_pb2, play_pb2
from tests.compliance.client import OPEN, Bot, Lobby, bot_seat, cpu_seat, expect_error, until
from tests.serverkit import running, server_process


async def test_sigterm_stops_gracefully_and_records_running_matches(tmp_path: Path) -> None:
    data = tmp_path / "data"
    args = ["--data", str(data), "--grace", "3", "--turn-timer-ms", "60000"]
    with server_process(args, tmp_path / "logs") as server:
        lobby = Lobby(server.address)
        bot_id, token = await lobby.register("stopper")
        running_match, host = await lobby.create(
            "block", [bot_seat(bot_id)] + [cpu_seat()] * 3, seed=2
        )
        waiting_match, waiting_host = await lobby.create("block", [OPEN] * 4)
        guest = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=waiting_match.name, seat=1), timeout=10
        )
        bot = Bot(server.address, token, chooser=lambda b, d: None)
        run = asyncio.create_task(bot.run(timeout=30))
        await until(lambda: bot.welcome is not None)
        await lobby.start(running_match.name, host)
        await until(lambda: bool(bot.decisions))
        await lobby.close()
        server.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(run, 15)  # the server ends the stream
        assert await asyncio.to_thread(server.proc.wait, 15) == 0
        kinds = [m.WhichOneof("message") for m in bot.messages]
        assert "stopping" in kinds
        assert kinds.index("stopping") < kinds.index("match_ended")
        # a bot's stream ends UNAVAILABLE / SHUTTING_DOWN: reconnect with backoff
        assert bot.status == grpc.StatusCode.UNAVAILABLE and bot.status_info is not None
        assert bot.status_info.reason == "SHUTTING_DOWN"
        ended = bot.ended[running_match.name]
        assert ended.outcome.termination == game_pb2.TERMINATION_CANCELLED
        logs = server.logs()
        secrets = (token, host, waiting_host, guest.seat_token)
    lines = server.events()
    assert lines, "no logs"
    for line in lines:
        assert {"event", "level", "timestamp"} <= set(line)
    assert not any(s in logs for s in secrets), "a token reached the logs"
    finished = [x for x in lines if x["event"] == "match_finished"]
    assert {x["match"] for x in finished} == {
        running_match.name.removeprefix("matches/"),
        waiting_match.name.removeprefix("matches/"),
    }
    joined = [x for x in lines if x["event"] == "seat_joined"]
    assert [(x["match"], x["seat"]) for x in joined] == [
        (waiting_match.name.removeprefix("matches/"), 1)
    ]

    # Restart on the same data: both matches are recorded, the replay is whole.
    with server_process(["--data", str(data)], tmp_path / "logs") as server:
        lobby = Lobby(server.address)
        try:
            replay = await lobby.replay(running_match.name)  # verified
            assert replay.outcome is not None and replay.outcome.reason == "server shutting down"
            shown = await lobby.get(waiting_match.name)
            assert shown.outcome.termination == game_pb2.TERMINATION_CANCELLED
        finally:
            await lobby.close()


_PYTHON_OUTPUT = """
import logging, threading, warnings, weakref
from capicua.server.app import configure_logging

configure_logging("info", whole_process={whole})
logging.getLogger("asyncio").error("Task was destroyed but it is pending!")
warnings.warn("a library's warning")

class Box: pass

def dropped(_):  # raised where Python cannot propagate it: printed and dropped
    raise ValueError("in a weakref callback")

box = Box()
ref = weakref.ref(box, dropped)
del box
worker = threading.Thread(target=lambda: 1 / 0, name="worker")
worker.start()
worker.join()
"""


@pytest.mark.parametrize("whole", [True, False])
def test_what_python_writes_in_the_server_is_json_too(whole: bool) -> None:
    """The server's stderr is JSON lines, also what Python and the libraries write there:
    the standard logging (asyncio, grpc), warnings, an exception dropped in a callback or
    a thread (a line of plain text among them broke a stressed run's test)."""
    r = subprocess.run(
        [sys.executable, "-c", _PYTHON_OUTPUT.format(whole=whole)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    if not whole:  # the logging alone: Python's own plain text, as the server had it
        assert "Traceback" in r.stderr and "Exception ignored in" in r.stderr
        return
    events = [json.loads(line) for line in r.stderr.splitlines()]
    by_event = {e["event"]: e for e in events}
    assert by_event["Task was destroyed but it is pending!"]["logger"] == "asyncio"
    warned = next(e for e in events if "a library's warning" in e["event"])
    assert (warned["logger"], warned["level"]) == ("py.warnings", "warning")
    ignored = by_event["exception_ignored"]
    assert "ValueError: in a weakref callback" in ignored["exception"]
    assert ignored["object"].startswith("<function dropped")
    failed = by_event["thread_failed"]
    assert failed["thread"] == "worker" and "ZeroDivisionError" in failed["exception"]
    assert len(events) == 4, r.stderr


async def test_admin_token_restricts_registration(tmp_path: Path) -> None:
    async with running(None, admin_token="s3cret-admin") as (_, lobby):
        request = play_pb2.RegisterBotRequest(bot_id="anyone")
        await expect_error(lobby.play.RegisterBot(request), grpc.StatusCode.UNAUTHENTICATED)
        await expect_error(
            lobby.play.RegisterBot(request, metadata=(("authorization", "Bearer wrong"),)),
            grpc.StatusCode.UNAUTHENTICATED,
        )
        bot_id, _ = await lobby.register("allowed", admin="s3cret-admin")
        assert bot_id.startswith("allowed-")


async def test_matches_per_bot_limit(tmp_path: Path) -> None:
    async with running(None, max_matches_per_bot=2) as (_, lobby):
        bot_id, token = await lobby.register("busy")
        for _ in range(2):
            await lobby.create("block", [bot_seat(bot_id)] + [OPEN] * 3)
        create = lobby.matches.CreateMatch(
            match_pb2.CreateMatchRequest(preset="block", seats=[bot_seat(bot_id)] + [OPEN] * 3)
        )
        await expect_error(create, grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_MATCHES")
        other, _ = await lobby.create("block", [OPEN] * 4)
        join = lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=other.name),
            metadata=(("authorization", f"Bearer {token}"),),
        )
        await expect_error(join, grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_MATCHES")


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with server_process([], tmp_path / "logs") as server:
        port = server.address.rsplit(":", 1)[1]
        done = subprocess.run(
            [sys.executable, "-c", "from capicua.cli import main; main()", "serve", "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_unusable_data_directory_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from capicua.cli import main; main()",
            "serve",
            "--port",
            "0",
            "--data",
            str(blocker / "data"),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--data" in done.stderr and "cannot open the store" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("table", "column"),
    [("bots", "description"), ("revoked_tokens", "match_id"), ("live_matches", "seats_json")],
)
def test_a_store_with_other_tables_is_one_line(tmp_path: Path, table: str, column: str) -> None:
    """A store written by another version (here: a column renamed) stops the start with one
    line naming the store and the column, not a traceback from SQLite."""
    data = tmp_path / "data"
    Store(data).close()
    with sqlite3.connect(data / DB_NAME) as db:
        db.execute(f"ALTER TABLE {table} RENAME COLUMN {column} TO renamed")
    done = subprocess.run(
        [sys.executable, "-m", "capicua", "serve", "--port", "0", "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"capicua: error: --data {data}: cannot read the store (no such column: {column}): "
        "its tables are not the ones this version of capicua writes"
    ]


#: A server whose companion (the ladders' runner's place) will not stop: cancelled, it
#: swallows the cancellation and waits on ("swallow"), or blocks the event loop ("block").
_HUNG_SERVER = """
import asyncio, sys, time
from capicua.server.app import ServerConfig, configure_logging, serve

async def hung_companion(app):
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if sys.argv[1] == "block":
                time.sleep(3600)

configure_logging()
config = ServerConfig(port=0, cpu_workers=1, grace_s=0.1, stop_overrun_s=float(sys.argv[2]))
asyncio.run(serve(config, companion=hung_companion))
"""


@pytest.mark.parametrize("how", ["swallow", "block"])
def test_a_stop_that_hangs_is_bounded_and_says_what_hung(tmp_path: Path, how: str) -> None:
    """SIGTERM to a server a part of which never stops: the process still exits (status 1)
    once the stop overran its bound, and its log names the part, with its stack: from the
    event loop's tasks (``server_stop_overran``) if the loop runs, from every thread's
    stack (faulthandler) if the loop itself is blocked."""
    overrun = 0.5
    with subprocess.Popen(
        [sys.executable, "-c", _HUNG_SERVER, how, str(overrun)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"listening on ")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)  # the bound is 0.6 s (2 x that, blocked)
    assert proc.returncode == 1, err.decode()
    log = err.decode()
    overran = [json.loads(x) for x in log.splitlines() if '"server_stop_overran"' in x]
    if how == "swallow":
        (line,) = overran
        assert line["level"] == "error" and line["seconds"] == pytest.approx(0.6)
        assert any("in hung_companion" in task for task in line["tasks"]), line
    else:
        assert not overran  # the loop never ran again
        assert "Timeout (" in log and "in hung_companion" in log
    assert "server_stopped" not in log
