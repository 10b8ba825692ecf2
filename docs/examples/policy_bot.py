"""A trained policy as a capicua bot: the SDK's one method around it.

The policy here is the tabular one of ``pettingzoo_tabular.py`` (a preference per tile,
saved as JSON: ``{"tile index": preference}``); any policy that maps the environment's
observation vector and the legal action ids to an action id fits the same frame. The bot
encodes the observation the server sends exactly as the environment did in training
(``SeatEncoder.fill_view``), so the policy sees the same numbers.

    capicua bot run docs/examples/policy_bot.py:PolicyBot --option path=prefs.json
    # in an arena file: mine = { spec = "python:policy_bot:PolicyBot", dir = "docs/examples" }
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from capicua.client import Bot
from capicua.engine.actions import Action
from capicua.engine.game import Game
from capicua.engine.observation import Observation
from capicua.integrations.views import SeatEncoder, legal_ids


class PolicyBot(Bot):
    def __init__(self, path: str | None = None) -> None:
        loaded = json.loads(Path(path).read_text()) if path else {}
        self.preference = {int(k): float(v) for k, v in loaded.items()}
        self.encoders: dict[str, SeatEncoder] = {}  # per ruleset: built once

    def policy(self, x: np.ndarray, ids: list[int]) -> int:
        """The trained part: the legal action whose tile is preferred most (among tiles
        nothing was learned about, the highest action id)."""
        return max(ids, key=lambda a: self.preference.get(a // 2, a / 1000))

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        rules = observation.ruleset
        if rules.name not in self.encoders:
            self.encoders[rules.name] = SeatEncoder(Game(rules), perfect_recall=True)
        x = self.encoders[rules.name].fill_view(observation)
        ids = legal_ids(legal_actions, rules)
        return legal_actions[ids.index(self.policy(x, ids))]
