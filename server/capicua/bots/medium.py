"""``medium``: the hand-written heuristics of a good club player.

Each legal play gets a score, in points-like units, from the features a strong human
weighs, and the best score is played (ties broken by the seeded generator). The features
read only the seat's observation, through the hard facts of
:mod:`capicua.bots.inference` (which tiles each seat cannot hold, which are unseen):

1. shed heavy tiles (they count against you in a block);
2. play doubles while they still fit (a double fits one number only);
3. keep options: tiles of mine that fit the new ends, and suits I still hold;
4. make opponents pass: the chance that the next opponent holds nothing for the new ends
   (exact 0/1 when it passed on those numbers, otherwise from counting unseen tiles);
   never starve my partner;
5. feed my partner's numbers and do not cover the number it just led;
6. block on purpose: when nobody else may hold a tile for the new ends and I hold none
   either, the hand may block now: its chance times what the block would win or lose (my
   pips against the expected pips of the others);
7. keep a capicúa (or any finish bonus the ruleset pays) possible for my last tile.

See docs/bots.md.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from capicua.bots.inference import Knowledge, infer
from capicua.common.pickling import by_constructor
from capicua.engine.actions import Action, ActionKind, End
from capicua.engine.game import Game, Phase
from capicua.engine.observation import Observation
from capicua.engine.records import Play, ends_after
from capicua.engine.rules import BlockWinner, EffectKind, Points, Ruleset, Stock
from capicua.engine.tiles import Tile, iter_bits


def redeal_choice(obs: Observation, legal: Sequence[Action]) -> Action:
    """REDEAL a hand with at least half its tiles doubles (doubles fit one number each,
    so such a hand is hard to play out); otherwise KEEP."""
    want = ActionKind.KEEP
    doubles = sum(1 for t in obs.tiles if t.is_double)
    if doubles * 2 >= len(obs.tiles):
        want = ActionKind.REDEAL
    for a in legal:
        if a.kind is want:
            return a
    return legal[0]


def defer_choice(obs: Observation, legal: Sequence[Action]) -> bool:
    """Whether to DEFER an offered opening to the partner: when my longest suit is
    short (a hand that cannot lead a number is better left to the partner)."""
    if not any(a.kind is ActionKind.DEFER for a in legal):
        return False
    width = obs.ruleset.max_pip + 1
    longest = max(sum(1 for t in obs.tiles if p in (t.low, t.high)) for p in range(width))
    # an even spread gives each number about 2 * tiles / width tiles
    return longest * width < 2 * len(obs.tiles) + width


@dataclass(frozen=True, slots=True)
class Weights:
    """The relative worth of each feature (see the module docstring)."""

    pips: float = 1.0  # per pip shed
    double: float = 0.5  # per max_pip, for a double
    follow: float = 3.0  # per tile of mine that fits the new ends (at most 3)
    variety: float = 1.0  # per number I still hold
    tempo: float = 40.0  # the next opponent must pass (times its probability)
    tempo_alone: float = 1.0  # ... scaled by this when I cannot follow either
    partner_pass: float = 6.0  # my partner must pass (times its probability)
    feed: float = 1.5  # a new end shows a number my partner led
    cut: float = 2.0  # covering the number my partner just led
    block: float = 0.5  # times the expected points of blocking now
    capicua: float = 1.0  # times the expected extra points of a finish bonus


class MediumBot:
    """Heuristic player: scores each legal play and plays the best."""

    name: ClassVar[str] = "medium"  # a class attribute: the compiled build reads it off the class

    def __init__(self, seed: int | None = None, weights: Weights | None = None) -> None:
        self.rng = random.Random(seed)
        self.weights = weights or Weights()

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        obs = observation
        if len(legal) == 1:
            return legal[0]
        if obs.phase is Phase.REDEAL:
            return redeal_choice(obs, legal)
        if defer_choice(obs, legal):
            return next(a for a in legal if a.kind is ActionKind.DEFER)
        plays = [a for a in legal if a.kind is ActionKind.PLAY]
        ctx = _Context(obs, infer(obs))
        best: list[Action] = []
        best_score = -math.inf
        for a in plays:
            s = self.score(ctx, a)
            if s > best_score + 1e-9:
                best_score = s
                best = [a]
            elif abs(s - best_score) <= 1e-9:
                best.append(a)
        return best[self.rng.randrange(len(best))] if len(best) > 1 else best[0]

    def score(self, ctx: _Context, action: Action) -> float:
        """The heuristic value of one play (higher is better)."""
        w = self.weights
        g = ctx.game
        suit = g.suit
        r = ctx.ruleset
        tile = action.tile
        assert tile is not None
        bit = 1 << g.table.index[tile]
        rest = ctx.mine & ~bit
        assert action.end is not None
        covered = -1 if ctx.ends is None else ctx.ends[action.end]
        nl, nr = ends_after(ctx.ends, tile, action.end)
        if not rest:
            return 1e6  # domino: nothing beats going out
        unit = ctx.unit
        fits = suit[nl] | suit[nr]
        score = 0.0
        # 1-3: shed pips, play doubles, keep options
        score += w.pips * ctx.pip_value * tile.pips
        if tile.is_double:
            score += w.double * r.max_pip * ctx.pip_value
        follow = (rest & fits).bit_count()
        score += w.follow * min(follow, 3) * ctx.pip_value
        score += w.variety * ctx.suits_held(rest) * ctx.pip_value
        # 4-5: who can answer the new ends
        live = ctx.pool & fits
        nxt = ctx.next_seat
        p_next = ctx.p_none(nxt, live)
        if ctx.is_partner(nxt):
            score -= w.partner_pass * p_next * ctx.pip_value
        else:
            urgent = 2.0 if ctx.counts[nxt] <= 2 else 1.0
            follow_up = 1.0 if rest & fits else w.tempo_alone
            score += w.tempo * p_next * urgent * follow_up * ctx.pip_value
        if ctx.partner >= 0 and nxt != ctx.partner:
            score -= 0.5 * w.partner_pass * ctx.p_none(ctx.partner, live) * ctx.pip_value
        if ctx.partner >= 0:
            if covered >= 0 and covered == ctx.partner_last_end:
                score -= w.cut * ctx.pip_value
            if ctx.partner_led >> nl & 1 or ctx.partner_led >> nr & 1:
                score += w.feed * ctx.pip_value
        # 6: the hand may block right now
        if not rest & fits and ctx.can_block:
            p_block = 1.0
            for s in ctx.others:
                p_block *= ctx.p_none(s, live)
                if p_block < 1e-4:
                    break
            if p_block >= 1e-4:
                score += w.block * p_block * ctx.block_value(rest)
        # 7: a finish bonus for my last tile
        if r.finish_bonus and rest.bit_count() == 1:
            last = g.table.tiles[rest.bit_length() - 1]
            score += w.capicua * ctx.bonus_worth(last, nl, nr) * unit
        return score


class _Context:
    """Per-decision facts shared by every candidate's score."""

    def __init__(self, obs: Observation, k: Knowledge) -> None:
        assert obs.seat is not None
        r = obs.ruleset
        g: Game = k.game
        self.ruleset: Ruleset = r
        self.game = g
        self.me = obs.seat
        self.mine = k.mine
        self.pool = k.pool
        self.ends = obs.ends
        self.counts = obs.tile_counts
        self.side = r.side_of(self.me)
        self.partner = g.partner[self.me]
        self.next_seat = g.next_seat[self.me]
        self.others = [s for s in range(r.seats) if s != self.me]
        self.can_block = r.stock is Stock.SLEEPING or k.stock_count == 0
        pips = g.pips
        # what each other seat may hold, and its expected pips
        self.allowed = {s: k.pool & ~k.seat_forbidden(s) for s in self.others}
        self.expected: dict[int, float] = {}
        self.variance: dict[int, float] = {}
        for s in self.others:
            tiles = [pips[t] for t in iter_bits(self.allowed[s])]
            n = len(tiles)
            mean = sum(tiles) / n if n else 0.0
            var = sum((p - mean) ** 2 for p in tiles) / n if n else 0.0
            self.expected[s] = self.counts[s] * mean
            self.variance[s] = self.counts[s] * var
        hidden = [pips[t] for t in iter_bits(self.pool)]
        self.mean_pips = sum(hidden) / len(hidden) if hidden else r.max_pip
        # one "point" of heuristic value: pips for pip scoring, else a hand's pips worth 1
        if r.domino_points is Points.ONE and r.block_points is Points.ONE:
            self.pip_value = 1.0 / max(1.0, self.mean_pips * r.hand_size)
            self.unit = 1.0
        else:
            self.pip_value = 1.0
            self.unit = self.mean_pips * r.hand_size
        # numbers my partner left open, and the end it made last
        led = 0
        last_end = -1
        left = right = -1
        for ev in obs.events:
            if not isinstance(ev, Play):
                continue
            t = ev.tile
            if left < 0:
                left, right = t.low, t.high
                if ev.seat == self.partner:
                    led |= (1 << t.low) | (1 << t.high)
                continue
            left, right = ends_after((left, right), t, ev.end)
            new = left if ev.end is End.LEFT else right
            if ev.seat == self.partner:
                led |= 1 << new
                last_end = new
        self.partner_led = led
        self.partner_last_end = last_end

    def is_partner(self, seat: int) -> bool:
        return self.ruleset.side_of(seat) == self.side

    def suits_held(self, hand: int) -> int:
        suit = self.game.suit
        return sum(1 for p in range(self.game.width) if hand & suit[p])

    def p_none(self, seat: int, live: int) -> float:
        """The chance that ``seat`` holds none of the tiles ``live`` (hypergeometric over
        the tiles it may hold)."""
        k = self.counts[seat]
        allowed = self.allowed[seat]
        n = allowed.bit_count()
        u = (allowed & live).bit_count()
        if u == 0 or k == 0:
            return 1.0
        if n - u < k:
            return 0.0
        p = 1.0
        for i in range(k):
            p *= (n - u - i) / (n - i)
        return p

    def block_value(self, rest: int) -> float:
        """Expected points for my side if the hand blocked now with me holding
        ``rest``: the chance my side wins the count times what it would score, minus the
        chance it loses times what the other side would score."""
        r = self.ruleset
        g = self.game
        mine = float(g.table.pips_of(rest))
        side_pips = {self.side: mine}
        side_var = {self.side: 0.0}
        seat_pips = {self.me: mine}
        for s in self.others:
            sd = r.side_of(s)
            side_pips[sd] = side_pips.get(sd, 0.0) + self.expected[s]
            side_var[sd] = side_var.get(sd, 0.0) + self.variance[s]
            seat_pips[s] = self.expected[s]
        if r.block_winner is BlockWinner.LOWEST_SIDE:
            ours, our_var = side_pips[self.side], side_var[self.side]
            p_win = 1.0
            for sd, v in side_pips.items():
                if sd != self.side:
                    p_win *= _phi((v - ours) / math.sqrt(max(1.0, side_var[sd] + our_var)))
        else:
            mine_best = min(p for s, p in seat_pips.items() if self.is_partner(s))
            p_win = 1.0
            for s in self.others:
                if not self.is_partner(s):
                    sd_var = max(1.0, self.variance[s])
                    p_win *= _phi((self.expected[s] - mine_best) / math.sqrt(sd_var))
        total = sum(side_pips.values())
        ours = side_pips[self.side]
        if r.block_points is Points.ONE:
            win_pts, lose_pts = 1.0, 1.0
        elif r.block_points is Points.ALL_PIPS:
            win_pts = lose_pts = total
        else:
            win_pts = total - ours
            lose_pts = ours  # roughly: what the winning side would count from us
        return p_win * win_pts - (1 - p_win) * lose_pts

    def bonus_worth(self, last: Tile, nl: int, nr: int) -> float:
        """How much a finish bonus on ``last`` (played on ends nl/nr) would add, as a
        fraction of the hand's value (1 = doubles it)."""
        worth = 0.0
        for b in self.ruleset.finish_bonus:
            if not b.applies(last, nl, nr):
                continue
            if b.effect.kind is EffectKind.MULTIPLY:
                worth += b.effect.amount - 1
            else:
                worth += b.effect.amount / max(1.0, self.unit)
        return worth


def _phi(x: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


# (the compiled build cannot unpickle a frozen dataclass field by field)
by_constructor(Weights)
