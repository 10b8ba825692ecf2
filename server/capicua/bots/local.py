"""Playing a match in-process between bot objects (``capicua play``, tests, benchmarks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from capicua.bots.base import Bot
from capicua.common.errors import CapicuaError
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import observe


class BotError(CapicuaError):
    """A bot returned something that is not one of its legal actions."""


def play_local(
    game: Game,
    seed: int,
    bots: Sequence[Bot],
    *,
    on_progress: Callable[[MatchState], None] | None = None,
    hands: int | None = None,
) -> MatchState:
    """Play one match to its end (or, with ``hands``, until hand ``hands`` would start);
    each seat's bot sees only that seat's observation.

    ``on_progress`` is called after the start and after every decision (forced moves and
    whole hands may have happened in between: read them from the state's logs)."""
    if len(bots) != game.ruleset.seats:
        raise CapicuaError(
            f"--bots: {game.ruleset.name} has {game.ruleset.seats} seats, got {len(bots)} bots"
        )
    state = game.new_match(seed)
    if on_progress is not None:  # forced moves may already have been applied
        on_progress(state)
    while not state.is_terminal() and (hands is None or state.hand < hands):
        seat = state.current_seat
        assert seat is not None
        legal = state.legal()
        action = bots[seat].choose(observe(state, seat), legal)
        if action not in legal:
            raise BotError(f"bot {bots[seat].name} at seat {seat} chose illegal {action}")
        state.apply_action(action)
        if on_progress is not None:
            on_progress(state)
    return state
