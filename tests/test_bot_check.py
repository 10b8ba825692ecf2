"""``capicua bot check``: the reference clients pass every row, and bots broken on purpose
(tests/bots/rawbot.py) fail the row that names what they do wrong, in its words.

Every check runs as a user runs it: the command line, a server of its own, the bot's
process behind the check's proxy, all over loopback sockets."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Set
from pathlib import Path
from typing import Any

import pytest

from capicua.client import launch_server
from capicua.client.lobby import SyncLobby
from capicua.v1 import play_pb2
from tests.test_go_client import GO_OFFLINE
from tests.test_go_client import _need_go as need_go
from tests.tooling import ROOT, missing_tool

RAWBOT = str(ROOT / "tests" / "bots" / "rawbot.py")
#: A whole check takes about 10 s; this bounds a check that goes wrong.
CHECK_TIMEOUT_S = 180.0


def bot_check(*args: str) -> tuple[int, dict[str, Any]]:
    """``capicua bot check --json ARGS``: its exit code and its JSON verdict."""
    proc = subprocess.run(
        [sys.executable, "-m", "capicua", "bot", "check", "--json", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT_S,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no verdict (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return proc.returncode, json.loads(lines[-1])


def rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in report["rows"]}


def assert_passes(code: int, report: dict[str, Any], skipped: Set[str] = frozenset()) -> None:
    """Every row passed (those in ``skipped`` were skipped), and the exit code says so."""
    wrong = {
        name: f"{r['status']}: {r['detail']}"
        for name, r in rows(report).items()
        if r["status"] != ("skipped" if name in skipped else "passed")
    }
    assert not wrong, wrong
    assert (code, report["passed"]) == (0, True)


def assert_fails(report: dict[str, Any], row: str, detail: str) -> None:
    """``row`` failed with a detail matching the regular expression ``detail``."""
    found = rows(report)[row]
    assert found["status"] == "failed" and found["passed"] is False, found
    assert re.fullmatch(detail, found["detail"]), found["detail"]


# -- the reference clients pass ------------------------------------------------------------


def test_the_python_sdk_passes_every_row() -> None:
    code, report = bot_check("--", sys.executable, "-m", "capicua", "bot", "builtin", "random")
    assert_passes(code, report)
    assert re.fullmatch(r"15 passed in [\d.]+ s", report["summary"])


def test_the_node_example_passes_every_row() -> None:
    if shutil.which("node") is None:
        missing_tool("node is not installed")
    if not (ROOT / "clients/node/node_modules").is_dir():
        missing_tool("clients/node/node_modules is missing (npm ci --prefix clients/node)")
    assert_passes(*bot_check("--", "node", "clients/node/examples/random_bot.js"))


def test_a_perl_bot_on_the_stdio_bridge_passes_every_row() -> None:
    if shutil.which("perl") is None:
        missing_tool("perl is not installed")
    bridge = [sys.executable, "-m", "capicua", "bot", "stdio", "--"]
    assert_passes(*bot_check("--", *bridge, "perl", "clients/stdio/random_bot.pl"))


def test_the_go_example_passes_every_row(tmp_path: Path) -> None:
    need_go()  # skips without Debian's Go (fails in CI), as tests/test_go_client.py does
    binary = tmp_path / "randombot"
    # go-offline.sh's own workspace, not a temporary one as test_go_client's fixture takes:
    # the build cache then knows it after the first build (seconds, not half a minute)
    built = subprocess.run(
        ["sh", str(GO_OFFLINE), "build", "-o", str(binary), "capicua.dev/go/examples/randombot"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, f"go build failed:\n{built.stdout}{built.stderr}"
    assert_passes(*bot_check("--", str(binary)))


def test_a_correct_raw_grpc_bot_passes_the_lifecycle_rows() -> None:
    # the broken bots below are this one with one rule broken: without it, it passes
    lifecycle = "illegal,stale,withdrawn-cancel,replaced,seat-token"
    assert_passes(*bot_check("--rows", lifecycle, "--", sys.executable, RAWBOT))


# -- broken bots fail the right row, saying why -----------------------------------------------


def test_a_bot_that_answers_withdrawn_turns_fails_withdrawn_cancel() -> None:
    code, report = bot_check(
        "--rows", "plays,withdrawn-cancel", "--", sys.executable, RAWBOT, "--answer-withdrawn"
    )
    assert (code, report["passed"]) == (1, False)
    assert rows(report)["plays"]["status"] == "passed"
    assert_fails(
        report,
        "withdrawn-cancel",
        r"answered turn \d+ of matches/\w+ after it was withdrawn \(the match ended\)",
    )


def test_a_bot_that_reconnects_after_stream_replaced_fails_replaced() -> None:
    broken = [sys.executable, RAWBOT, "--reconnect-always"]
    code, report = bot_check("--rows", "replaced", "--", *broken)
    assert code == 1
    assert_fails(
        report,
        "replaced",
        r"reconnected (once|\d+ times) in [\d.]+ s after its stream ended ABORTED / "
        r"STREAM_REPLACED \(another client holds the token: stop, never reconnect\)",
    )


def test_a_bot_that_reconnects_without_backoff_fails_killed() -> None:
    code, report = bot_check("--rows", "killed", "--", sys.executable, RAWBOT, "--no-backoff")
    assert code == 1
    assert_fails(
        report,
        "killed",
        r"reconnected \d+ times in 3 s while the server was down \(back off: 0\.1 s, doubling "
        r"up to 10 s\)",
    )


def test_a_bot_that_crashes_on_an_error_in_the_stream_fails_illegal_and_stale() -> None:
    code, report = bot_check(
        "--rows", "illegal,stale", "--", sys.executable, RAWBOT, "--crash-on-error"
    )
    assert code == 1
    assert_fails(report, "illegal", r"its process exited with code 3 after ILLEGAL_ACTION .*")
    assert_fails(report, "stale", r"its process exited with code 3 after STALE_TURN .*")


def test_a_bot_that_never_connects_fails_its_row_at_the_timeout() -> None:
    # the row's own line says that it gave up at --timeout (how long that took on this
    # machine is not the test's business: a loaded machine is slower)
    silent = [sys.executable, "-c", "import time; time.sleep(120)"]
    # 10 s, not less: the steps before the wait (the bot's process start, the match's
    # creation) must fit in it on a loaded machine, so that the row fails at the wait
    code, report = bot_check("--rows", "plays", "--timeout", "10", "--", *silent)
    assert code == 1
    assert_fails(
        report, "plays", r"did not finish in 10 s: waiting for the bot to connect to matches/\w+"
    )


def test_the_restart_rows_stop_the_server_while_a_request_is_open() -> None:
    # each row checks, from what its proxy recorded, that it made its situation: a request
    # sent and its answer held back when the server stops, withdrawn (server stopping) or
    # lost with the killed server, then asked again under a new turn_id after the restart
    code, report = bot_check("--rows", "stopping,killed", "--", sys.executable, RAWBOT)
    assert_passes(code, report)
    open_turn = r"turn (\d+) of matches/\w+ was open \(its answer held back\) when the server "
    stopping = re.match(
        open_turn + r"stopped: withdrawn \(server stopping\), asked again as turn (\d+) ",
        rows(report)["stopping"]["detail"],
    )
    killed = re.match(
        open_turn + r"was killed: asked again as turn (\d+) ", rows(report)["killed"]["detail"]
    )
    for found in (stopping, killed):
        assert found is not None, report
        assert int(found.group(2)) > int(found.group(1))


def test_a_bot_that_answers_a_turn_withdrawn_for_a_stop_fails_stopping() -> None:
    code, report = bot_check(
        "--rows", "stopping", "--", sys.executable, RAWBOT, "--answer-withdrawn"
    )
    assert code == 1
    assert_fails(
        report,
        "stopping",
        r"answered turn \d+ of matches/\w+ after it was withdrawn \(the server is stopping\)"
        r"( \(and \d+ more\))?",
    )


def test_a_bot_that_replays_its_answers_after_a_restart_fails_stopping_and_killed() -> None:
    code, report = bot_check(
        "--rows", "stopping,killed", "--", sys.executable, RAWBOT, "--replay-turns"
    )
    assert code == 1
    assert_fails(
        report,
        "stopping",
        r"answered turn \d+ of matches/\w+ on a new stream after it was withdrawn \(the server "
        r"is stopping\) on the old one: .*",
    )
    assert_fails(
        report,
        "killed",
        r"answered turn \d+ of matches/\w+ on a new stream, a turn asked on a stream that had "
        r"ended: .*",
    )


def test_a_bot_that_never_answers_a_redeal_offer_is_told_that_first() -> None:
    # when the server then plays its late seat at once, its answer half a second later to
    # the opening offered next (a DEFER, which the server never plays) is refused
    # STALE_TURN: the cause comes first all the same
    broken = [RAWBOT, "--ignore-redeal", "--defer", "--think", "0.5"]
    code, report = bot_check("--rows", "defer-redeal", "--", sys.executable, *broken)
    assert code == 1
    assert_fails(
        report,
        "defer-redeal",
        r"let turn 1 of matches/\w+ time out \(seat [02]\)( \(and \d+ more\))?",
    )


def test_a_bot_with_two_streams_on_its_token_is_told_they_replace_each_other() -> None:
    code, report = bot_check(
        "--rows", "plays,matches", "--timeout", "20", "--", sys.executable, RAWBOT, "--two-streams"
    )
    assert code == 1
    replaced = (
        r"its streams replaced each other: \d+ of them ended ABORTED / STREAM_REPLACED, the "
        r"first [\d.]+ s after it connected \(one stream per token: a second stream with the "
        r"same token ends the first\).*"
    )
    assert_fails(report, "matches", replaced)
    assert_fails(report, "plays", replaced)


# -- what the check keeps from the bot ----------------------------------------------------------


def test_a_hostile_bot_finds_no_secret_and_forges_nothing(tmp_path: Path) -> None:
    # the bot (each row's process) reads every process's environment and command line, the
    # check's files and its servers' token pipes, then tries every token-like string found:
    # RegisterBot and CreateMatch through the proxy, RegisterBot straight at the servers
    code, report = bot_check(
        "--rows", "plays,killed", "--", sys.executable, RAWBOT, "--snoop", str(tmp_path)
    )
    assert_passes(code, report)
    found = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert len(found) >= 2  # one per row (the killed row's bot is started once)
    for one in found:
        assert one["forged"] == []
        # it could look: it read the check's environment and its servers', and found them
        assert one["read_check"] and one["check_servers_read"] and one["server_addresses"]
        assert one["candidates"] >= 2  # its own token, none, and what it found (if any)
        assert one["refused_by_the_proxy"] == [
            f"PERMISSION_DENIED: capicua bot check: a bot under check may play and read, not "
            f"call {call} (the check's proxy forwards Play and the calls that change nothing)"
            for call in ("CreateMatch", "RegisterBot")
        ]


def test_logs_keeps_only_logs_with_something_in_them(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    code, report = bot_check(
        "--rows", "plays", "--logs", str(logs),
        "--", sys.executable, "-m", "capicua", "bot", "builtin", "random",
    )  # fmt: skip
    assert_passes(code, report)
    kept = {p.name: p.stat().st_size for p in logs.iterdir()}
    assert "plays.log" in kept  # the SDK says what it does on stderr
    assert all(kept.values()), kept


# -- a remote bot ------------------------------------------------------------------------------


def test_a_remote_bot_runs_the_rows_that_need_no_proxy() -> None:
    with launch_server(["--cpu-workers", "1", "--log-level", "warning"]) as server:
        with SyncLobby(server.address) as lobby:
            registered = lobby.register_bot(
                play_pb2.RegisterBotRequest(bot_id="checked-remotely", reservable_by=["*"])
            )
        env = dict(os.environ, CAPICUA_SERVER=server.address, CAPICUA_TOKEN=registered.token)
        bot = subprocess.Popen(
            [sys.executable, "-m", "capicua", "bot", "builtin", "random", "--log-level", "error"],
            env=env,
        )
        try:
            # letting anyone reserve it is not letting anyone deal its hand: the rows that
            # need a chosen deal cannot be set up until it accepts chosen seeds
            refused = subprocess.run(
                [sys.executable, "-m", "capicua", "bot", "check", "--remote", "checked-remotely",
                 "--server", server.address, "--rows", "defer-redeal"],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert refused.returncode == 2, refused.stderr
            assert "'*' --accept-chosen-seeds" in refused.stderr
            with SyncLobby(server.address) as lobby:
                lobby.set_bot_access(
                    play_pb2.SetBotAccessRequest(reservable_by=["*"], accept_chosen_seeds=True),
                    token=registered.token,
                )
            code, report = bot_check(
                "--remote", "checked-remotely", "--server", server.address,
                "--rows", "plays,defer-redeal,draw,seats,matches,illegal,replaced",
            )  # fmt: skip
        finally:
            bot.terminate()
            bot.wait(30)
    assert_passes(code, report, skipped={"illegal", "replaced"})
    skipped = rows(report)["illegal"]
    assert skipped["passed"] is None
    assert skipped["detail"] == "skipped: needs a local bot (-- COMMAND)"


# -- usage -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--", "no-such-bot-program"], "the bot's command: cannot find 'no-such-bot-program'"),
        (["--rows", "plays,nope", "--", "perl", "x.pl"], "--rows: no row 'nope'; the rows are"),
        ([], "give the bot's command after --, or --remote BOT_ID --server ADDR"),
        (["--remote", "x"], "--remote needs --server HOST:PORT"),
    ],
)
def test_bad_usage_is_one_line_and_exit_code_2(args: list[str], said: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "capicua", "bot", "check", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("capicua: error: "), proc.stderr
    assert said in lines[0]
