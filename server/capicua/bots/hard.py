"""``hard``: Monte Carlo search over worlds consistent with what the seat has seen.

See docs/bots.md for how it thinks and how to tune it.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from _random import Random as _CRandom  # random.Random's base, in C
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from capicua.bots import draws
from capicua.bots.evaluation import utility
from capicua.bots.exact import ExactSearch, TooBig
from capicua.bots.inference import (
    Group,
    Knowledge,
    PlayLikelihoods,
    World,
    WorldSampler,
    infer,
    one_hand_game,
)
from capicua.bots.medium import redeal_choice
from capicua.bots.policy import AWARE, GREEDY, OWN, RANDOM, Simulator
from capicua.engine.actions import DEFER, Action
from capicua.engine.game import Game, MatchState, Phase, RawEvent
from capicua.engine.observation import Observation, raw_event_for_seat
from capicua.engine.seeds import derive

DEFAULT_BUDGET_MS = 200.0

# Re-seeding the rollout generator every iteration through the C method: random.Random's
# own ``seed`` is Python code (interpreted even in the compiled build) that, for an int,
# only calls this and clears the state of ``gauss``, which the rollouts never call.
_reseed: Final = _CRandom.seed


def decision_seed(seed: int, obs: Observation) -> int:
    """A seed for one decision, from the bot's seed and the position (so the same
    position with the same seed and iteration budget always gives the same move)."""
    return derive(
        repr((seed, obs.seat, obs.hand, obs.attempt, obs.tiles, obs.events, obs.scores, obs.ends))
    )


#: hard's numeric options: (int or float, minimum, None allowed).
NUMBERS: dict[str, tuple[type, float, bool]] = {
    "budget_ms": (float, 0, True),
    "iterations": (int, 1, True),
    "epsilon": (float, 0, False),
    "exploration": (float, 0, False),
    "batch": (int, 1, False),
    "hand_weight": (float, 0, False),
    "greedy_prior": (float, 0, False),
    "own_epsilon": (float, 0, True),
    "expand": (int, 0, False),
    "endgame": (int, 0, False),
}
#: hard's options that are one of a few words.
WORDS: dict[str, tuple[str, ...]] = {
    "search": ("tree", "flat"),
    "rollout": ("model", "random"),
    "opponents": ("infer", "random", "greedy"),
    "inference": ("soft", "hard", "uniform"),
    "own_rollout": ("greedy", "aware"),
    "final": ("visits", "mean", "lcb"),
    "keys": ("public", "own"),
}


def check_options(options: Mapping[str, Any]) -> None:
    """Refuse an option ``hard`` does not take (TypeError) or a value it cannot use
    (ValueError), named: a bad value from a tournament file or --option fails before the
    bot is built (:func:`capicua.bots.make_bot` calls this first), not in the middle of a
    match, and in the same words in both builds (the compiled class checks its arguments'
    types itself, before any line of its own runs)."""
    for name, value in options.items():
        if name in NUMBERS:
            _check_number(name, value, *NUMBERS[name])
        elif name in WORDS:
            if value not in WORDS[name]:
                raise ValueError(f"hard: {name} must be one of {', '.join(WORDS[name])}")
        else:
            known = ", ".join(sorted(NUMBERS.keys() | WORDS.keys()))
            raise TypeError(f"hard: unknown option {name!r} (known: {known})")
    if not options.get("budget_ms", DEFAULT_BUDGET_MS) and options.get("iterations") is None:
        raise ValueError("hard: needs a time budget, an iteration budget, or both")


def _check_number(name: str, value: Any, kind: type, low: float, optional: bool) -> None:
    if value is None and optional:
        return
    ok = isinstance(value, int) if kind is int else isinstance(value, int | float)
    if isinstance(value, bool) or not ok:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"hard: {name} must be {what}, got {value!r}")
    if value < low:
        raise ValueError(f"hard: {name} must be at least {low:g}, got {value!r}")


class _Node:
    """One of my decision points in the search tree (an information set of mine: the
    public history since the root)."""

    __slots__ = ("visits", "totals", "avail", "children", "arrivals")

    def __init__(self) -> None:
        self.arrivals = 0  # iterations that reached it
        self.visits: dict[int, int] = {}
        self.totals: dict[int, float] = {}
        self.avail: dict[int, int] = {}
        self.children: dict[tuple[object, ...], _Node] = {}


class HardBot:
    """Information-set Monte Carlo tree search over sampled worlds (see docs/bots.md).

    ``budget_ms``: wall time per decision (None or 0: no time limit; 0 is what a TOML file
    or ``--option budget_ms=0`` can say); ``iterations``: sampled
    worlds per decision (None: no limit); at least one must be set, and with a seed and
    ``iterations`` the same position always gives the same move. The other options are for
    experiments; the defaults are the measured best: ``search`` ("tree" or "flat"),
    ``rollout`` ("model": every seat by its model; "random": all random, the engine's fast
    path), ``opponents`` (the other seats' model: "infer" from their play, "random",
    "greedy"), ``inference`` ("soft": weigh worlds by the other seats' choices; "hard":
    voids and counts only; "uniform": counts only), ``epsilon`` (random share of the greedy
    model), ``exploration`` (UCB constant), ``batch`` (worlds per resampling batch),
    ``hand_weight`` (an extra reward for winning the hand, in units of the target),
    ``greedy_prior`` (the prior chance that the other seats play by the greedy model),
    ``own_rollout`` (how my side plays in rollouts: "greedy"; "aware": greedy plus a bonus
    for ends the next seat may have nothing for, by what I know) and ``own_epsilon`` (the
    random share of my side's rollout policy; None: ``epsilon``), ``expand`` (how many
    times a decision of mine below the root is reached, and played by the rollout policy,
    before it is searched) and ``endgame`` (late in a hand, every sampled world solved
    exactly instead of the tree search, while one world takes at most this many
    positions; 0: never; see :meth:`_Search.exact`), ``final`` (the root action played:
    "visits", "mean" or "lcb", see :func:`pick_root`) and ``keys`` (what tells my
    decisions in the tree apart: "public", the public history since the root; "own", my
    own actions only, an open-loop tree).
    """

    name: ClassVar[str] = "hard"  # a class attribute: the compiled build reads it off the class

    def __init__(
        self,
        seed: int | None = None,
        *,
        budget_ms: float | None = DEFAULT_BUDGET_MS,
        iterations: int | None = None,
        search: str = "tree",
        rollout: str = "model",
        opponents: str = "infer",
        inference: str = "soft",
        epsilon: float = 0.2,
        exploration: float = 1.5,
        batch: int = 32,
        hand_weight: float = 0.0,
        greedy_prior: float = 0.5,
        own_rollout: str = "greedy",
        own_epsilon: float | None = None,
        expand: int = 0,
        endgame: int = 0,
        final: str = "visits",
        keys: str = "public",
    ) -> None:
        check_options(
            {
                "budget_ms": budget_ms,
                "iterations": iterations,
                "search": search,
                "rollout": rollout,
                "opponents": opponents,
                "inference": inference,
                "epsilon": epsilon,
                "exploration": exploration,
                "batch": batch,
                "hand_weight": hand_weight,
                "greedy_prior": greedy_prior,
                "own_rollout": own_rollout,
                "own_epsilon": own_epsilon,
                "expand": expand,
                "endgame": endgame,
                "final": final,
                "keys": keys,
            }
        )
        budget_ms = budget_ms or None
        self.seed = seed
        self.budget_ms = budget_ms
        self.iterations = iterations
        self.search = search
        self.rollout = rollout
        self.opponents = opponents
        self.inference = inference
        self.epsilon = epsilon
        self.exploration = exploration
        self.batch = batch
        self.hand_weight = hand_weight
        self.greedy_prior = greedy_prior
        self.own_rollout = own_rollout
        self.own_epsilon = own_epsilon
        self.expand = expand
        self.endgame = endgame
        self.final = final
        self.keys = keys
        self._entropy = random.Random(seed)
        self.last_iterations = 0
        self.last_search = ""  # how the last decision was searched: "exact", "tree", "flat"

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        if len(legal) == 1:
            return legal[0]
        obs = observation
        if obs.phase is Phase.REDEAL:
            return redeal_choice(obs, legal)
        start = time.perf_counter()
        seed = self.seed if self.seed is not None else self._entropy.getrandbits(63)
        ctx = _Search(self, obs, legal, random.Random(decision_seed(seed, obs)), start)
        best = ctx.exact() if self.endgame else None
        self.last_search = "exact"
        if best is None:
            best = ctx.tree() if self.search == "tree" else ctx.flat()
            self.last_search = self.search
        self.last_iterations = ctx.iterations
        return legal[best]


class _Search:
    """One decision's search."""

    def __init__(
        self,
        bot: HardBot,
        obs: Observation,
        legal: Sequence[Action],
        rng: random.Random,
        start: float,
    ) -> None:
        assert obs.seat is not None
        self.bot = bot
        self.obs = obs
        self.rng = rng
        self.me = obs.seat
        r = obs.ruleset
        self.ruleset = r
        self.game: Game = one_hand_game(r)
        table = self.game.table
        self.codes = [a.code(table) for a in legal]
        knowledge = infer(obs)
        if bot.inference == "uniform":
            knowledge = _forget(knowledge)
        self.knowledge = knowledge
        self.sampler = WorldSampler(knowledge)
        self.soft = bot.inference == "soft" and bool(knowledge.plays)
        # opponent models to sample with each world (see world())
        self.fixed_model = {"random": RANDOM, "greedy": GREEDY}.get(bot.opponents)
        self.side = r.side_of(self.me)
        self.mine = [r.side_of(s) == self.side for s in range(r.seats)]  # my side's seats
        # how likely each sampled world makes the other seats' plays (soft inference)
        self.likelihoods = PlayLikelihoods(knowledge, bot.epsilon, self.mine)
        self.before = obs.scores
        self.scores = list(obs.scores)
        self.can_defer = DEFER in self.codes
        self.deadline = start + bot.budget_ms / 1000.0 if bot.budget_ms is not None else None
        self.limit = bot.iterations
        self.iterations = 0
        self.all_random = bot.rollout == "random"
        self.sim = Simulator(self.game, bot.epsilon, bot.own_epsilon)
        self.own_model = AWARE if bot.own_rollout == "aware" else OWN
        # the tiles each seat may hold, as I know it (for the AWARE rollouts)
        self.possible: list[int] | None = None
        if self.own_model == AWARE:
            self.possible = [knowledge.may_hold(s) for s in range(r.seats)]
        self.models: list[int] = [RANDOM] * r.seats
        self.rr = random.Random()
        self._queue: list[tuple[World, int]] = []

    # -- common pieces --------------------------------------------------------------------

    def more(self) -> bool:
        """Whether the budget allows another iteration (always at least one)."""
        if self.limit is not None and self.iterations >= self.limit:
            return False
        return not (
            self.deadline is not None and self.iterations and time.perf_counter() >= self.deadline
        )

    def world(self) -> World:
        """The next sampled world, and the model the other seats play by in it
        (:attr:`models`, per seat). With soft inference, (world, model) pairs are
        resampled in proportion to how likely they make the other seats' observed choices;
        without it, worlds are uniform and the model is drawn 50/50 (or fixed)."""
        rng = self.rng
        if not self._queue:
            size = self.bot.batch
            batch = [self.sampler.sample(rng) for _ in range(size)]
            if self.soft:
                items: list[tuple[World, int]] = []
                weights: list[float] = []
                for w in batch:
                    like = self.likelihoods.of(w)
                    prior = self.bot.greedy_prior
                    for model, p in ((RANDOM, 1.0 - prior), (GREEDY, prior)):
                        if self.fixed_model is None or model == self.fixed_model:
                            items.append((w, model))
                            weights.append(like[model] * p)
                self._queue = _resample(items, weights, size, rng)
            else:
                prior = self.bot.greedy_prior
                self._queue = [
                    (
                        w,
                        self.fixed_model
                        if self.fixed_model is not None
                        else (GREEDY if rng.random() < prior else RANDOM),
                    )
                    for w in batch
                ]
        world, model = self._queue.pop()
        mine = self.mine
        own = self.own_model
        self.models = [own if mine[s] else model for s in range(len(mine))]
        if self.all_random:
            self.models = [RANDOM] * len(mine)
        return world

    def position(self, world: World) -> MatchState:
        # the world's masks as they are: no Tile objects made and turned back
        return self.game.new_position_of_masks(
            seed=0,
            hand=0,
            scores=self.scores,
            hands=world.hands,
            stock=world.stock,
            ends=self.obs.ends,
            turn=self.me,
            opener=self.obs.opener,
            last=self.knowledge.last,
            can_defer=self.can_defer,
        )

    def playout(self, state: MatchState) -> float:
        self.sim.run(state, self.models, self.rr)
        return utility(state, self.side, self.before, self.ruleset, self.bot.hand_weight)

    # -- perfect-information Monte Carlo, late in the hand -------------------------------

    def exact(self) -> int | None:
        """Every sampled world solved exactly (:class:`~capicua.bots.exact.ExactSearch`:
        my side at its best, the other seats by the world's model), each candidate's
        values summed over the worlds; the best sum wins (ties: the first legal action).
        None, with nothing counted, when the first world needs more than ``endgame``
        positions: the hand is not near enough its end, and the tree search decides. A
        later world that needs more ends the search with the worlds solved so far."""
        totals = [0.0] * len(self.codes)
        where = {code: i for i, code in enumerate(self.codes)}
        searches: dict[tuple[int, ...], ExactSearch] = {}
        cap = self.bot.endgame
        while self.more():
            world = self.world()
            state = self.position(world)
            search = searches.get(tuple(self.models))
            if search is None:
                search = searches[tuple(self.models)] = ExactSearch(
                    self.side, state.hand, self.leaf, self.models, self.bot.epsilon
                )
            before = search.positions
            search.limit = before + cap
            try:
                values = search.values(state)
            except TooBig:
                if not self.iterations:
                    return None
                break
            for code, value in zip(state.legal_actions(), values, strict=True):
                totals[where[code]] += value
            # A world costs what it valued (one position is about one rollout's work), so
            # an iteration budget buys about as much work on either path.
            self.iterations += max(1, search.positions - before)
        return max(range(len(self.codes)), key=lambda i: totals[i])

    def leaf(self, state: MatchState) -> float:
        return utility(state, self.side, self.before, self.ruleset, self.bot.hand_weight)

    # -- flat Monte Carlo -----------------------------------------------------------------

    def flat(self) -> int:
        """Every candidate rolled out once in each world (common random numbers)."""
        totals = [0.0] * len(self.codes)
        while self.more():
            world = self.world()
            sub = self.rng.getrandbits(32)
            for i, code in enumerate(self.codes):
                state = self.position(world)
                self.sim.start(state, world.hands, self.possible)
                state.apply(code)
                _reseed(self.rr, sub)
                totals[i] += self.playout(state)
            self.iterations += 1
        return max(range(len(self.codes)), key=lambda i: totals[i])

    # -- information-set tree search ------------------------------------------------------

    def tree(self) -> int:
        """Single-observer information-set MCTS: a tree over my own decisions, keyed by
        the public history; the other seats move by the default policy inside each
        sampled world; UCB1 (with availability counts) picks my moves."""
        root = _Node()
        me = self.me
        rng = self.rng
        c = self.bot.exploration
        expand = self.bot.expand
        # "own" keys: a child per action of mine only, whatever the other seats did since
        # (open loop: its statistics pool every reply, so my later decisions get more)
        public = self.bot.keys == "public"
        sq = 0.0
        n_all = 0
        sim = self.sim
        while self.more():
            world = self.world()
            state = self.position(world)
            sim.start(state, world.hands, self.possible)
            _reseed(self.rr, rng.getrandbits(32))
            rand = self.rr.random
            node = root
            path: list[tuple[_Node, int]] = []
            value: float | None = None
            scale = _spread(sq, n_all)
            while True:
                if state.is_terminal():
                    value = utility(
                        state, self.side, self.before, self.ruleset, self.bot.hand_weight
                    )
                    break
                seat = state.current_seat
                assert seat is not None
                legal = state.legal_actions()
                if seat != me:
                    sim.step(state, self.models[seat], rand)
                    continue
                node.arrivals += 1
                if node is not root and node.arrivals <= expand:
                    value = self.playout(state)  # not searched yet: my side by its model
                    break
                visits = node.visits
                avail = node.avail
                fresh = []
                for code in legal:
                    avail[code] = avail.get(code, 0) + 1
                    if code not in visits:
                        fresh.append(code)
                if fresh:
                    code = fresh[int(rng.random() * len(fresh))]
                    visits[code] = 0
                    node.totals[code] = 0.0
                    path.append((node, code))
                    state.apply(code)
                    value = self.playout(state)
                    break
                totals = node.totals
                best = legal[0]
                best_ucb = -math.inf
                for code in legal:
                    v = visits[code]
                    ucb = totals[code] / v + c * scale * math.sqrt(math.log(avail[code]) / v)
                    if ucb > best_ucb:
                        best_ucb = ucb
                        best = code
                path.append((node, best))
                mark = len(state.log.raw_events())
                state.apply(best)
                # play the other seats up to my next decision, then find that node
                while not state.is_terminal() and (seat := state.current_seat) != me:
                    assert seat is not None
                    sim.step(state, self.models[seat], rand)
                key = (best, *_public(state.log.raw_events()[mark:], me)) if public else (best,)
                child = node.children.get(key)
                if child is None:
                    child = node.children[key] = _Node()
                node = child
            for nd, code in path:
                nd.visits[code] += 1
                nd.totals[code] += value
            sq += value * value
            n_all += 1
            self.iterations += 1
        return pick_root(self.codes, root, self.bot.final, _spread(sq, n_all))


