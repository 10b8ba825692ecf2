"""The deal is exactly the documented seeded shuffle, and depends only on (seed, hand, attempt)."""

from __future__ import annotations

import random
from hashlib import sha256

from hypothesis import given, settings
from hypothesis import strategies as st

from capicua.engine.dealing import deal_rng, deck_number, opener_rng, shuffled, shuffled_deck
from capicua.engine.game import Game


def reference_shuffle(n: int, seed: int, hand: int, attempt: int) -> list[int]:
    """The deal written straight from the documentation, with the standard library."""
    order = list(range(n))
    key = int.from_bytes(sha256(f"{seed}:{hand}:{attempt}".encode()).digest()[:8], "big")
    random.Random(key).shuffle(order)
    return order


@settings(deadline=None, max_examples=300)
@given(
    n=st.sampled_from([27, 28, 55]),
    seed=st.integers(0, 2**64),
    hand=st.integers(0, 2000),
    attempt=st.integers(0, 1),
)
def test_fast_shuffle_equals_random_shuffle(n: int, seed: int, hand: int, attempt: int) -> None:
    assert shuffled(tuple(range(n)), seed, hand, attempt) == reference_shuffle(
        n, seed, hand, attempt
    )


def test_rngs_follow_documented_formula() -> None:
    key = int.from_bytes(sha256(b"42:opener:3").digest()[:8], "big")
    assert opener_rng(42, 3).random() == random.Random(key).random()
    key = int.from_bytes(sha256(b"42:3:1").digest()[:8], "big")
    assert deal_rng(42, 3, 1).random() == random.Random(key).random()


def test_deal_is_blocks_of_the_shuffled_canonical_order() -> None:
    game = Game.from_preset("el-dominito-2p")
    state = game.new_match(seed=7)
    deal = state.log.record(0).deals[0]
    tiles = [game.table.tiles[i] for i in reference_shuffle(28, 7, 0, 0)]
    assert deal.hands == (tuple(tiles[0:7]), tuple(tiles[7:14]))
    assert deal.stock == tuple(tiles[14:])


def test_cutthroat_deals_from_the_set_without_double_blank() -> None:
    game = Game.from_preset("cutthroat")
    deal = game.new_match(seed=3).log.record(0).deals[0]
    canonical = [t for t in game.table.tiles if str(t) != "0-0"]
    order = [canonical[i] for i in reference_shuffle(27, 3, 0, 0)]
    assert [t for h in deal.hands for t in h] == order
    assert deal.stock == ()


def test_equal_decks_share_a_number_and_their_deals() -> None:
    # the deal cache is keyed by a deck's number: equal decks (two rulesets on one set) must
    # get one number, different decks different ones, and the same deals as shuffled()
    block, cutthroat = Game.from_preset("block"), Game.from_preset("cutthroat")
    assert block.deck_number == Game.from_preset("el-dominito-2p").deck_number
    assert block.deck_number != cutthroat.deck_number
    assert deck_number(tuple(block.deck_bits)) == block.deck_number
    for game in (block, cutthroat):
        assert shuffled_deck(game.deck_number, 11, 2, 1) == shuffled(game.deck_bits, 11, 2, 1)
