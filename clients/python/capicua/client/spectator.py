"""What a spectator knows of a match, folded from its WatchMatch messages: the public view
(the line, each seat's tile count, the stock, the scores) and one line of text per event,
hand and end. ``capicua match watch`` prints it; a ladder's leaderboard streams it."""

from __future__ import annotations

from dataclasses import dataclass, field

from capicua.engine.display import event_text, outcome_text, result_text
from capicua.engine.line import Line, PlacedTile
from capicua.engine.observation import TileCounts
from capicua.engine.records import RedealChoice
from capicua.engine.rules import Ruleset
from capicua.engine.tiles import Tile
from capicua.v1 import match_pb2, play_pb2, view_pb2
from capicua.wire import codec


@dataclass
class Spectator:
    """What a spectator knows, folded from WatchMatch messages."""

    name: str
    rules: Ruleset | None = None
    players: list[str] = field(default_factory=list)
    hand: int = 0
    line: Line = field(default_factory=Line)
    counts: TileCounts = TileCounts((), 0)  # the seats' and the stock's, as the engine folds
    scores: list[int] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    over: str = ""

    def fold(self, message: match_pb2.WatchMatchResponse) -> list[str]:
        """Take one message in; the lines of text it adds (none for a view or a record)."""
        kind = message.WhichOneof("message")
        if kind == "view":
            self.view(message.view)
            return []
        if kind == "events":
            return self.events(message.events)
        if kind == "hand_ended":
            return [self.hand_ended(message.hand_ended)]
        if kind == "match_ended":
            return [self.match_ended(message.match_ended)]
        return []

    def chain_text(self) -> str:
        """The line of play as text: ``[6|6] [6|3]``, or ``(empty)``."""
        return " ".join(f"[{p.left}|{p.right}]" for p in self.line) or "(empty)"

    def state_text(self) -> str:
        """Where the match stands: the hand, the line so far, the scores."""
        scores = "-".join(map(str, self.scores)) or "0"
        return f"hand {self.hand + 1}: the line: {self.chain_text()}; scores {scores}"

    def view(self, v: view_pb2.View) -> None:
        self.rules = codec.ruleset_from_proto(v.ruleset)
        self.players = list(v.players)
        self.hand = v.hand
        self.line = Line(
            PlacedTile(Tile.parse(p.tile), p.left, p.right, p.spinner) for p in v.chain
        )
        self.counts = TileCounts(tuple(v.tile_counts), v.stock_count)
        self.scores = list(v.scores)

    def events(self, batch: play_pb2.EventBatch) -> list[str]:
        lines = []
        if batch.hand != self.hand:  # the next hand: the stream sends no view for it
            self.hand = batch.hand
            self._dealt()
        for pb in batch.events:
            event = codec.event_from_proto(pb)
            lines.append(f"hand {batch.hand + 1}: {event_text(event)}")
            self.line = self.line.apply(event)
            if isinstance(event, RedealChoice) and event.redeal:
                self._dealt()
            elif self.rules is not None:
                self.counts = self.counts.after(event, self.rules)
        self.log.extend(lines)
        return lines

    def _dealt(self) -> None:
        """A new deal (a hand's, or a redeal): an empty line, full hands, a full stock."""
        self.line = Line()
        if self.rules is not None:
            self.counts = TileCounts.dealt(self.rules)

    def hand_ended(self, ended: play_pb2.HandEnded) -> str:
        result = codec.hand_result_from_proto(ended.result)
        self.scores = list(result.scores)
        assert self.rules is not None
        line = f"hand {result.hand + 1} over: {result_text(self.rules, result)}"
        self.log.append(line)
        return line

    def match_ended(self, ended: play_pb2.MatchEnded) -> str:
        outcome = codec.outcome_from_proto(ended.outcome)
        self.scores = list(outcome.scores)
        text = outcome_text(self.rules, outcome) if self.rules else outcome.reason
        self.over = f"match over: {text}"
        return self.over
