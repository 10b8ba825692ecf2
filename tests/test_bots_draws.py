"""The search bots' written-out draws give exactly what ``random.Random`` gives, and leave
the generator where it leaves it (so every later draw of a search is the same too)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capicua.bots import draws


@settings(deadline=None, max_examples=300)
@given(seed=st.integers(0, 2**64), n=st.integers(0, 60))
def test_shuffle_equals_random_shuffle(seed: int, n: int) -> None:
    ours, theirs = random.Random(seed), random.Random(seed)
    mine, reference = list(range(n)), list(range(n))
    draws.shuffle(ours, mine)
    theirs.shuffle(reference)
    assert mine == reference
    assert ours.getstate() == theirs.getstate()


@settings(deadline=None, max_examples=500)
@given(seed=st.integers(0, 2**64), n=st.integers(0, 120), data=st.data())
def test_sample_equals_random_sample(seed: int, n: int, data: st.DataObject) -> None:
    # n up to 120 and k up to n cover both of the standard library's methods (a pool
    # list below its set-size threshold, a set of picked indices above it)
    k = data.draw(st.integers(0, n))
    population = [3 * i + 1 for i in range(n)]
    ours, theirs = random.Random(seed), random.Random(seed)
    assert draws.sample(ours, population, k) == theirs.sample(population, k)
    assert ours.getstate() == theirs.getstate()


def test_sample_refuses_what_random_sample_refuses() -> None:
    with pytest.raises(ValueError, match="Sample larger than population"):
        draws.sample(random.Random(1), [1, 2], 3)
    with pytest.raises(ValueError, match="Sample larger than population"):
        draws.sample(random.Random(1), [1, 2], -1)


@pytest.mark.parametrize(
    ("n", "k"),
    # each side of the standard library's switch from a pool list to a set of picks:
    # 21 for k up to 5, 85 for k of 6 and 7, 277 for k from 22 to 85
    [(21, 5), (22, 5), (85, 7), (86, 7), (277, 30), (278, 30), (300, 300)],
)
def test_sample_on_either_side_of_the_method_switch(n: int, k: int) -> None:
    population = list(range(n))
    for seed in range(20):
        ours, theirs = random.Random(seed), random.Random(seed)
        assert draws.sample(ours, population, k) == theirs.sample(population, k)
        assert ours.getstate() == theirs.getstate()
