"""Ratings as pure functions of the results (as in fastchess: nothing is stored, the same
results always give the same numbers). The method is described in docs/arena.md, section
"Standings and ratings"; in short:

* **Placement.** In a counted match (every termination but ``cancelled``) the sides are
  placed by ``(forfeited, not the winner, -score)``, the engine's own ranking key, with
  equal keys sharing a place. A bot holding several sides of one match (a copy padding a
  small field) is placed by its best-placed side. Between two bots of a match the *pairwise
  score* is 1 (placed above), 0.5 (same place) or 0 (below); with two sides that is win 1,
  no winner 0.5, loss 0.
* **Elo over duplicate sets.** The unit is the duplicate set: for every pair of different
  bots in a set, the *set score* is the mean pairwise score over the set's counted matches.
  A Bradley-Terry (logistic Elo) model is fitted to these fractional results by maximum
  likelihood (Newton's method), with a weak prior of ``prior_draws`` draws (1 by default)
  for every bot against a virtual opponent rated 0, which keeps a bot that won or lost
  everything finite. Ratings are then shifted so that their mean is 0. The 95% interval is
  ``elo ± 1.96 sd`` where ``sd`` comes from a seeded bootstrap over sets (the tournament's
  sets resampled with replacement, each replicate fitted the same way), so it always
  contains the estimate and is reproducible.
* **openskill** (Plackett-Luce) over the counted matches in schedule order, each bot one
  team ranked by its placement; reported as mu, sigma and ordinal (mu - 3 sigma).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from capicua.engine.records import rank_key

ELO_PER_NAT = 400.0 / math.log(10.0)  # Elo points per logistic (natural-log) unit
ELO_CAP = 2000.0  # |elo| never exceeds this (only reachable with prior_draws=0)
Z95 = 1.959963984540054  # two-sided 95% normal quantile
DEFAULT_SAMPLES = 1000  # bootstrap resamples
DEFAULT_SEED = 20240611  # bootstrap seed: fixed, so the interval is a function of the results
MAX_DRAWS = 2_000_000  # resampled sets per computation, beyond which fewer samples are used
MIN_SAMPLES = 200


class MatchLike(Protocol):
    """What the ratings read of a match (:class:`capicua.arena.store.MatchRow` fits)."""

    @property
    def set_key(self) -> str: ...
    @property
    def sides(self) -> tuple[str, ...]: ...
    @property
    def termination(self) -> str: ...
    @property
    def winner_side(self) -> int | None: ...
    @property
    def scores(self) -> tuple[int, ...]: ...
    @property
    def forfeited_side(self) -> int | None: ...


def counted(match: MatchLike) -> bool:
    """Whether a match counts for statistics (cancelled matches do not)."""
    return match.termination != "cancelled"


def placements(match: MatchLike) -> tuple[int, ...]:
    """The place of every side, 0 first; equal places for equal ranking keys (a draw).

    The key is the engine's: a forfeited side last, then the winner first, then by score.
    Two sides with no winner are a draw whatever their scores."""
    n = len(match.sides)
    if n == 2 and match.winner_side is None:
        return (0, 0)
    scores = list(match.scores) + [0] * (n - len(match.scores))
    keys = [rank_key(side, match.winner_side, match.forfeited_side, scores) for side in range(n)]
    distinct = sorted(set(keys))
    return tuple(distinct.index(k) for k in keys)


def bot_places(match: MatchLike) -> dict[str, int]:
    """Each bot's place in a match: that of its best-placed side."""
    places: dict[str, int] = {}
    for side, place in enumerate(placements(match)):
        bot = match.sides[side]
        places[bot] = min(place, places.get(bot, place))
    return places


def pair_score(places: Mapping[str, int], a: str, b: str) -> float:
    """The pairwise score of bot ``a`` against bot ``b`` given their places."""
    if places[a] < places[b]:
        return 1.0
    if places[a] > places[b]:
        return 0.0
    return 0.5


