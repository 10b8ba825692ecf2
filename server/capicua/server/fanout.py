"""A match's messages to its seats and spectators: what each may see, as it happens.

After every applied action the runner calls :meth:`Fanout.flush`: the events since the last
flush go out as one batch per hand touched, each seat's masked by the engine's observation
rules (its own draws shown, the others' hidden) and the spectators' public only, then a
HandEnded for each hand that ended. Nothing here decides anything; it only reads the state.

A seat whose stream asked for CAPABILITY_INCREMENTAL_DECISIONS gets no batch while its hand
is played: its events wait for its next DecisionRequest (:meth:`ViewBuilder.request`),
and those still waiting when the hand or the match ends go out in one batch just before
HandEnded or MatchEnded. Which events a seat is sent is the same either way; only how many
messages carry them differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from capicua.engine.game import MatchState
from capicua.engine.observation import visible_turn
from capicua.server.outbox import MAX_UNREAD_BYTES, Outbox
from capicua.server.seats import Seat
from capicua.v1 import game_pb2, match_pb2, play_pb2, rules_pb2, view_pb2
from capicua.wire import views as wire

# The fields a message is joined into (Fanout builds the hand's end from serialised pieces)
_PLAY_EVENTS = play_pb2.PlayResponse.EVENTS_FIELD_NUMBER
_PLAY_HAND_ENDED = play_pb2.PlayResponse.HAND_ENDED_FIELD_NUMBER
_WATCH_EVENTS = match_pb2.WatchMatchResponse.EVENTS_FIELD_NUMBER
_WATCH_HAND_ENDED = match_pb2.WatchMatchResponse.HAND_ENDED_FIELD_NUMBER
_RESULT = play_pb2.HandEnded.RESULT_FIELD_NUMBER


class Streams(Protocol):
    """The Play streams, as a match sees them (implemented by the Play service's hub)."""

    def send(self, principal: str, message: play_pb2.PlayResponse) -> None: ...

    def send_data(self, principal: str, data: bytes) -> None: ...

    def connected(self, principal: str) -> bool: ...

    def ask_forced(self, principal: str) -> bool: ...

    def incremental(self, principal: str) -> bool: ...

    def finished(self, principal: str) -> None: ...


class Watcher:
    """A spectator's WatchMatch messages, serialized (its :class:`Outbox`): ``dropped`` once
    it left more than the outbox's bound unread, and the call then ends SLOW_CONSUMER."""

    def __init__(
        self, match_updates: bool = False, max_unread_bytes: int = MAX_UNREAD_BYTES
    ) -> None:
        self.outbox = Outbox(max_unread_bytes)
        self.dropped = False
        self.match_updates = match_updates  # also the match's record at each change

    def put(self, data: bytes) -> None:
        """Queue a serialized WatchMatchResponse (serialized once for every spectator)."""
        if not self.outbox.put(data) and not self.outbox.closed:
            self.dropped = True
            self.outbox.close()

    def hang_up(self) -> None:
        """End the call once what is queued is sent."""
        self.outbox.close()


class Fanout:
    """The seats' streams and the spectators of match ``name``."""

    def __init__(
        self,
        name: str,
        seats: list[Seat],
        streams: Streams,
        timer: play_pb2.TurnTimer | None = None,
    ) -> None:
        self.name = name
        self.seats = seats
        self.streams = streams
        self.timer = timer  # the turn timer as applied, in every MatchStarted
        self.watchers: set[Watcher] = set()
        self.views: wire.ViewBuilder | None = None  # from the start on
        self._cursor = (0, 0)  # (hand, events) already flushed
        self._results_sent = 0
        self._messages = 0  # sent to seats and spectators so far

    def public_view(self, state: MatchState | None) -> view_pb2.View | None:
        if state is None or self.views is None:
            return None
        return self.views.view_of(state, None)

    def started(self, state: MatchState, ruleset_pb: rules_pb2.Ruleset, players: list[str]) -> None:
        """MatchStarted to every remote seat (its view, as :meth:`resumed` builds it) and the
        public view to spectators."""
        self.views = wire.ViewBuilder(ruleset_pb, players)
        for s in self.seats:
            if s.principal is not None:
                self._send(s.principal, self.resumed(state, s))
        self._watched(match_pb2.WatchMatchResponse(view=self.public_view(state)))
        self._cursor = (state.hand, len(state.log.raw_events()))
        self._results_sent = len(state.log.results())

    def resumed(self, state: MatchState, seat: Seat) -> play_pb2.PlayResponse:
        """MatchStarted for a (re)connecting stream's seat, with the view now."""
        assert self.views is not None
        view = self.views.view_of(state, seat.index)
        started = play_pb2.MatchStarted(
            match=self.name,
            seat=seat.index,
            view=view,
            turn_timer=self.timer,
            padding=wire.padding(self.views.private_texts(view, seat.index)),
        )
        return play_pb2.PlayResponse(match_started=started)

    def withdrawn(
        self, seat: Seat, turn_id: int, reason: play_pb2.WithdrawalReason.ValueType
    ) -> None:
        """DecisionWithdrawn for ``seat``'s request ``turn_id``: to the principal it was sent
        to, and to nobody else (the others were not asked; a redeal offer is a secret)."""
        assert seat.principal is not None
        message = play_pb2.PlayResponse()
        withdrawn = message.decision_withdrawn
        withdrawn.match = self.name
        withdrawn.seat = seat.index
        withdrawn.turn_id = turn_id
        withdrawn.reason = reason
        self._send(seat.principal, message)

    def flush(self, state: MatchState) -> int:
        """Send the events since the last flush to every seat and spectator: one batch per
        hand touched (held for an incremental seat until its hand ends), then HandEnded for
        each hand that ended. Returns how many messages that was."""
        before = self._messages
        remote = [s for s in self.seats if s.principal is not None]
        playing = [s for s in remote if not self.streams.incremental(s.principal or "")]
        while True:
            hand, sent = self._cursor
            n_events = len(state.log.raw_events(hand))
            ending = state.log.hand_over(hand) and self._results_sent <= hand
            if sent < n_events or ending:
                self._events(state, hand, self._acting_first(state, remote if ending else playing))
            last = hand == state.log.hands_dealt - 1
            self._cursor = (hand, n_events) if last else (hand + 1, 0)
            if ending:
                self._results_sent = hand + 1
                self._hand_ended(state, hand, self._acting_first(state, remote), last)
            if last:
                return self._messages - before

    def _acting_first(self, state: MatchState, seats: list[Seat]) -> list[Seat]:
        """``seats`` with the stream of the seat to act next first: its batch goes out
        before the others', and its DecisionRequest right after it, which shortens the
        decision round trip. The sort is stable, so the order within each stream is
        unchanged. The seat is the one everybody sees to act: the order must not single out
        a seat asked in secret."""
        if len(seats) < 2:
            return seats
        _, public_to_act = visible_turn(state, None)
        if public_to_act is None:
            return seats
        to_act = self.seats[public_to_act].principal
        return sorted(seats, key=lambda s: s.principal != to_act)

    def _events(self, state: MatchState, hand: int, seats: list[Seat]) -> None:
        """``hand``'s events not sent yet: to ``seats``, in order, and to the spectators."""
        assert self.views is not None
        for s in seats:
            self._batch(state, hand, s)
        if self.watchers:
            public = self.views.event_batch(self.name, state, hand, None)
            if public:
                self._watched_data(wire.delimited(_WATCH_EVENTS, public))

    def _batch(self, state: MatchState, hand: int, seat: Seat) -> None:
        """One EventBatch of what ``seat`` was not sent yet of ``hand`` (none if nothing)."""
        assert self.views is not None and seat.principal is not None
        batch = self.views.event_batch(self.name, state, hand, seat.index)
        if batch:
            self._send_data(seat.principal, wire.delimited(_PLAY_EVENTS, batch))

    def _hand_ended(self, state: MatchState, hand: int, remote: list[Seat], last: bool) -> None:
        """HandEnded to every remote seat and spectator: the hand's result is serialised
        once, and joined to each seat's own fields (:func:`wire.delimited`)."""
        assert self.views is not None
        pb = self.views.results(state.log.results())[hand]
        result = wire.delimited(_RESULT, pb.SerializeToString())
        for s in remote:
            assert s.principal is not None
            head = play_pb2.HandEnded(match=self.name, seat=s.index).SerializeToString()
            self._send_data(s.principal, wire.delimited(_PLAY_HAND_ENDED, head + result))
        if self.watchers:
            head = play_pb2.HandEnded(match=self.name).SerializeToString()
            self._watched_data(wire.delimited(_WATCH_HAND_ENDED, head + result))
            if not state.is_terminal() and last:
                self._watched(match_pb2.WatchMatchResponse(view=self.public_view(state)))

    def ended(self, state: MatchState, outcome: game_pb2.Outcome) -> None:
        """MatchEnded to every remote seat and every spectator, whose streams then end. An
        incremental seat is first sent the events it was still held (a match that ended in
        the middle of a hand: cancelled, forfeited)."""
        for s in self.seats:
            if s.principal is not None:
                if self.views is not None:
                    self._batch(state, state.hand, s)
                ended = play_pb2.MatchEnded(match=self.name, seat=s.index, outcome=outcome)
                self._send(s.principal, play_pb2.PlayResponse(match_ended=ended))
                self.streams.finished(s.principal)
        self.close_watchers(outcome)

    def close_watchers(self, outcome: game_pb2.Outcome) -> None:
        self._watched(
            match_pb2.WatchMatchResponse(
                match_ended=play_pb2.MatchEnded(match=self.name, outcome=outcome)
            )
        )
        self.hang_up()

    def hang_up(self) -> None:
        """End every spectator's stream (after MatchEnded, or without it: a suspended
        match)."""
        for w in self.watchers:
            w.hang_up()
        self.watchers.clear()

    def _send(self, principal: str, message: play_pb2.PlayResponse) -> None:
        self._messages += 1
        self.streams.send(principal, message)

    def _send_data(self, principal: str, data: bytes) -> None:
        """:meth:`_send` of a PlayResponse already serialised."""
        self._messages += 1
        self.streams.send_data(principal, data)

    def _watched(self, message: match_pb2.WatchMatchResponse) -> None:
        if self.watchers:
            self._watched_data(message.SerializeToString())

    def _watched_data(self, data: bytes) -> None:
        """A serialised WatchMatchResponse to every spectator."""
        self._messages += len(self.watchers)
        for w in self.watchers:
            w.put(data)

    def record_changed(self, record: Callable[[], match_pb2.Match]) -> None:
        """The match's seats or state changed: its public record to the spectators that
        asked for it (built only if one did)."""
        wanting = [w for w in self.watchers if w.match_updates]
        if wanting:
            data = match_pb2.WatchMatchResponse(match=record()).SerializeToString()
            for w in wanting:
                w.put(data)
