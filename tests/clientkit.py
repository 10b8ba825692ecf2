"""Helpers for the client tests: ``capicua`` subprocesses with their output collected, and
small bots that ``capicua bot run tests.clientkit:NAME`` can load (the servers come from
tests/serverkit.py)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capicua.client import Backoff, Bot, Decision, current_decision
from capicua.engine.actions import Action
from capicua.engine.game import Game
from capicua.engine.observation import Observation, observe
from capicua.engine.records import Play, Replay
from capicua.engine.rules import load_preset
from capicua.v1 import play_pb2
from capicua.wire import codec
from capicua.wire import views as wire

# the tests' one polling helper is the compliance kit's (the kit runs on its own)
from tests.compliance.client import until as until
from tests.tooling import default_sigint

REPO = Path(__file__).resolve().parent.parent


def capicua_args(*args: str) -> list[str]:
    return [sys.executable, "-c", "from capicua.cli import main; main()", *args]


class Proc:
    """A subprocess whose stdout and stderr lines are collected by threads as they come.
    ``stdin``: all of its input, then the end of it; ``hold_stdin``: a pipe left open,
    written with :meth:`send` (a person who has not typed yet)."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        hold_stdin: bool = False,
        cwd: Path = REPO,
    ) -> None:
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.args = list(args)
        piped = stdin is not None or hold_stdin
        with default_sigint():  # Ctrl-C (a test's SIGINT) reaches it as in a terminal
            self.proc = subprocess.Popen(
                self.args,
                cwd=cwd,
                env=full_env,
                stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        self.out: list[str] = []
        self.err: list[str] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for t in self._threads:
            t.start()
        if stdin is not None:
            assert self.proc.stdin is not None
            threading.Thread(target=self._feed, args=(stdin,), daemon=True).start()

    def _feed(self, text: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(text)
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    def send(self, text: str) -> None:
        """Type ``text`` (a ``hold_stdin`` process)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    @staticmethod
    def _pump(stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    @property
    def stdout(self) -> str:
        return "\n".join(self.out)

    @property
    def stderr(self) -> str:
        return "\n".join(self.err)

    def report(self) -> str:
        return f"$ {' '.join(self.args[3:])}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"

    async def wait_for(self, pattern: str, *, stream: str = "err", timeout: float = 30.0) -> str:
        """The first line of ``stream`` (out/err) matching ``pattern`` (a regex)."""
        lines = self.err if stream == "err" else self.out
        regex = re.compile(pattern)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in list(lines):
                if regex.search(line):
                    return line
            if self.proc.poll() is not None:
                await asyncio.to_thread(self._drained, 10)  # every line read, one last look
                for line in list(lines):
                    if regex.search(line):
                        return line
                raise AssertionError(f"exited before printing {pattern!r}\n{self.report()}")
            await asyncio.sleep(0.02)
        raise AssertionError(f"no {pattern!r} within {timeout}s\n{self.report()}")

    def _drained(self, timeout: float) -> None:
        """Once the process has exited: until its pumps read the end of both streams."""
        for t in self._threads:
            t.join(timeout)

    async def wait(self, timeout: float = 60.0) -> int:
        try:
            code = await asyncio.wait_for(asyncio.to_thread(self.proc.wait), timeout)
        except TimeoutError:
            self.kill()
            raise AssertionError(f"did not exit within {timeout}s\n{self.report()}") from None
        await asyncio.to_thread(self._drained, 10)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not go."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def bot_cmd(kind: str, address: str, token: str, *args: str) -> list[str]:
    """``capicua bot KIND --server ADDRESS --token TOKEN ARGS...``."""
    return capicua_args("bot", kind, "--server", address, "--token", token, *args)


def plays_of(replay: Replay, seat: int) -> list[str]:
    """The plays of ``seat`` in a replay, as action texts (``3-6:L``), in order."""
    return [
        f"{e.tile}:{e.end.letter}"
        for h in replay.hands
        for e in h.events
        if isinstance(e, Play) and e.seat == seat
    ]


@dataclass(frozen=True)
class CountingBackoff(Backoff):
    """A session's backoff that notes each delay it gives (one per retry, asked just before
    the session waits it out), so that a test waits for retries rather than for time."""

    given: list[float] = field(default_factory=list)

    def delay(self, attempt: int) -> float:
        delay = super().delay(attempt)
        self.given.append(delay)
        return delay

    def waited(self) -> float:
        """Seconds the session has waited out between attempts: every delay it was given
        but the last, which it may still be waiting."""
        return sum(self.given[:-1])


def sample_decision() -> Decision:
    """The first decision of a cuban match, as the SDK receives it."""
    rules = load_preset("cuban")
    state = Game(rules).new_match(3)
    seat = state.current_seat
    assert seat is not None
    builder = wire.ViewBuilder(codec.ruleset_to_proto(rules), ["a", "b", "c", "d"])
    request = play_pb2.DecisionRequest(
        match="matches/m1",
        seat=seat,
        turn_id=4,
        view=builder.view(observe(state, seat)),
        legal_actions=wire.legal_actions(state.legal()),
    )
    request.deadline.FromSeconds(2_000_000_000)
    return Decision(request)


# -- bots that subprocesses load by name ----------------------------------------------------


class RecordingBot(Bot):
    """Plays the last legal action and prints ``answer MATCH TURN ACTION`` on stdout for
    each one. With $CLIENTKIT_HANG_AT=N it prints ``hang MATCH TURN`` on its Nth decision
    and never answers it (the test then kills the process)."""

    def __init__(self) -> None:
        self.count = 0
        self.hang_at = int(os.environ.get("CLIENTKIT_HANG_AT", "0"))

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        decision = current_decision()
        assert decision is not None
        self.count += 1
        if self.count == self.hang_at:
            print(f"hang {decision.match} {decision.turn_id}", flush=True)
            threading.Event().wait()  # never returns
        action = legal_actions[-1]
        print(f"answer {decision.match} {decision.turn_id} {action}", flush=True)
        return action
