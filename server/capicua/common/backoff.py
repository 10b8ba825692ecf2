"""The delays between reconnection attempts: a bot's SDK reconnecting its Play stream, and a
server relaying a bot's stream to another server (docs/protocol.md, "How a Play stream
ends": the backoff a client follows)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delays between reconnection attempts: ``initial * factor**n`` up to ``maximum``,
    each shortened by up to ``jitter`` (a fraction) at random."""

    initial: float = 0.1
    factor: float = 2.0
    maximum: float = 10.0
    jitter: float = 0.2

    def delay(self, attempt: int) -> float:
        base = min(self.maximum, self.initial * self.factor ** min(attempt, 64))
        return base * (1 - self.jitter * random.random())
