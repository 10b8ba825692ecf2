"""A seat played from the terminal: ``capicua bot human --token SEAT_TOKEN``, and the seat
of ``capicua play --human`` (:mod:`capicua.client.table`).

Shows the table when it is your turn (your hand, the chain with both ends, every seat's tile
count, the stock, the scores, this hand's events, the legal moves numbered) and reads your
move: its number, or its text (``3-6:L``; a bare ``3-6`` when the tile fits only one end).
Every move is printed as it comes, those before your first turn included; a play of yours
that you did not choose says why it was made for you (your only move, or time ran out).
Hand results and the final result too. Works with a seat token (``capicua match join ID``
prints one) or a bot token.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from capicua.engine.actions import Action, ActionKind
from capicua.engine.display import event_text, outcome_text, result_text, scores_text, side_name
from capicua.engine.observation import Observation
from capicua.engine.records import Event, HandResult, Outcome, Play
from capicua.engine.rules import Ruleset, Sides, Stock

from .bot import SUPERSEDED, Bot, ClientError, Decision, PlayError

#: What running ``capicua bot human`` again after a Ctrl-C does.
RERUN = (
    "your seat waits for you until its turn's deadline (then the match's timeout policy "
    "plays it): the same command takes it back"
)

_KIND_WORDS = {
    ActionKind.DEFER: "pass the opening to your partner",
    ActionKind.REDEAL: "ask for a new deal",
    ActionKind.KEEP: "keep these tiles",
}


class LineInput:
    """Lines of a text stream, read by a daemon thread, awaited one at a time (a prompt
    dropped because the server moved on consumes nothing)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._queue: asyncio.Queue[str | None] | None = None

    def _start(self) -> asyncio.Queue[str | None]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        def pump() -> None:
            for line in self.stream:
                loop.call_soon_threadsafe(queue.put_nowait, line)
            loop.call_soon_threadsafe(queue.put_nowait, None)

        threading.Thread(target=pump, name="capicua-stdin", daemon=True).start()
        return queue

    async def readline(self) -> str | None:
        """The next line without its newline; None at the end of the input."""
        if self._queue is None:
            self._queue = self._start()
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)  # stays at the end
            return None
        return line.rstrip("\r\n")


def chain_text(observation: Observation) -> str:
    """The chain left to right, ``[6|6][6|3]``, the first double played marked ``*``."""
    if not observation.chain:
        return "(empty: you open)" if observation.to_act == observation.seat else "(empty)"
    return "".join(f"[{p.left}|{p.right}]" + ("*" if p.spinner else "") for p in observation.chain)


def move_text(action: Action) -> str:
    if action.kind is ActionKind.PLAY:
        assert action.end is not None
        return f"play {action.tile} on the {action.end.name.lower()}"
    return _KIND_WORDS.get(action.kind, action.kind.value)


def _who(rules: Ruleset, seat: int, me: int | None, players: Sequence[str]) -> str:
    name = players[seat] if seat < len(players) and players[seat] else f"seat {seat}"
    if seat == me:
        return f"seat {seat} (you)"
    if me is not None and rules.sides is Sides.TEAMS and rules.side_of(seat) == rules.side_of(me):
        return f"seat {seat} {name} (partner)"
    return f"seat {seat} {name}"


