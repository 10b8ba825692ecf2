"""The stdio bridge: a bot in any language that reads JSON lines and writes JSON lines.

``capicua bot stdio -- COMMAND [ARGS...]`` starts COMMAND once and, for each decision,
writes ONE JSON object on one line to its stdin and reads ONE line from its stdout::

    -> {"type": "decision", "match": "matches/ab12", "seat": 1, "turn_id": 7,
        "deadline": "2025-01-01T12:00:30Z", "time_left_ms": 29950,
        "legal_actions": [{"id": 0, "text": "3-6:L", "kind": "play", "tile": "3-6",
                           "end": "left"}, ...],
        "view": {...the View in protobuf's JSON mapping, .proto field names...}}
    <- {"action_id": 0}            (or {"action": "3-6:L"})

A request sent again after an illegal answer carries ``"previous_error"`` (the server's
reason). The child's stderr goes straight to ours (log there, never on stdout).

What goes wrong is reported on stderr, naming the request and quoting what the child
printed, and the seat is simply not answered, so the match's timeout policy applies
(AUTO_PLAY by default): a child that prints something else than an answer (garbage), one
that does not answer in time (killed: it hangs), one that exits (crashes). A dead child is
started again for the next request, at most ``max_restarts`` times; after that the bridge
gives up (exit code 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import signal
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from capicua.v1 import errors_pb2
from capicua.wire.views import legal_action_json, view_json

from .bot import Bot, ClientError, Decision, PlayError

log = logging.getLogger("capicua.client.stdio")

#: The longest line the child may print (longer is garbage).
LINE_LIMIT = 1 << 20
#: How long a request waits when there is no deadline and no --timeout-ms.
DEFAULT_TIMEOUT = 30.0
#: The least a child gets to answer, however close the deadline (it must not be killed for
#: a request that came in late).
MIN_TIMEOUT = 1.0
_EOF = object()


def _shown(text: str, limit: int = 200) -> str:
    text = text.rstrip("\n")
    return json.dumps(text if len(text) <= limit else text[:limit] + "...")


class StdioBot(Bot):
    """A bot played by a child process over JSON lines (see the module doc)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        timeout_ms: int | None = None,
        max_restarts: int = 3,
        cwd: str | None = None,
    ) -> None:
        if not command:
            raise ClientError("no command: give it after --, e.g. -- perl bot.pl")
        self.command = list(command)
        self.name = f"stdio:{os.path.basename(self.command[0])}"
        self.timeout = timeout_ms / 1000 if timeout_ms else None
        self.max_restarts = max_restarts
        self.cwd = cwd
        self.starts = 0
        self.proc: asyncio.subprocess.Process | None = None
        self._lines: asyncio.Queue[Any] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._errors: dict[tuple[str, int], str] = {}
        self._exchanges: set[asyncio.Future[int | None]] = set()

    @property
    def shown_command(self) -> str:
        return shlex.join(self.command)

    # -- the child ------------------------------------------------------------------------

    async def _child(self) -> asyncio.subprocess.Process:
        proc = self.proc
        if proc is not None and proc.returncode is None:
            return proc
        if self.starts > self.max_restarts:
            raise ClientError(
                f"the child `{self.shown_command}` failed {self.starts} times "
                f"(limit: {self.max_restarts} restarts); giving up"
            )
        if self.starts:
            log.warning(
                "restarting the child `%s` (restart %d of %d)",
                self.shown_command,
                self.starts,
                self.max_restarts,
            )
        self.starts += 1
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                limit=LINE_LIMIT,
                # Its own process group, so that killing it also kills what it started (a
                # `sh -c` wrapper, a `make` target, a language runtime's workers): a process
                # left behind would keep the pipes open and live on after the bridge.
                start_new_session=True,
            )
        except OSError as e:
            raise ClientError(f"cannot start `{self.shown_command}`: {e.strerror or e}") from None
        self.proc = proc
        self._lines = asyncio.Queue()
        self._reader = asyncio.create_task(self._read(proc, self._lines))
        return proc

    @staticmethod
    async def _read(proc: asyncio.subprocess.Process, lines: asyncio.Queue[Any]) -> None:
        assert proc.stdout is not None
        while True:
            try:
                raw = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                lines.put_nowait(ValueError(f"a line longer than {LINE_LIMIT} bytes"))
                with contextlib.suppress(Exception):
                    await proc.stdout.read(LINE_LIMIT)  # skip on
                continue
            if not raw:
                lines.put_nowait(_EOF)
                return
            lines.put_nowait(raw.decode("utf-8", "replace"))

    async def _exit_status(self, proc: asyncio.subprocess.Process) -> str:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 2)
        code = proc.returncode
        if code is None:
            return "closed its stdout"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by {signal.Signals(-code).name}"
        return f"exited with code {code}"

    async def _kill(self, proc: asyncio.subprocess.Process) -> None:
        """Kill the child and every process it started (its process group), and close its
        pipes, so that nothing of it outlives the bridge."""
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # the whole group is gone already
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 5)

    async def close(self) -> None:
        for exchange in list(self._exchanges):  # the session is over: nobody waits for them
            exchange.cancel()
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()  # a polite end: EOF on its stdin
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 2)
        await self._kill(proc)
        if self._reader is not None:
            self._reader.cancel()

    # -- decisions ------------------------------------------------------------------------

    def on_error(self, error: PlayError) -> None:
        illegal = error.error_reason == errors_pb2.ILLEGAL_ACTION
        if error.match and error.turn_id is not None and illegal:
            self._errors[(error.match, error.turn_id)] = error.message

    def request(self, decision: Decision) -> dict[str, Any]:
        """The JSON object sent to the child for ``decision``."""
        req = decision.request
        deadline = decision.deadline
        left = decision.time_left()
        out: dict[str, Any] = {
            "type": "decision",
            "match": req.match,
            "seat": req.seat,
            "turn_id": req.turn_id,
            "deadline": (
                datetime.fromtimestamp(deadline, UTC).isoformat(timespec="milliseconds")
                if deadline is not None
                else None
            ),
            "time_left_ms": round(left * 1000) if left is not None else None,
            "legal_actions": [legal_action_json(a) for a in req.legal_actions],
        }
        previous = self._errors.pop((req.match, req.turn_id), None)
        if previous is not None:
            out["previous_error"] = previous
        out["view"] = view_json(req.view)
        return out

    async def decide(self, decision: Decision) -> int | None:
        gone = asyncio.Event()  # set when the session no longer wants this answer
        exchange = asyncio.ensure_future(self._serialized(decision, gone))
        self._exchanges.add(exchange)
        exchange.add_done_callback(self._exchanges.discard)
        try:
            # The child answers every line it is sent, so a request already written must be
            # read to its end even if the session drops it: hence the shield.
            return await asyncio.shield(exchange)
        except asyncio.CancelledError:
            gone.set()
            raise

    async def _serialized(self, decision: Decision, gone: asyncio.Event) -> int | None:
        async with self._lock:
            if gone.is_set():
                return None  # dropped while waiting for the child: never sent
            return await self._exchange(decision)

    async def _exchange(self, decision: Decision) -> int | None:
        where = f"turn {decision.turn_id} of {decision.match} (seat {decision.seat})"
        skip = "not answering it (the match's timeout policy applies)"
        proc = await self._child()
        lines = self._lines
        while not lines.empty():  # said between requests: not an answer to anything
            stray = lines.get_nowait()
            if isinstance(stray, str):
                log.warning("the child printed %s between requests (ignored)", _shown(stray))
            else:
                lines.put_nowait(stray)
                break
        line = json.dumps(self.request(decision), separators=(",", ":")) + "\n"
        assert proc.stdin is not None
        try:
            proc.stdin.write(line.encode("utf-8"))
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            status = await self._exit_status(proc)
            log.error("the child %s before %s was sent; %s", status, where, skip)
            return None
        timeout = self.timeout
        if timeout is None:
            left = decision.time_left()
            timeout = DEFAULT_TIMEOUT if left is None else max(MIN_TIMEOUT, left)
        try:
            answer = await asyncio.wait_for(lines.get(), timeout)
        except TimeoutError:
            log.error(
                "the child did not answer %s within %.1f s; killing it (it hangs); %s",
                where,
                timeout,
                skip,
            )
            await self._kill(proc)
            return None
        if answer is _EOF:
            status = await self._exit_status(proc)
            log.error("the child %s while deciding %s; %s", status, where, skip)
            await self._kill(proc)
            return None
        if isinstance(answer, ValueError):
            log.error("the child printed %s for %s; %s", answer, where, skip)
            return None
        action_id, problem = self.parse(decision, answer)
        if problem:
            log.error("the child answered %s with %s: %s; %s", where, _shown(answer), problem, skip)
            return None
        return action_id

    @staticmethod
    def parse(decision: Decision, line: str) -> tuple[int | None, str]:
        """The action id of one answer line, or None and what is wrong with it."""
        expected = 'expected {"action_id": N} or {"action": "3-6:L"}'
        try:
            data = json.loads(line)
        except ValueError:
            return None, f"not JSON ({expected})"
        if not isinstance(data, dict):
            return None, f"not a JSON object ({expected})"
        if "action_id" in data:
            value = data["action_id"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return None, f"action_id must be a whole number >= 0, got {json.dumps(value)}"
            return value, ""
        if "action" in data:
            text = data["action"]
            if not isinstance(text, str):
                return None, f'action must be a string like "3-6:L", got {json.dumps(text)}'
            found = decision.id_of(text)
            if found is None:
                legal = ", ".join(str(a) for a in decision.legal_actions)
                return None, f"{text!r} is not one of the legal actions ({legal})"
            return found, ""
        return None, expected