def _spread(sq: float, n: int) -> float:
    """The running scale of the rewards (root mean square of the ``n`` seen, whose squares
    sum to ``sq``), for the exploration term and the lower bound."""
    return max(math.sqrt(sq / n) if n > 1 else 0.3, 0.02)


def pick_root(codes: Sequence[int], root: _Node, final: str, scale: float) -> int:
    """The index in ``codes`` of the root action to play: the most visited ("visits",
    ties by the mean), the best mean ("mean", ties by the visits) or the best lower bound
    of the mean, two reward spreads (``scale``) over the root of its visits below it
    ("lcb"); unvisited actions last."""
    visits = root.visits
    totals = root.totals

    def rank(i: int) -> tuple[float, float]:
        v = visits.get(codes[i], 0)
        if not v:
            return (-math.inf, -math.inf)
        mean = totals[codes[i]] / v
        if final == "mean":
            return (mean, v)
        if final == "lcb":
            return (mean - 2.0 * scale / math.sqrt(v), v)
        return (v, mean)

    return max(range(len(codes)), key=rank)


def _public(events: Sequence[RawEvent], me: int) -> list[object]:
    """The events as ``me`` sees them (the engine's masking: other seats' draws without
    the tile): what tells two nodes of the search tree apart."""
    return [e for raw in events if (e := raw_event_for_seat(raw, me)) is not None]


def _resample(
    items: list[tuple[World, int]], weights: list[float], size: int, rng: random.Random
) -> list[tuple[World, int]]:
    """``size`` items drawn in proportion to ``weights`` (systematic resampling),
    shuffled; uniformly when every weight is 0."""
    total = sum(weights)
    if total <= 0:
        return [items[rng.randrange(len(items))] for _ in range(size)]
    step = total / size
    u = rng.random() * step
    acc = 0.0
    j = 0
    out: list[tuple[World, int]] = []
    for item, wt in zip(items, weights, strict=True):
        acc += wt
        while j < size and u + j * step < acc:
            out.append(item)
            j += 1
    while len(out) < size:  # rounding
        out.append(items[-1])
    draws.shuffle(rng, out)
    return out


def _forget(k: Knowledge) -> Knowledge:
    """``k`` without any constraint but the tile counts (uniform sampling: for
    comparisons only)."""
    groups = tuple(Group(g.seat, g.count, 0) for g in k.groups)
    return dataclasses.replace(k, groups=groups, plays=())
