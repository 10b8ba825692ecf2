"""Every capicua ruleset as a PettingZoo AEC environment (``pip install 'capicua[pettingzoo]'``).

``env(preset="cuban", overrides=["target=150"])`` is a turn-based environment whose agents
are the seats (``seat_0``, ``seat_1``, ...). The game is the engine's: each ``reset(seed)``
starts a match dealt from ``seed`` (the engine's seeded deal, so a seed replays the same
match for the same actions), ``step(action)`` applies the selected seat's decision, and
the engine plays what nobody decides (passes, draws, forced moves unless ``ask_forced``).

- **Actions**: ``Discrete(2 * tiles + 3)``, the ids of OpenSpiel's ``capicua`` game: a play
  is ``2 * tile + end``, then DEFER, REDEAL, KEEP (:func:`capicua.integrations.views.action_id`).
- **Observations**: ``{"observation": float32 vector, "action_mask": int8 vector}``; the
  vector is :class:`~capicua.integrations.views.SeatEncoder`'s tensor of the seat's view
  (with this hand's history when ``perfect_recall``), built from the engine's per-seat
  observation only; the mask marks the legal actions of the seat to act (all 0 for the
  others).
- **Rewards**: at the end of the match, the engine's returns (1 for the winning side's
  seats, ``-1 / (sides - 1)`` for the others, 0 for all without a winner); 0 before.
- Who is selected is the seat to act, as in OpenSpiel: while a seat is asked a redeal the
  others' observations do not show it, but a program driving every seat sees whom it
  steps.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from capicua.common.errors import CapicuaError
from capicua.engine.game import Game, MatchState
from capicua.integrations.views import (
    SPECIALS,
    SeatEncoder,
    action_id,
    engine_code,
    match_text,
)


def env(
    preset: str = "block",
    overrides: Sequence[str] = (),
    *,
    ask_forced: bool = False,
    perfect_recall: bool = True,
) -> CapicuaEnv:
    """The environment of a preset and ``--set`` style overrides (``target=150``)."""
    return CapicuaEnv(preset, overrides, ask_forced=ask_forced, perfect_recall=perfect_recall)


class CapicuaEnv(AECEnv):  # type: ignore[misc]
    """One capicua ruleset as a PettingZoo AEC environment (see the module doc)."""

    metadata = {"name": "capicua_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(
        self,
        preset: str = "block",
        overrides: Sequence[str] = (),
        *,
        ask_forced: bool = False,
        perfect_recall: bool = True,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        try:
            self.game = Game.from_preset(preset, list(overrides))
        except CapicuaError as e:
            raise ValueError(f"capicua: {e}") from None
        self.ask_forced = ask_forced
        self.render_mode = render_mode
        rules = self.game.ruleset
        self.tiles = len(self.game.table.tiles)
        self.encoder = SeatEncoder(self.game, perfect_recall=perfect_recall)
        self.possible_agents = [f"seat_{s}" for s in range(rules.seats)]
        self.agents = self.possible_agents[:]
        n = 2 * self.tiles + len(SPECIALS)
        size = self.encoder.tensor.shape[0]
        space = spaces.Dict(
            {
                "observation": spaces.Box(low=0.0, high=np.inf, shape=(size,), dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(n,), dtype=np.int8),
            }
        )
        self._observation_spaces = dict.fromkeys(self.possible_agents, space)
        self._action_spaces = {a: spaces.Discrete(n) for a in self.possible_agents}
        self.match: MatchState | None = None
        self._rng = random.Random()

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._rng = random.Random(seed)
        deal = self._rng.randrange(2**63) if seed is None else seed
        self.match = self.game.new_match(deal, auto_forced=not self.ask_forced)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.agents[0]
        self._after_move()

    def _after_move(self) -> None:
        """Select the seat to act, or end the episode: the match may end without anybody
        deciding (a hand of forced moves only, right after the deal)."""
        match = self.match
        assert match is not None
        if match.is_terminal():
            returns = match.returns()
            self.rewards = {a: float(returns[i]) for i, a in enumerate(self.possible_agents)}
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            self.rewards = dict.fromkeys(self.agents, 0.0)
            self._select()
        self._accumulate_rewards()

    def _select(self) -> None:
        assert self.match is not None
        seat = self.match.current_seat
        if seat is not None:
            self.agent_selection = self.possible_agents[seat]

    def observe(self, agent: str) -> dict[str, np.ndarray[Any, Any]]:
        seat = self.possible_agents.index(agent)
        observation = self.encoder.fill(self.match, seat).copy()
        mask = np.zeros(2 * self.tiles + len(SPECIALS), dtype=np.int8)
        match = self.match
        if match is not None and not match.is_terminal() and match.current_seat == seat:
            for code in match.legal_actions():
                mask[action_id(code, self.tiles)] = 1
        return {"observation": observation, "action_mask": mask}

    # a numpy integer too: what a policy's argmax over the action mask gives
    def step(self, action: int | np.integer[Any] | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        match = self.match
        assert match is not None and action is not None
        code = engine_code(int(action), self.tiles)
        if code not in match.legal_actions():
            raise ValueError(f"capicua: action {action} is not legal for {agent} now")
        self._cumulative_rewards[agent] = 0.0
        match.apply(code)
        self._after_move()

    def render(self) -> str | None:
        return None if self.match is None else match_text(self.match)

    def close(self) -> None:
        pass