@dataclass(frozen=True)
class PairGame:
    """Two different bots in one duplicate set: ``a`` < ``b`` by name; ``score`` is a's set
    score (mean pairwise score over ``matches`` counted matches)."""

    a: str
    b: str
    score: float
    matches: int


@dataclass(frozen=True)
class SetGames:
    """The pair games of one duplicate set; ``group`` is its distinct bots, sorted."""

    set_key: str
    group: tuple[str, ...]
    games: tuple[PairGame, ...]


def duplicate_sets(matches: Iterable[MatchLike]) -> list[SetGames]:
    """Group counted matches by set and score every pair of different bots in each set
    (sets sorted by key; a set with no counted match gives nothing)."""
    by_set: dict[str, list[MatchLike]] = {}
    for m in matches:
        if counted(m):
            by_set.setdefault(m.set_key, []).append(m)
    out: list[SetGames] = []
    for key in sorted(by_set):
        sums: dict[tuple[str, str], list[float]] = {}
        for m in by_set[key]:
            places = bot_places(m)
            bots = sorted(places)
            for i, a in enumerate(bots):
                for b in bots[i + 1 :]:
                    acc = sums.setdefault((a, b), [0.0, 0.0])
                    acc[0] += pair_score(places, a, b)
                    acc[1] += 1
        games = tuple(
            PairGame(a, b, total / count, int(count))
            for (a, b), (total, count) in sorted(sums.items())
        )
        group = tuple(sorted({name for g in games for name in (g.a, g.b)}))
        if games:
            out.append(SetGames(key, group, games))
    return out


# -- the Bradley-Terry fit -------------------------------------------------------------------


def _log_sigmoid(x: float) -> float:
    if x >= 0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


Pairs = dict[tuple[int, int], tuple[float, float]]  # (i, j), i < j -> (games, score of i)


