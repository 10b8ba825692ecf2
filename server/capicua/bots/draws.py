"""``random.Random.shuffle`` and ``random.Random.sample`` written out, for the search bots'
inner loops.

The standard library's are Python code, interpreted even in the compiled build: ``hard``
samples a few hundred worlds a decision, each with a ``sample`` or a ``shuffle``, and
those calls cost more than the rest of the sampling. These draw the same numbers from the
generator in the same order (``getrandbits`` with rejection, as ``Random._randbelow``
does), so they give exactly what the standard library gives for the same generator state
(CPython 3.11 to 3.13 share the algorithms); ``tests/test_bots_draws.py`` checks it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

from capicua.engine.dealing import shuffle_with

_Item = TypeVar("_Item")


def _below(getrandbits: Callable[[int], int], n: int) -> int:
    """A uniform int in ``[0, n)``, ``n > 0``: ``Random._randbelow_with_getrandbits``."""
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


def shuffle(rng: random.Random, items: list[_Item]) -> None:
    """``rng.shuffle(items)``: the deal's shuffle (:func:`~capicua.engine.dealing.shuffle_with`)."""
    shuffle_with(rng.getrandbits, items)


def sample(rng: random.Random, population: Sequence[_Item], k: int) -> list[_Item]:
    """``rng.sample(population, k)``: ``k`` distinct items in selection order
    (ValueError when ``k`` is negative or more than there are)."""
    n = len(population)
    if not 0 <= k <= n:
        raise ValueError("Sample larger than population or is negative")
    getrandbits = rng.getrandbits
    # the standard library's choice of method, by which of a list and a set is smaller:
    # the list while n is at most 21, or 21 + 4 ** ceil(log4(3k)) when k is above 5
    # (the threshold worked out only past 21: the search bots' pools are mostly smaller)
    if n <= 21 or (k > 5 and n <= 21 + 4 ** math.ceil(math.log(k * 3, 4))):
        pool = list(population)
        result: list[_Item] = []
        for i in range(k):
            j = _below(getrandbits, n - i)
            result.append(pool[j])
            pool[j] = pool[n - i - 1]  # the item not taken moves into the gap
        return result
    selected: set[int] = set()
    picked: list[_Item] = []
    for _ in range(k):
        j = _below(getrandbits, n)
        while j in selected:
            j = _below(getrandbits, n)
        selected.add(j)
        picked.append(population[j])
    return picked
