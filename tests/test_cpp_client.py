"""The C++ client (clients/cpp/): its CMake build generates the protocol's C++ with the
installed protoc and grpc_cpp_plugin and builds the example bot from Debian's packages alone;
the bot passes every row of ``capicua bot check``, plays on a real ``capicua serve`` (every
decision kind, two seats of one match, a seat token, the stream's endings, a server restart,
mutual TLS) and as a ``cmd:`` bot in a real arena; and buf.gen.yaml's C++ compiles.

Needs ``apt-get install g++ cmake pkg-config libgrpc++-dev libprotobuf-dev protobuf-compiler
protobuf-compiler-grpc`` (docs/writing-a-bot.md, "C++"; .ci/run installs them). Without them
the tests skip, and fail in CI. The bot is built once for the module (about 45 s of CPU
time, most of it the generated code: one to three minutes on a busy 2-core machine).
"""

from __future__ import annotations

import fcntl
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from capicua.common.channel import ClientTLS
from capicua.engine.records import Termination
from tests.compliance.client import Lobby, bot_seat, cpu_seat
from tests.examplebots import (
    ENDED,
    example_bot,
    plays_every_decision_kind,
    plays_in_an_arena,
    reconnects_when_the_server_comes_back,
    report,
    stops_as_the_lifecycle_table_says,
)
from tests.serverkit import ServerProcess, server_process
from tests.test_bot_check import assert_passes, bot_check
from tests.test_go_client import buf_generate
from tests.tlskit import make_certs
from tests.tooling import ROOT, missing_tool

CPP = ROOT / "clients" / "cpp"
APT = (
    "apt-get install g++ cmake pkg-config libgrpc++-dev libprotobuf-dev protobuf-compiler "
    "protobuf-compiler-grpc (docs/writing-a-bot.md, C++)"
)
BUILD_TIMEOUT_S = 900  # a cold build on a loaded 2-core machine: a few minutes at worst


def _need_cpp() -> None:
    for tool in ("g++", "cmake", "pkg-config", "protoc", "grpc_cpp_plugin"):
        if shutil.which(tool) is None:
            missing_tool(f"{tool} is not installed: {APT}")
    for library in ("grpc++", "protobuf"):
        if subprocess.run(["pkg-config", "--exists", library], check=False).returncode:
            missing_tool(f"pkg-config knows no {library}: {APT}")


def _run(args: list[str], what: str) -> None:
    done = subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"{what} failed:\n$ {' '.join(args)}\n{done.stdout}{done.stderr}"


