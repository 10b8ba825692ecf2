"""The bot interface every player implements, in-process or behind the SDK."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from capicua.engine.actions import Action
from capicua.engine.observation import Observation


@runtime_checkable
class Bot(Protocol):
    """A player: one method, given the seat's full view and its legal actions."""

    @property
    def name(self) -> str:
        """The bot's name (a class attribute of the built-in bots)."""
        ...

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        """Return one of ``legal``."""
        ...


class RandomBot:
    """Uniform over the legal actions: the baseline every other bot must beat."""

    name: ClassVar[str] = "random"  # a class attribute: the compiled build reads it off the class

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        return legal[self.rng.randrange(len(legal))]