def _loglik(theta: Sequence[float], pairs: Pairs, prior: float) -> float:
    total = 0.0
    for (i, j), (n, s) in pairs.items():
        d = theta[i] - theta[j]
        total += s * _log_sigmoid(d) + (n - s) * _log_sigmoid(-d)
    if prior > 0:
        for t in theta:
            total += prior * 0.5 * (_log_sigmoid(t) + _log_sigmoid(-t))
    return total


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(rhs)
    a = [row[:] + [rhs[r]] for r, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-300:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            if f:
                for c in range(col, n + 1):
                    a[r][c] -= f * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def _gradient(k: int, theta: Sequence[float], pairs: Pairs, prior: float) -> list[float]:
    """The gradient of the log posterior."""
    grad = [0.0] * k
    for (i, j), (n, s) in pairs.items():
        g = s - n * _sigmoid(theta[i] - theta[j])
        grad[i] += g
        grad[j] -= g
    if prior > 0:
        for i in range(k):
            grad[i] += prior * (0.5 - _sigmoid(theta[i]))
    return grad


def _derivatives(
    k: int, theta: Sequence[float], pairs: Pairs, prior: float
) -> tuple[list[float], list[list[float]]]:
    """The gradient of the log posterior and minus its Hessian (positive semi-definite)."""
    grad = [0.0] * k
    hess = [[0.0] * k for _ in range(k)]
    for (i, j), (n, s) in pairs.items():
        p = _sigmoid(theta[i] - theta[j])
        g = s - n * p
        w = n * p * (1.0 - p)
        grad[i] += g
        grad[j] -= g
        hess[i][i] += w
        hess[j][j] += w
        hess[i][j] -= w
        hess[j][i] -= w
    if prior > 0:
        for i in range(k):
            p = _sigmoid(theta[i])
            grad[i] += prior * (0.5 - p)
            hess[i][i] += prior * p * (1.0 - p)
    return grad, hess


def _fit(
    k: int,
    pairs: Pairs,
    prior: float,
    start: Sequence[float] | None = None,
) -> list[float]:
    """Maximum a posteriori logistic strengths of ``k`` players (natural units, unshifted).

    With ``prior`` = 0 the first player is held at 0 (the likelihood only fixes
    differences) and strengths are clamped to the cap if the data push them to infinity."""
    cap = ELO_CAP / ELO_PER_NAT
    theta = list(start) if start is not None else [0.0] * k
    free = list(range(k)) if prior > 0 else list(range(1, k))
    if not free:
        return theta
    grad, hess = _derivatives(k, theta, pairs, prior)
    for _ in range(100):
        g_free = [grad[i] for i in free]
        norm = max(abs(g) for g in g_free)
        if norm < 1e-10:
            break
        step = _solve([[hess[i][j] for j in free] for i in free], g_free)
        if step is None:
            break
        trial = theta[:]
        for idx, i in enumerate(free):
            trial[i] = max(-cap, min(cap, theta[i] + step[idx]))
        t_grad, t_hess = _derivatives(k, trial, pairs, prior)
        if max(abs(t_grad[i]) for i in free) >= norm:
            # a full step that does not shrink the gradient: backtrack on the posterior
            current = _loglik(theta, pairs, prior)
            t = 0.5
            while t > 1e-8:
                for idx, i in enumerate(free):
                    trial[i] = max(-cap, min(cap, theta[i] + t * step[idx]))
                if _loglik(trial, pairs, prior) > current:
                    break
                t /= 2
            else:
                break
            t_grad, t_hess = _derivatives(k, trial, pairs, prior)
        moved = max(abs(trial[i] - theta[i]) for i in free)
        theta, grad, hess = trial, t_grad, t_hess
        if moved < 1e-12:
            break
    return theta


Chord = tuple[list[int], list[list[float]]] | None  # free players, inverse of minus the Hessian


def _chord(k: int, theta: Sequence[float], pairs: Pairs, prior: float) -> Chord:
    """The inverse of minus the Hessian at ``theta`` (over the free players), for
    :func:`_refit`; None when it is singular."""
    free = list(range(k)) if prior > 0 else list(range(1, k))
    if not free:
        return None
    _, hess = _derivatives(k, theta, pairs, prior)
    matrix = [[hess[i][j] for j in free] for i in free]
    columns = []
    for c in range(len(free)):
        col = _solve(matrix, [1.0 if r == c else 0.0 for r in range(len(free))])
        if col is None:
            return None
        columns.append(col)
    return free, [[columns[c][r] for c in range(len(free))] for r in range(len(free))]


def _refit(k: int, pairs: Pairs, prior: float, start: Sequence[float], chord: Chord) -> list[float]:
    """The fit of a bootstrap replicate, started from the full data's fit: chord iterations
    with the full data's Hessian (cheap, and close enough to converge quickly), falling back
    to :func:`_fit` when they do not converge."""
    if chord is not None:
        free, inverse = chord
        cap = ELO_CAP / ELO_PER_NAT
        theta = list(start)
        last = math.inf
        for _ in range(30):
            grad = _gradient(k, theta, pairs, prior)
            g = [grad[i] for i in free]
            moved = 0.0
            for r, i in enumerate(free):
                step = sum(a * b for a, b in zip(inverse[r], g, strict=True))
                theta[i] = max(-cap, min(cap, theta[i] + step))
                moved = max(moved, abs(step))
            if moved < 1e-9:
                return theta
            if moved > 0.25 * last:  # converging slowly: finish with Newton
                return _fit(k, pairs, prior, start=theta)
            last = moved
    return _fit(k, pairs, prior, start=start)


def _to_elo(theta: Sequence[float]) -> list[float]:
    """Natural units to Elo, shifted to mean 0, clamped to the cap."""
    mean = sum(theta) / len(theta)
    return [max(-ELO_CAP, min(ELO_CAP, (t - mean) * ELO_PER_NAT)) for t in theta]


def fit_elo(
    games: Iterable[tuple[str, str, float]], *, prior_draws: float = 1.0
) -> dict[str, float]:
    """Elo ratings (mean 0) fitted to ``(a, b, score of a)`` results, each one game with a
    fractional score in [0, 1], plus ``prior_draws`` virtual draws of every player against a
    0-rated opponent. With ``prior_draws=0`` this is the plain maximum likelihood fit."""
    names: list[str] = []
    index: dict[str, int] = {}
    raw: list[tuple[int, int, float]] = []
    for a, b, s in games:
        if a == b:
            raise ValueError(f"a game needs two different players, got {a!r} twice")
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"a score is in [0, 1], got {s!r}")
        for name in (a, b):
            if name not in index:
                index[name] = len(names)
                names.append(name)
        raw.append((index[a], index[b], s))
    order = sorted(range(len(names)), key=lambda i: names[i])
    rank = {old: new for new, old in enumerate(order)}
    pairs: dict[tuple[int, int], list[float]] = {}
    for i, j, s in raw:
        i, j = rank[i], rank[j]
        if i > j:
            i, j, s = j, i, 1.0 - s
        acc = pairs.setdefault((i, j), [0.0, 0.0])
        acc[0] += 1
        acc[1] += s
    sorted_names = [names[i] for i in order]
    if not sorted_names:
        return {}
    theta = _fit(len(sorted_names), {p: (n, s) for p, (n, s) in pairs.items()}, prior_draws)
    return dict(zip(sorted_names, _to_elo(theta), strict=True))


