"""Watching a match of a server's ladder live in the browser: only the last match of a set
(the listed one: the earlier ones deal its tiles), its public events streamed as they come
(WatchMatch, as any spectator reads them), at phone and desktop widths."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from capicua.client import run as run_bot
from capicua.client.lobby import SyncLobby
from capicua.v1 import match_pb2
from tests.compliance.client import Lobby
from tests.ladderkit import LADDER_FILE, Counting
from tests.serverkit import server_process
from tests.test_arena_report import DESKTOP, PHONE, overflow
from tests.test_ladder_web import opened

LADDER = "ladders/club-ladder"


class HoldsAListedMatch(Counting):
    """Plays, but holds its second decision of the first listed (public) match it plays,
    until ``release``: that match stays live, with an event or more already played."""

    def __init__(self, bot_id: str, address: str) -> None:
        super().__init__(bot_id)
        self.lobby = SyncLobby(address)
        self.release = threading.Event()
        self.holding = threading.Event()  # set once it holds a listed match's decision
        self.held: str | None = None
        self.decisions: dict[str, int] = {}
        self.current = ""

    def on_match_started(self, match: str, seat: int, observation: Any) -> None:
        super().on_match_started(match, seat, observation)
        self.current = match

    def choose(self, observation: Any, legal_actions: Sequence[Any]) -> Any:
        match = self.current
        self.decisions[match] = self.decisions.get(match, 0) + 1
        if self.held is None and self.decisions[match] == 2:
            listed = self.lobby.get_match(match).settings.visibility
            if listed == match_pb2.VISIBILITY_PUBLIC:
                self.held = match
                self.holding.set()
                self.release.wait(120)
        return legal_actions[0]


def test_the_last_match_of_a_set_is_watched_live(tmp_path: Path, browser: Any) -> None:
    file = tmp_path / "club.toml"
    file.write_text(LADDER_FILE.replace("time_limit_ms = 5000", "time_limit_ms = 600000"))
    args = ["--data", str(tmp_path / "data"), "--ladder", str(file), "--http", "0"]
    with server_process(args, tmp_path / "logs") as srv:
        assert srv.launched.process.stdout is not None
        said = srv.launched.process.stdout.readline().decode()
        url = said.split("leaderboard on ")[1].strip()
        # (the browser's driver holds this thread's event loop: our own runs in another)
        with ThreadPoolExecutor(1) as other:
            bot_id, token = other.submit(asyncio.run, _joined(srv.address)).result()
        bot = HoldsAListedMatch(bot_id, srv.address)
        loop = asyncio.new_event_loop()  # the bot's, in a thread of its own
        playing = loop.create_task(run_bot(bot, server=srv.address, token=token))
        runner = threading.Thread(target=_until_cancelled, args=(loop, playing), daemon=True)
        runner.start()
        try:
            assert bot.holding.wait(120), "no listed match held live"
            watch = _watch_url(url)
            assert watch is not None, "the held match is not offered to watch"
            lines = _first_lines(f"{url}ladders/club-ladder/{watch}")
            assert any("hand 1:" in line for line in lines), lines
            _in_browser(browser, f"{url}ladders/club-ladder/{watch}")
            missing = httpx.get(f"{url}ladders/club-ladder/watch/L999999-r0", timeout=30)
            assert missing.status_code == 404 and "only the last match of a set" in missing.text
        finally:
            bot.release.set()
            loop.call_soon_threadsafe(playing.cancel)
            runner.join(60)
            loop.close()
            bot.lobby.close()


def _until_cancelled(loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)


async def _joined(address: str) -> tuple[str, str]:
    lobby = Lobby(address)
    try:
        bot_id, token = await lobby.register("watched")
        await lobby.join_ladder(LADDER, "v1", token=token)
        return bot_id, token
    finally:
        await lobby.close()


def _watch_url(base: str) -> str | None:
    live = httpx.get(f"{base}api/ladders/club-ladder", timeout=30).json()["live"]
    urls = [m["watch"] for m in live if m["watch"]]
    return urls[0] if urls else None


def _first_lines(page: str) -> list[str]:
    """The event stream's first ``line`` events (what it had played before it was held)."""
    lines: list[str] = []
    with httpx.stream("GET", f"{page}/events", timeout=60) as answer:
        assert answer.status_code == 200
        for text in answer.iter_lines():
            if text.startswith("data: <li>"):
                lines.append(text.removeprefix("data: "))
                if "hand 1:" in text:
                    return lines
    return lines


def _in_browser(browser: Any, page: str) -> None:
    for viewport in (PHONE, DESKTOP):
        with opened(browser, page, viewport) as (pg, errors):
            pg.locator("#watch-log li").first.wait_for()  # the events came over SSE
            assert overflow(pg) <= 0
            assert errors == [], errors
