"""Helpers for tests that play hand-crafted deals through the real engine.

A scenario names each seat's tiles (and, when it matters, the front of the stock); every other
tile of the set goes to the back of the stock in canonical order. Moves are written
``"seat:action"`` (``"3:2-6:L"``, ``"1:defer"``, ``"0:keep"``), and :func:`play` checks that the
named seat is the one the engine asks before applying the action, so a script also checks the
turn order and that passes and draws happened by themselves.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from hashlib import sha256

from capicua.engine.actions import Action, End
from capicua.engine.chance import Dealer
from capicua.engine.game import Game, MatchState, Phase
from capicua.engine.records import Draw, Pass, Play
from capicua.engine.rules import Ruleset, load_preset
from capicua.engine.tiles import Tile, full_set

Hand = str | Sequence[Tile]


def tiles(spec: Hand) -> list[Tile]:
    """``"6-6 0-1"`` (or a list of tiles) as a list of tiles."""
    if isinstance(spec, str):
        return [Tile.parse(t) for t in spec.split()]
    return list(spec)


def rules(preset: str, *overrides: str) -> Ruleset:
    return load_preset(preset, overrides)


def deal(r: Ruleset, *hands: Hand, stock: Hand = ()) -> list[Tile]:
    """Every tile of ``r``'s set in dealing order: ``hands[s]`` for seat ``s`` (exactly
    ``hand_size`` tiles each), then ``stock`` (the first tiles drawn), then the rest of the
    set in canonical order."""
    if len(hands) != r.seats:
        raise ValueError(f"need {r.seats} hands, got {len(hands)}")
    order: list[Tile] = []
    for s, h in enumerate(hands):
        ts = tiles(h)
        if len(ts) != r.hand_size:
            raise ValueError(f"seat {s}: {len(ts)} tiles, hand_size is {r.hand_size}")
        order += ts
    order += tiles(stock)
    if len(set(order)) != len(order):
        raise ValueError(f"a tile is dealt twice: {[str(t) for t in order]}")
    rest = [t for t in full_set(r.max_pip) if t not in r.exclude and t not in order]
    bad = [str(t) for t in order if t not in full_set(r.max_pip) or t in r.exclude]
    if bad:
        raise ValueError(f"not in the set: {bad}")
    return order + rest


def dealer(
    deals: Sequence[Sequence[Tile]], redeals: Mapping[int, Sequence[Tile]] | None = None
) -> Dealer:
    """A dealer giving ``deals[hand]`` (the last one again for later hands) and, for
    ``attempt`` 1 (after a REDEAL), ``redeals[hand]``."""
    redeals = redeals or {}

    def give(hand: int, attempt: int) -> Sequence[Tile]:
        if attempt:
            return redeals[hand]
        return deals[min(hand, len(deals) - 1)]

    return give


def match(
    r: Ruleset,
    deals: Sequence[Sequence[Tile]],
    *,
    redeals: Mapping[int, Sequence[Tile]] | None = None,
    seed: int = 0,
    auto_forced: bool | Sequence[bool] = False,
) -> MatchState:
    """A match of ``r`` dealt by hand (by default every decision is asked, even single ones)."""
    return Game(r).new_match(seed, dealer=dealer(deals, redeals), auto_forced=auto_forced)


def play(state: MatchState, *moves: str) -> None:
    """Apply ``"seat:action"`` moves, checking that the engine asks that seat each time."""
    for move in moves:
        seat_text, _, action = move.partition(":")
        seat = int(seat_text)
        assert state.current_seat == seat, (
            f"{move}: seat {state.current_seat} is to act (legal: "
            f"{[str(a) for a in state.legal()]})"
        )
        state.apply_action(state.parse(action))


def phase(state: MatchState) -> Phase:
    """``state.phase`` read afresh after a move: mypy would keep it narrowed to what an
    earlier assert found, though the move changed it."""
    return state.phase


def legal(state: MatchState) -> set[str]:
    """The current seat's legal actions as text."""
    return {str(a) for a in state.legal()}


def played(seat: int, action: str) -> Play:
    """The event of ``seat`` playing ``"3-6:R"``."""
    a = Action.parse(action)
    assert a.tile is not None and a.end is not None
    return Play(seat, a.tile, End(a.end))


def passed(seat: int) -> Pass:
    return Pass(seat)