@dataclass(frozen=True)
class Elo:
    """One bot's Elo (the field's mean is 0) and its 95% interval."""

    elo: float
    lo: float
    hi: float
    sets: int  # duplicate sets in which the bot met another bot


def _aggregate(sets: Iterable[SetGames], index: Mapping[str, int]) -> Pairs:
    acc: dict[tuple[int, int], list[float]] = {}
    for st in sets:
        for g in st.games:
            pair = acc.setdefault((index[g.a], index[g.b]), [0.0, 0.0])
            pair[0] += 1
            pair[1] += g.score
    return {p: (v[0], v[1]) for p, v in sorted(acc.items())}


def elo_ratings(
    sets: Sequence[SetGames],
    *,
    prior_draws: float = 1.0,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Elo]:
    """Elo with a 95% interval per bot from duplicate sets (see the module docstring).

    Every set's pair games count as one game each with the set score. The interval is
    ``elo ± 1.96 sd``, ``sd`` the standard deviation of the bot's rating over ``samples``
    bootstrap replicates (fewer for very large tournaments: at most ``MAX_DRAWS`` resampled
    sets in all, never fewer than ``MIN_SAMPLES`` replicates), each resampling all the sets
    with replacement (a ``random.Random(seed)``, sets in key order). Bots that met no other
    bot are absent."""
    names = sorted({name for st in sets for g in st.games for name in (g.a, g.b)})
    if not names:
        return {}
    index = {name: i for i, name in enumerate(names)}
    k = len(names)
    theta = _fit(k, _aggregate(sets, index), prior_draws)
    elo = _to_elo(theta)
    played = [0] * k
    for st in sets:
        for name in st.group:
            played[index[name]] += 1

    # every set as (pair index, set score) games; the sets are resampled with replacement
    pair_ids: dict[tuple[int, int], int] = {}
    members: list[list[tuple[int, float]]] = []
    for st in sorted(sets, key=lambda s: s.set_key):
        games = []
        for g in st.games:
            pair = (index[g.a], index[g.b])
            games.append((pair_ids.setdefault(pair, len(pair_ids)), g.score))
        members.append(games)
    pair_list = list(pair_ids)
    n_sets = len(members)
    if samples > 0 and n_sets * samples > MAX_DRAWS:
        samples = max(MIN_SAMPLES, MAX_DRAWS // n_sets)
    chord = _chord(k, theta, _aggregate(sets, index), prior_draws)
    rng = random.Random(seed)
    sums = [0.0] * k
    squares = [0.0] * k
    for _ in range(samples):
        count = [0.0] * len(pair_list)
        total = [0.0] * len(pair_list)
        for games in rng.choices(members, k=n_sets):
            for pid, score in games:
                count[pid] += 1
                total[pid] += score
        pairs = {pair_list[p]: (count[p], total[p]) for p in range(len(pair_list)) if count[p]}
        replicate = _to_elo(_refit(k, pairs, prior_draws, theta, chord))
        for i, r in enumerate(replicate):
            sums[i] += r
            squares[i] += r * r
    out: dict[str, Elo] = {}
    for i, name in enumerate(names):
        sd = 0.0
        if samples > 1:
            mean = sums[i] / samples
            sd = math.sqrt(max(0.0, (squares[i] - samples * mean * mean) / (samples - 1)))
        out[name] = Elo(elo[i], elo[i] - Z95 * sd, elo[i] + Z95 * sd, played[i])
    return out


# -- openskill ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Skill:
    """An openskill (Plackett-Luce) rating: ``ordinal`` = mu - 3 sigma."""

    mu: float
    sigma: float
    ordinal: float
    matches: int


class OnlineSkills:
    """Plackett-Luce ratings kept up to date as matches come (:meth:`fold`): folding
    matches in parts gives exactly what folding them at once gives, so a caller that reads
    results as they grow pays for the new matches only (a ladder's matchmaker)."""

    def __init__(self) -> None:
        from openskill.models import PlackettLuce

        self._model = PlackettLuce()
        self._played: dict[str, int] = {}
        self._current: dict[str, tuple[float, float]] = {}

    def fold(self, matches: Iterable[MatchLike]) -> None:
        """Rate ``matches`` after those folded before, in the order given (see
        :func:`openskill_ratings`)."""
        model = self._model
        for m in matches:
            if not counted(m):
                continue
            places = bot_places(m)
            if len(places) < 2:
                continue
            bots = sorted(places)
            teams = []
            for name in bots:
                mu, sigma = self._current.get(name, (model.mu, model.sigma))
                teams.append([model.rating(mu=mu, sigma=sigma, name=name)])
            rated = model.rate(teams, ranks=[float(places[name]) for name in bots])
            for name, team in zip(bots, rated, strict=True):
                self._current[name] = (float(team[0].mu), float(team[0].sigma))
                self._played[name] = self._played.get(name, 0) + 1

    def skills(self) -> dict[str, Skill]:
        """Every rated bot's rating now, by name."""
        return {
            name: Skill(mu, sigma, mu - 3.0 * sigma, self._played[name])
            for name, (mu, sigma) in sorted(self._current.items())
        }


def openskill_ratings(matches: Iterable[MatchLike]) -> dict[str, Skill]:
    """Plackett-Luce ratings over the counted matches, in the order given (the store's
    schedule order): each distinct bot of a match is one team ranked by its place (its
    best-placed side when it holds several; equal places are ties). Matches with fewer than
    two distinct bots change nothing."""
    online = OnlineSkills()
    online.fold(matches)
    return online.skills()


# -- rank bands --------------------------------------------------------------------------------


def rank_bands(intervals: Mapping[str, tuple[float, float]]) -> dict[str, tuple[int, int]]:
    """Each player's rank band from its 95% interval ``(lo, hi)``: the best rank is 1 plus
    the players whose interval lies wholly above its own, the worst is the field's size
    minus those wholly below. Players whose intervals overlap share ranks: they are tied,
    as far as the data tell (``#3-#5``)."""
    out: dict[str, tuple[int, int]] = {}
    for name, (lo, hi) in intervals.items():
        above = sum(1 for other, (o_lo, _) in intervals.items() if other != name and o_lo > hi)
        below = sum(1 for other, (_, o_hi) in intervals.items() if other != name and o_hi < lo)
        out[name] = (1 + above, len(intervals) - below)
    return out
