"""``capicua ladder demo``: a standing ladder on a server of its own, with a live page.

It is ``capicua serve --ladder FILE --http PORT`` with a ladder of the four built-in bots
(the ladder's own entries: its anchors), and, once the server listens, the example bots
that join it over the protocol like any remote bot: the Python SDK's (``capicua bot builtin
easy --ladder ...``), the Node example (when node and clients/node's packages are there) and
the Go example (when Debian's Go gRPC packages are there: built first, a few seconds). Each
registers, joins as ``v1`` and plays until the demo stops (Ctrl-C).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
import grpc

from capicua.arena.cli import node_example as find_node_example
from capicua.arena.ladder.cli import ladder
from capicua.client import Lobby, LobbyError
from capicua.common import interrupt
from capicua.server.app import App, ServerConfig, configure_logging, serve
from capicua.v1 import errors_pb2, play_pb2

from .serve import ladder_runner, read_ladders

#: The demo's ladder: the built-in bots on iq-1v1, matches to 50 points.
DEMO_LADDER = """\
# capicua ladder demo: the built-in bots are the ladder's own entries; example bots join it
name = "demo ladder"
preset = "iq-1v1"
overrides = ["target=50"]
on_timeout = "forfeit"

[matches]
seed = 1
concurrency = 3
time_limit_ms = 3000

[entries]
random = "builtin:random"
easy = "builtin:easy"
medium = "builtin:medium"
hard = "builtin:hard"
"""
LADDER = "ladders/demo-ladder"
BOT_EXISTS = errors_pb2.ErrorReason.Name(errors_pb2.BOT_EXISTS)
ROOT = Path(__file__).resolve().parents[3]  # a source checkout's top (the examples)
GO_GRPC = Path("/usr/share/gocode/src/google.golang.org/grpc")


@dataclass(frozen=True)
class Example:
    """An example bot the demo starts: its name on the server and its command (the
    server's address and the bot's token come in its environment)."""

    name: str
    argv: tuple[str, ...]


def python_example() -> Example:
    join = ("--ladder", LADDER, "--version", "v1")
    bot = (sys.executable, "-m", "capicua", "bot", "builtin", "easy")
    return Example("python-easy", (*bot, *join))


def node_example() -> Example | None:
    """The Node example, where node and its packages are there (the arena demo's check)."""
    example = find_node_example()
    if example is None:
        return None
    return Example("node-random", ("node", str(example), "--ladder", LADDER, "--version", "v1"))


async def go_example(build_dir: Path) -> Example | None:
    """The Go example, built (offline, over Debian's packages) into ``build_dir``."""
    script = ROOT / "clients" / "go" / "go-offline.sh"
    if shutil.which("go") is None or not script.is_file() or not GO_GRPC.is_dir():
        return None
    binary = build_dir / "randombot"
    build = await asyncio.create_subprocess_exec(
        str(script), "build", "-o", str(binary), "capicua.dev/go/examples/randombot",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    if await build.wait() != 0:
        return None
    return Example("go-random", (str(binary), "-ladder", LADDER, "-version", "v1"))


def examples_note(found: Sequence[str]) -> str:
    return ", ".join(found) if found else "none"


@contextlib.asynccontextmanager
async def example_bots(address: str, work: Path) -> AsyncIterator[list[str]]:
    """Register the example bots on the server at ``address``, start each (it joins the
    demo ladder and plays); yields their names; stops them at the end."""
    found = [python_example(), node_example(), await go_example(work)]
    examples = [e for e in found if e is not None]
    procs: list[asyncio.subprocess.Process] = []
    async with Lobby(address) as lobby:
        for example in examples:
            reply = await _register(lobby, example.name)
            env = {**os.environ, "CAPICUA_SERVER": address, "CAPICUA_TOKEN": reply.token}
            log = open(work / f"{example.name}.log", "wb")  # noqa: SIM115 - the process's
            with log:
                procs.append(
                    await asyncio.create_subprocess_exec(
                        *example.argv,
                        env=env,
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                    )  # fmt: skip
                )
    try:
        yield [e.name for e in examples]
    finally:
        for proc in procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
        for proc in procs:
            with contextlib.suppress(asyncio.CancelledError):
                await proc.wait()


async def _register(lobby: Lobby, name: str) -> play_pb2.RegisterBotResponse:
    """The example bot registered as ``name``, or ``name-2``... when a demo before on the
    same --data has it (its token is not kept: a new bot, a new entry)."""
    for n in range(1, 100):
        bot_id = name if n == 1 else f"{name}-{n}"
        try:
            return await lobby.register_bot(play_pb2.RegisterBotRequest(bot_id=bot_id))
        except LobbyError as e:
            if e.reason != BOT_EXISTS:
                raise
    raise LobbyError(grpc.StatusCode.ALREADY_EXISTS, f"{name}: too many demos", BOT_EXISTS)


def demo_file(directory: Path) -> Path:
    file = directory / "demo-ladder.toml"
    file.write_text(DEMO_LADDER)
    return file


def temporary_data() -> Path:
    return Path(tempfile.mkdtemp(prefix="capicua-ladder-demo-"))


def say(text: str) -> None:
    click.echo(text, err=True)


@click.command("demo")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path),
              help="The server's store (default: a temporary one, removed at exit); the same "
              "--data continues the demo ladder where it stopped.")  # fmt: skip
@click.option("--http", "http_port", type=click.IntRange(0, 65535), default=8080,
              show_default=True, metavar="PORT",
              help="The leaderboard's port (0: a free one).")  # fmt: skip
@click.option("--http-host", default="127.0.0.1", show_default=True, metavar="HOST",
              help="The address the leaderboard listens on.")  # fmt: skip
def demo_cmd(data: Path | None, http_port: int, http_host: str) -> None:
    """A standing ladder on a server of its own, its live leaderboard in the browser: the
    built-in bots are its anchors, and the example bots (Python; Node and Go where they
    can run) join it over the protocol. Prints the leaderboard's URL; runs until Ctrl-C."""
    interrupt.rerun(
        "the same command starts the demo again"
        + (f" (--data {data} keeps its results)" if data else " (its results were temporary)")
    )
    with tempfile.TemporaryDirectory(prefix="capicua-ladder-demo-") as tmp:
        work = Path(tmp)
        ladders = read_ladders((demo_file(work),))
        configure_logging("warning")
        config = ServerConfig(
            port=0, data=data, cpu_workers=1, ladders=tuple(d for d, _ in ladders)
        )

        def show(url: str) -> None:
            say(f"leaderboard: {url}ladders/demo-ladder/  (open it in a browser; Ctrl-C stops)")

        runner = ladder_runner(ladders, (http_host, http_port), on_url=show)

        async def companion(app: App) -> None:
            say(f"capicua ladder demo: a server on {app.address}, its store in {app.data}")
            async with example_bots(app.address, work) as names:
                say(f"example bots joining {LADDER}: {examples_note(names)}")
                await runner(app)

        if asyncio.run(serve(config, out=sys.stderr, companion=companion)) == signal.SIGINT:
            raise interrupt.Interrupted()


ladder.add_command(demo_cmd)