def drew(seat: int, tile: str | None) -> Draw:
    return Draw(seat, Tile.parse(tile) if tile is not None else None)


def hands_of(state: MatchState) -> list[list[str]]:
    """Every seat's tiles, as text (for assertion messages)."""
    return [[str(t) for t in state.hand_of(s)] for s in range(state.rules.seats)]


def pips(spec: Hand) -> int:
    return sum(t.pips for t in tiles(spec))


def random_side_seat(r: Ruleset, seed: int, hand: int) -> int:
    """The seat offered the opening under ``first_opener = random_side``, computed straight
    from the formula in the rules (not from the engine's code)."""
    key = int.from_bytes(sha256(f"{seed}:opener:{hand}".encode()).digest()[:8], "big")
    rng = random.Random(key)
    side = rng.randrange(r.num_sides)
    seats = [s for s in range(r.seats) if r.side_of(s) == side]
    return rng.choice(seats)


def seed_offering(r: Ruleset, seat: int, hand: int = 0) -> int:
    """The smallest seed whose random opening side offers hand ``hand`` to ``seat``."""
    return next(seed for seed in range(10_000) if random_side_seat(r, seed, hand) == seat)


def next_seat(r: Ruleset, seat: int) -> int:
    return (seat + (1 if r.turn_order.value == "clockwise" else -1)) % r.seats


def partner(r: Ruleset, seat: int) -> int | None:
    return (seat + 2) % 4 if r.sides.value == "teams" else None


def block_deal(r: Ruleset, opener: int, low: int) -> list[Tile]:
    """A ``hand_size=2`` deal that blocks at once: ``opener`` holds 6-6 (the highest dealt
    double) and nobody else holds a 6; after it is played ``low`` holds the fewest pips and
    ``low``'s side the fewest in total, so ``low``'s side wins the block."""
    hands: dict[int, str] = {}
    mate = partner(r, low)
    if opener == low:
        hands[opener] = "6-6 0-1"  # 1 pip left
    else:
        hands[low] = "0-1 0-2"  # 3
        hands[opener] = "6-6 0-4" if opener == mate else "6-6 5-5"  # 4 or 10
    if mate is not None and mate not in hands:
        hands[mate] = "0-3 1-2"  # 6
    fillers = iter(["3-4 2-5", "4-5 3-5", "1-5 2-4"])  # 14, 17, 12
    for s in range(r.seats):
        if s not in hands:
            hands[s] = next(fillers)
    return deal(r, *(hands[s] for s in range(r.seats)))


FINISH_CASES = ("distinct", "double", "equal", "one_end")


def finish_deal(r: Ruleset, case: str, p: int = 0) -> tuple[list[Tile], list[str]]:
    """A ``hand_size=3`` deal and the moves for seat ``p`` to open with the top double and go
    out with its third tile, before which the open ends are:

    - ``distinct``: 1 and 2, final tile 1-2 (fits both, not a double);
    - ``double``: 1 and 1, final tile 1-1 (a double fitting both);
    - ``equal``: 1 and 1, final tile 1-3 (fits both, not a double);
    - ``one_end``: 1 and 2, final tile 1-3 (fits the left end only).

    The seat after ``p`` (``q``) plays in between; every other seat passes throughout."""
    m = r.max_pip
    top = f"{m}-{m}"
    q = next_seat(r, p)
    final = {"distinct": "1-2", "double": "1-1", "equal": "1-3", "one_end": "1-3"}[case]
    p_tiles = f"{top} 2-{m} {final}"
    if case in ("distinct", "one_end"):
        q_tiles = f"1-{m} 3-3 0-3"
        moves = [f"{p}:{top}:L", f"{q}:1-{m}:L", f"{p}:2-{m}:R", f"{p}:{final}:R"]
        if case == "one_end":
            moves[-1] = f"{p}:{final}:L"
    else:
        q_tiles = f"1-{m} 1-2 3-3" if case == "double" else f"1-{m} 1-2 0-3"
        moves = [f"{p}:{top}:L", f"{q}:1-{m}:L", f"{p}:2-{m}:R", f"{q}:1-2:R", f"{p}:{final}:L"]
    others = iter(["0-4 4-4 0-5", "4-5 5-5 0-0"])
    hands = {p: p_tiles, q: q_tiles}
    for s in range(r.seats):
        if s not in hands:
            hands[s] = next(others)
    return deal(r, *(hands[s] for s in range(r.seats))), moves
