"""The built-in bots (random, easy, medium, hard) as SDK bots: ``capicua bot builtin NAME``.

Each match gets its own engine bot from :func:`capicua.bots.make_bot` (seeded from
``seed`` and the match name when a seed is given: ``derive(seed, match)``, the one
formula of :mod:`capicua.engine.seeds`), so matches played at once share no state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from capicua.bots import check_options, make_bot
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Outcome
from capicua.engine.seeds import derive

from .bot import Bot, ClientError, current_decision


class BuiltinBot(Bot):
    """Built-in bot ``level`` (a name :func:`~capicua.bots.make_bot` knows)."""

    def __init__(self, level: str, seed: int | None = None, **options: Any) -> None:
        self.level = level.strip().lower()
        self.seed = seed
        self.options = options
        self.name = f"builtin:{self.level}"
        try:  # an unknown name or a wrong option fails here, before connecting
            check_options(self.level, options)
        except (TypeError, ValueError) as e:
            raise ClientError(f"{self.name}: cannot take these options: {e}") from None
        self._bots: dict[str, Any] = {}

    def _bot_for(self, match: str) -> Any:
        bot = self._bots.get(match)
        if bot is None:
            seed = None if self.seed is None else derive(self.seed, match)
            bot = self._bots[match] = make_bot(self.level, seed, **self.options)
        return bot

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        decision = current_decision()
        match = decision.match if decision is not None else ""
        action: Action = self._bot_for(match).choose(observation, legal_actions)
        return action

    def on_match_ended(self, match: str, outcome: Outcome) -> None:
        self._bots.pop(match, None)