@pytest.fixture(scope="module")
def randombot(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The example bot, built as docs/writing-a-bot.md says into a temporary build
    directory (the generated C++ included), once per test run: the xdist workers of a run
    share the directory, and the first to take its lock builds while the others wait for
    it, then find nothing left for CMake to do."""
    _need_cpp()
    run_temp = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        run_temp = run_temp.parent  # the run's temporary folder, above each worker's own
    build = run_temp / "cpp-bot"
    with (run_temp / "cpp-bot.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        _run(["cmake", "-S", str(CPP), "-B", str(build)], "cmake (configure)")
        _run(["cmake", "--build", str(build), "-j", "2"], "cmake --build")
    binary = build / "randombot"
    assert binary.is_file(), f"no {binary} after the build"
    # the generated code is in the build directory, never in the checkout
    assert (build / "gen" / "google" / "rpc" / "status.pb.h").is_file()
    return binary


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with server_process([], tmp_path_factory.mktemp("logs")) as launched:
        yield launched


def test_the_cpp_bot_passes_every_row_of_bot_check(randombot: Path) -> None:
    assert_passes(*bot_check("--", str(randombot)))


async def test_the_cpp_bot_plays_every_decision_kind_on_a_server(
    randombot: Path, server: ServerProcess
) -> None:
    await plays_every_decision_kind(randombot, server)


async def test_the_cpp_bot_stops_as_the_lifecycle_table_says(
    randombot: Path, server: ServerProcess
) -> None:
    await stops_as_the_lifecycle_table_says(randombot, server)


async def test_the_cpp_bot_reconnects_when_the_server_comes_back(
    randombot: Path, tmp_path: Path
) -> None:
    await reconnects_when_the_server_comes_back(randombot, tmp_path)


async def test_the_cpp_bot_plays_in_an_arena(randombot: Path, tmp_path: Path) -> None:
    await plays_in_an_arena(randombot, tmp_path)


async def test_the_cpp_bot_takes_its_tls_settings_from_the_environment(
    randombot: Path, tmp_path: Path
) -> None:
    """Mutual TLS: the CA and the client certificate come from $CAPICUA_TLS_CA,
    $CAPICUA_TLS_CERT and $CAPICUA_TLS_KEY, as every capicua client reads them."""
    certs = make_certs(tmp_path / "certs")
    tls = ["--tls-cert", str(certs.server_cert), "--tls-key", str(certs.server_key)]
    mine = ClientTLS(ca=certs.ca, cert=certs.client_cert, key=certs.client_key)
    env = {
        "CAPICUA_TLS_CA": str(certs.ca),
        "CAPICUA_TLS_CERT": str(certs.client_cert),
        "CAPICUA_TLS_KEY": str(certs.client_key),
    }
    with server_process([*tls, "--tls-client-ca", str(certs.ca)], tmp_path / "logs") as server:
        lobby = Lobby(server.address, mine)
        try:
            bot_id, token = await lobby.register("tls")
            seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
            match, host = await lobby.create("block", seats, overrides=["target=15"], seed=5)
            bot = example_bot(randombot, server.address, token, "--matches", "1", env=env)
            try:
                await bot.wait_for("connected to")
                await lobby.start(match.name, host)
                assert await bot.wait(60) == 0, report(bot)
            finally:
                bot.stop()
            replay = await lobby.replay(match.name)
        finally:
            await lobby.close()
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    assert ENDED.findall(bot.stderr) == [(match.name, "NORMAL")], report(bot)


async def test_the_cpp_bot_refuses_a_bad_setting_in_one_line(
    randombot: Path, server: ServerProcess, tmp_path: Path
) -> None:
    """A flag it does not know, a bad --matches, a CA file that is not there, a certificate
    without its key, no token: one line on stderr naming it, exit 2, no connection."""
    missing = tmp_path / "missing.pem"
    for token, args, said in [
        ("bot_x", ["--matches", "-1"], '--matches needs N >= 0, got "-1"'),
        ("bot_x", ["--no-such-flag"], "unknown option or missing value: --no-such-flag"),
        ("bot_x", ["extra"], "unexpected argument: extra"),
        ("bot_x", ["--tls-ca", str(missing)], f"--tls-ca {missing}: cannot read it"),
        ("bot_x", ["--tls-cert", str(missing)], "needs both --tls-cert and --tls-key"),
        ("", [], "no token: set CAPICUA_TOKEN"),
    ]:
        bot = example_bot(randombot, server.address, token, *args)
        try:
            assert await bot.wait(30) == 2, report(bot)
        finally:
            bot.stop()
        assert len(bot.err) == 1 and said in bot.err[0], report(bot)


async def test_sigterm_while_the_server_is_unreachable_exits_at_once(
    randombot: Path, tmp_path: Path
) -> None:
    """A bot that has never reached a server keeps trying (until 30 s) with backoff; SIGTERM
    then stops it cleanly, exit 0."""
    with server_process([], tmp_path / "logs") as gone:
        address = gone.address
    bot = example_bot(randombot, address, "bot_x")
    try:
        await bot.wait_for("reconnecting in")
        bot.proc.send_signal(signal.SIGTERM)
        assert await bot.wait(30) == 0, report(bot)
    finally:
        bot.stop()
    assert "stopped after 0 match(es)" in bot.stderr, report(bot)


def test_buf_generates_cpp_that_compiles(tmp_path: Path) -> None:
    """buf.gen.yaml's C++ (build/cpp) holds google/rpc/status.pb.h, which play.pb.h
    includes and no Debian package ships, and compiles against Debian's headers."""
    _need_cpp()
    buf_generate(tmp_path)
    cpp = tmp_path / "build" / "cpp"
    for stem in (p.stem for p in (ROOT / "proto" / "capicua" / "v1").glob("*.proto")):
        for suffix in (".pb.h", ".pb.cc", ".grpc.pb.h", ".grpc.pb.cc"):
            path = cpp / "capicua" / "v1" / f"{stem}{suffix}"
            assert path.is_file(), f"no {path.relative_to(cpp)} from buf generate"
    assert "class PlayService" in (cpp / "capicua" / "v1" / "play.grpc.pb.h").read_text()
    flags = subprocess.run(
        ["pkg-config", "--cflags", "grpc++", "protobuf"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    # play's messages and stubs include every other generated header, status.pb.h among them
    sources = ["capicua/v1/play.pb.cc", "capicua/v1/play.grpc.pb.cc", "google/rpc/status.pb.cc"]
    compiled = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", *flags, "-I", ".", *sources],
        cwd=cpp, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert compiled.returncode == 0, f"buf's C++ does not compile:\n{compiled.stderr[-3000:]}"
