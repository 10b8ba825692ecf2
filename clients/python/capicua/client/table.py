"""A person at the table in one command: what ``capicua play --human SEATS`` runs.

:func:`play_table` starts an embedded server (a temporary store and an admin token of its
own), creates one private match in which the people's seats are open and every other seat
is a CPU of the server, and takes the people's seats: the first is played here by
:class:`~capicua.client.human.HumanBot`; for each other one it prints the command that plays
it from another terminal (``capicua bot human`` with that seat's token). The match starts
once every person is connected; the command ends with the match, and the server with it.
Ctrl-C at any moment stops all of it (a prompt ends its line first).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capicua.common import interrupt
from capicua.v1 import match_pb2, replay_pb2
from capicua.wire.codec import CPU_LEVELS

from .human import HumanBot
from .launch import Launched, LaunchError, launch_server, new_admin_token
from .lobby import Lobby, LobbyError
from .session import ClientError, Session

#: A seat of :attr:`Table.seats` that a person plays; any other entry is a CPU level.
HUMAN = "human"
#: What the other seats see of a person at the table.
PERSON = "person"


@dataclass(frozen=True)
class Table:
    """One match with people at it: a preset and its overrides, who sits where (:data:`HUMAN`
    or a CPU level, per seat), the seed (None: the server deals), each person's time per
    decision (then the server plays it for them) and the person's seat played here."""

    preset: str
    overrides: tuple[str, ...]
    seats: tuple[str, ...]
    seed: int | None
    timer_ms: int
    here: int

    @property
    def humans(self) -> list[int]:
        """The people's seats, this terminal's first."""
        others = [s for s, kind in enumerate(self.seats) if kind == HUMAN and s != self.here]
        return [self.here, *others]

    def request(self) -> match_pb2.CreateMatchRequest:
        """The match: private, a person's turn played by the server when its time is up."""
        specs = [
            match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN)
            if kind == HUMAN
            else match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_CPU, cpu_level=CPU_LEVELS[kind])
            for kind in self.seats
        ]
        settings = match_pb2.MatchSettings(
            turn_timer_ms=self.timer_ms,
            on_timeout=match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
            visibility=match_pb2.VISIBILITY_PRIVATE,
        )
        request = match_pb2.CreateMatchRequest(
            preset=self.preset, overrides=list(self.overrides), seats=specs, settings=settings
        )
        if self.seed is not None:
            request.seed = self.seed
        return request


def play_table(
    table: Table, human: HumanBot, say: Callable[[str], None]
) -> replay_pb2.Replay | None:
    """Play ``table`` to its end; its replay (None if it did not end). Raises
    :class:`~capicua.common.interrupt.Interrupted` on Ctrl-C (the caller says what a rerun
    does), :class:`ClientError` when the server cannot start or refuses the match."""
    run = _Run(table, human, say)
    interrupted = asyncio.run(run.main())
    if interrupted:
        raise interrupt.Interrupted()
    return run.replay


class _Run:
    """One ``play --human``: the server, the match, this terminal's session."""

    def __init__(self, table: Table, human: HumanBot, say: Callable[[str], None]) -> None:
        self.table = table
        self.human = human
        self.say = say
        self.stop = asyncio.Event()
        self.session: Session | None = None
        self.replay: replay_pb2.Replay | None = None

    def _on_signal(self, signum: int) -> None:
        self.stop.set()
        if self.session is not None:
            self.session.stop()

    async def main(self) -> bool:
        """Play the match; whether a signal stopped it."""
        with interrupt.signals(self._on_signal), tempfile.TemporaryDirectory() as tmp:
            admin = new_admin_token()
            server = await self._launch(admin, Path(tmp) / "server.log")
            try:
                if not self.stop.is_set():
                    async with Lobby(server.address, token=admin) as lobby:
                        await self._play(lobby, server.address)
            finally:
                await server.aclose(grace=5.0)
        return self.stop.is_set()

    async def _launch(self, admin: str, log: Path) -> Launched:
        """The embedded server (a Ctrl-C meanwhile lets it come up, then stops it)."""
        args = ["--cpu-workers", "1", "--log-level", "warning"]
        try:
            return await asyncio.to_thread(launch_server, args, admin_token=admin, log=log)
        except LaunchError as e:
            raise ClientError(f"the embedded server did not start: {e}") from None

    async def _play(self, lobby: Lobby, address: str) -> None:
        try:
            created = await lobby.create_match(self.table.request())
            name = created.match.name
            tokens = [await self._join(lobby, name, seat) for seat in self.table.humans]
        except LobbyError as e:
            raise ClientError(f"the server refused the match: {e}") from None
        self._introduce(address, tokens)
        self.session = Session(self.human, server=address, token=tokens[0], tls=False)
        playing = asyncio.ensure_future(self.session.run())
        try:
            if await self._all_connected(lobby, name, playing):
                await lobby.start_match(name, token=created.host_token)
            await asyncio.wait({playing})
            playing.result()  # the session's own error, if it had one
            if not self.stop.is_set():
                self.replay = (await lobby.get_replay(name)).replay
        finally:
            self.session.stop()
            with contextlib.suppress(asyncio.CancelledError):
                await playing

    async def _join(self, lobby: Lobby, name: str, seat: int) -> str:
        """A person's seat token (the seed, if chosen, is this person's own choice)."""
        request = match_pb2.JoinMatchRequest(
            name=name, seat=seat, display_name=PERSON, accept_chosen_seed=True
        )
        return (await lobby.join_match(request, token="")).seat_token

    def _introduce(self, address: str, tokens: list[str]) -> None:
        """Who sits where; for each other person, the command to run in another terminal."""
        t = self.table
        cpus = ", ".join(f"seat {s} {k}" for s, k in enumerate(t.seats) if k != HUMAN)
        self.say(
            f"{t.preset} on an embedded server at {address}: you are seat {t.humans[0]}"
            + (f"; CPUs: {cpus}" if cpus else "")
        )
        for seat, token in zip(t.humans[1:], tokens[1:], strict=True):
            self.say(
                f"seat {seat} is another person's: in another terminal, run\n"
                f"  capicua bot human --server {address} --token {token}"
            )

    async def _all_connected(self, lobby: Lobby, name: str, playing: asyncio.Future[Any]) -> bool:
        """Wait until every person's seat is connected (the server says so as it changes);
        False if stopped, or if this terminal's session ended first."""
        others = self.table.humans[1:]
        if others:
            self.say(f"waiting for seat {', '.join(map(str, others))} to connect")
        updates = lobby.watch_match(name, match_updates=True)
        stopped = asyncio.ensure_future(self.stop.wait())
        try:
            while True:
                step = asyncio.ensure_future(anext(updates))
                waits: set[asyncio.Future[Any]] = {step, stopped, playing}
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    step.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await step
                    return False
                try:
                    message = step.result()
                except StopAsyncIteration:  # the match is over (cancelled) before it began
                    return False
                if message.HasField("match") and all(
                    message.match.seats[seat].connected for seat in self.table.humans
                ):
                    return True
        finally:
            stopped.cancel()
            await updates.aclose()