class HumanBot(Bot):
    """A person at the terminal (see the module doc)."""

    name = "human"

    def __init__(self, console: Console | None = None, stdin: TextIO | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.input = LineInput(stdin or sys.stdin)
        self._prompt = asyncio.Lock()
        self._prompting = False  # a prompt is on screen, waiting for a line
        self.rules: dict[str, Ruleset] = {}
        # per match: the move you chose last, until its play is shown; and whether the
        # server played your turn when its time ran out (how your next play is told)
        self._chosen: dict[str, str] = {}
        self._timed_out: set[str] = set()

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    # -- what happens -----------------------------------------------------------------

    async def on_match_started(self, match: str, seat: int, observation: Observation) -> None:
        rules = observation.ruleset
        self.rules[match] = rules
        side = f" ({side_name(rules, rules.side_of(seat))})" if rules.sides is Sides.TEAMS else ""
        self.say(
            f"{match}: {rules.name} ({rules.summary}); you are seat {seat}{side}; "
            f"target {rules.target}",
            "bold",
        )
        # what was played before this seat was first asked (an opening forced by the rules,
        # plays with one legal move): every move is shown
        await self.on_events(match, seat, observation.events)
        self.say(f"your tiles: {' '.join(str(t) for t in observation.tiles)}")

    async def on_events(self, match: str, seat: int, events: Sequence[Event]) -> None:
        for event in events:
            self.say(f"  {self.event_line(match, seat, event)}", "dim")

    def event_line(self, match: str, seat: int, event: Event) -> str:
        """``seat 0 (you) plays 3-6 on the left (your only move)``: an event as this seat
        reads it. Only this seat's own plays say whether they were chosen: whether another
        seat's move was forced is hidden from it."""
        text = event_text(event)
        if getattr(event, "seat", None) != seat:
            return text
        text = text.replace(f"seat {seat} ", f"seat {seat} (you) ", 1)
        if not isinstance(event, Play):
            return text  # a pass or a draw is never a choice
        if self._chosen.pop(match, None) == f"{event.tile}:{event.end.letter}":
            return text
        if match in self._timed_out:
            self._timed_out.discard(match)
            return f"{text} (played for you: time was up)"
        return f"{text} (your only move)"

    async def on_hand_ended(self, match: str, result: HandResult) -> None:
        rules = self.rules.get(match)
        text = result_text(rules, result) if rules else f"scores {result.scores}"
        self.say(f"hand {result.hand + 1} over: {text}", "bold")

    async def on_match_ended(self, match: str, outcome: Outcome) -> None:
        rules = self.rules.get(match)
        text = outcome_text(rules, outcome) if rules else outcome.reason
        self.say(f"match over: {text}", "bold green")

    async def on_error(self, error: PlayError) -> None:
        self.say(f"the server refused that: {error.message}", "red")

    # -- your turn --------------------------------------------------------------------

    def table(self, decision: Decision) -> Panel:
        obs = decision.observation
        rules = obs.ruleset
        self.rules.setdefault(decision.match, rules)
        players = list(decision.request.view.players)
        me = obs.seat
        draws = rules.stock is Stock.DRAW
        ends = f"{obs.ends[0]} | {obs.ends[1]}" if obs.ends is not None else "-"
        counts = " · ".join(
            f"{_who(rules, s, me, players)}: {n}" for s, n in enumerate(obs.tile_counts)
        )
        lines = [
            Text(f"chain: {chain_text(obs)}"),
            Text(f"ends:  {ends}"),
            Text(f"tiles: {counts}" + (f" · stock: {obs.stock_count}" if draws else "")),
            Text(f"score: {scores_text(rules, obs.scores)} (target {rules.target})"),
        ]
        if obs.events:
            recent = [event_text(e) for e in obs.events[-6:]]
            more = "... " if len(obs.events) > 6 else ""
            lines.append(Text(f"this hand: {more}{'; '.join(recent)}", style="dim"))
        lines.append(Text(f"your hand: {' '.join(str(t) for t in obs.tiles)}", style="bold"))
        moves = Table(show_header=False, box=None, padding=(0, 1))
        for i, action in enumerate(decision.legal_actions, 1):
            moves.add_row(f"{i})", str(action), move_text(action))
        title = (
            f"{decision.match} · {rules.name} · hand {obs.hand + 1} · "
            f"your turn (seat {me}, turn {decision.turn_id})"
        )
        return Panel(Group(*lines, Text("moves:"), moves), title=title, title_align="left")

    def pick(self, decision: Decision, text: str) -> tuple[int | None, str]:
        """The action id typed as ``text``, or None and what is wrong with it."""
        legal = decision.legal_actions
        text = text.strip()
        if not text:
            return None, f"type a move number 1-{len(legal)} or its text, e.g. {legal[0]}"
        if text.isdigit():
            n = int(text)
            if 1 <= n <= len(legal):
                return n - 1, ""
            return None, f"there is no move {n}: choose 1-{len(legal)}"
        found = decision.id_of(text)
        if found is not None:
            return found, ""
        tiles = [a for a in legal if a.tile is not None and str(a.tile) == text.replace(" ", "")]
        if len(tiles) > 1:
            both = " or ".join(str(a) for a in tiles)
            return None, f"{text} fits both ends: type {both}"
        return None, f"{text!r} is not one of your moves (choose 1-{len(legal)} or type one)"

    async def decide(self, decision: Decision) -> int | None:
        try:
            return await self._ask(decision)
        except asyncio.CancelledError as e:
            if self._prompting:  # end the prompt's line (Ctrl+C there, or the server moved on)
                self._prompting = False
                self.say("")
            if e.args and e.args[0] == SUPERSEDED:
                turn = decision.turn_id
                self._timed_out.add(decision.match)
                self.say(f"time is up for turn {turn}: the server played it for you", "red")
            raise

    async def _ask(self, decision: Decision) -> int | None:
        async with self._prompt:
            self.console.print(self.table(decision))
            while True:
                left = decision.time_left()
                clock = f" ({left:.0f} s left)" if left is not None else ""
                n = len(decision.legal_actions)
                self.console.print(Text(f"your move [1-{n}]{clock}: "), end="")
                self.console.file.flush()
                self._prompting = True
                line = await self.input.readline()
                self._prompting = False
                if line is None:
                    self.say("")
                    raise ClientError(
                        "the input ended; leaving the seat (the match's timeout policy plays it)"
                    )
                if not self.console.is_terminal:
                    self.say(line)  # echo piped input, so the transcript reads like a session
                action_id, problem = self.pick(decision, line)
                if action_id is not None:
                    if decision.withdrawal is not None:  # the server played it meanwhile
                        self._timed_out.add(decision.match)
                        self.say(
                            f"time was up for turn {decision.turn_id}: the server played it "
                            "for you; this answer gives you your seat back",
                            "red",
                        )
                    else:
                        self._chosen[decision.match] = str(decision.legal_actions[action_id])
                    return action_id
                self.say(problem, "red")
