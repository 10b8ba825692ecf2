"""``capicua arena sprt``: play duplicate sets of a candidate bot against a base bot until the
sequential test decides (the statistics are :mod:`capicua.arena.sprt`).

The test is a two-bot gauntlet: set ``k`` is one deal (``deal_seed(seed, k)``) played twice
with the sides swapped, as every arena set is; its two results, from the candidate's side
(win 1, no winner ½, loss 0), make one pair score of the pentanomial. The results are an
arena results directory (``capicua arena standings DIR`` and ``arena report DIR`` work on
it), plus ``sprt.json`` with the hypotheses, which a resumed run must repeat.

The decision is taken over the longest run of complete sets *in schedule order*, never over
whichever sets happened to finish first, so the same bots and seed stop at the same set
whatever the concurrency; sets still in flight when the test decides are finished and kept
but do not change the decision.

The test is a study of the one run (:mod:`capicua.arena.study`): its plan is the
gauntlet's sets, its stopping rule :class:`SprtStop` (the test over the stored sets,
checked after every commit), its analysis the :class:`Scoreboard` read from the results.
Built-in bots play on the in-process backend (``workers`` processes), anything else over
the protocol on an embedded server, exactly as a tournament (crashes, forfeits, resume).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capicua.common.errors import CapicuaError
from capicua.engine.rules import parse_assignment

from . import sprt
from .backend import LOCAL, Backend
from .config import (
    LIBRARY_BOTS,
    BotSpec,
    Tournament,
    TournamentError,
    bot_from_text,
    check_library_options,
    check_library_rules,
    check_matches,
)
from .inprocess import LocalPlay
from .local import builtin_options, check_builtin_options
from .output import Display, disqualified_lines
from .ratings import bot_places, pair_score
from .run import run_to_end
from .schedule import schedule
from .store import DB_NAME, MatchRow, Results, Where, locked
from .study import Study

CANDIDATE, BASE = "candidate", "base"
SPRT_FILE = "sprt.json"
#: The schedule's nominal length: the test stops long before (``max_pairs``); a longer test
#: of the same hypotheses resumes in the same directory.
NOMINAL_GAMES = 1_000_000
DEFAULT_MAX_PAIRS = sprt.DEFAULT_MAX_PAIRS
MODELS = sprt.MODELS


#: The largest Elo difference a hypothesis may name: at 1,000 Elo the stronger side scores
#: 99.7% (logistic), beyond it the test's arithmetic loses its meaning (and its precision).
MAX_ELO = 1000.0


class SprtError(CapicuaError):
    """The test cannot run as asked; the message names the option."""


@dataclass(frozen=True)
class SprtConfig:
    """The hypotheses and error rates of one test (``sprt.json``)."""

    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: str

    def canonical(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SprtRun:
    """Everything one ``capicua arena sprt`` needs."""

    tournament: Tournament
    test: SprtConfig
    max_pairs: int
    options: Mapping[str, Mapping[str, Any]]  # bot name -> built-in options (in-process)
    workers: int = 1

    @property
    def in_process(self) -> bool:
        return all(b.kind == "builtin" for b in self.tournament.bots)


def build_run(
    *,
    base: BotSpec,
    candidate: BotSpec,
    preset: str,
    overrides: Sequence[str],
    ruleset: Any,
    test: SprtConfig,
    max_pairs: int,
    seed: int,
    concurrency: int,
    workers: int,
    time_limit_ms: int,
    server: str | None,
    base_dir: Path,
    options: Mapping[str, Mapping[str, Any]],
) -> SprtRun:
    """Validate the pieces of a test (its match settings as a ``[matches]`` table's)."""
    check_matches(
        SprtError, seed=seed, concurrency=concurrency, time_limit_ms=time_limit_ms, server=server
    )
    if ruleset.num_sides != 2:
        raise SprtError(
            f"--rules: {ruleset.name} has {ruleset.num_sides} sides; an SPRT compares two bots "
            "over pairs of matches with the sides swapped, so it needs two sides (a "
            "one-against-one or a team preset)"
        )
    if test.model not in MODELS:
        raise SprtError(f"--model: expected one of {', '.join(MODELS)}, got {test.model!r}")
    for name, value in (("--elo0", test.elo0), ("--elo1", test.elo1)):
        if not -MAX_ELO <= value <= MAX_ELO:  # also refuses nan and inf
            raise SprtError(
                f"{name}: expected an Elo difference from -{MAX_ELO:g} to {MAX_ELO:g}, "
                f"got {value:g}"
            )
    if not test.elo0 < test.elo1:
        raise SprtError(f"--elo0/--elo1: elo0 must be below elo1, got {test.elo0} and {test.elo1}")
    for name, value in (("--alpha", test.alpha), ("--beta", test.beta)):
        if not 0 < value < 0.5:
            raise SprtError(f"{name}: expected a probability between 0 and 0.5, got {value}")
    if not 1 <= max_pairs <= NOMINAL_GAMES:
        raise SprtError(f"--max-pairs: expected 1 to {NOMINAL_GAMES}, got {max_pairs}")
    if server is None and "remote" in (base.kind, candidate.kind):
        raise SprtError("a remote: bot needs --server HOST:PORT (where it plays)")
    try:
        check_library_rules((base, candidate), ruleset)
    except ValueError as e:
        raise SprtError(f"--rules: {e}") from None
    if not all(b.kind == "builtin" for b in (base, candidate)):
        # Over the protocol the options travel with each bot's process (--option), as a
        # tournament file's do; in-process they are given to the factory directly.
        base, candidate = (_with_options(b, options.get(b.name, {})) for b in (base, candidate))
    t = Tournament(
        name=f"sprt {candidate.spec} vs {base.spec}",
        preset=preset,
        overrides=tuple(overrides),
        ruleset=ruleset,
        format="gauntlet",
        candidate=CANDIDATE,
        games=NOMINAL_GAMES,
        seed=seed,
        concurrency=concurrency,
        time_limit_ms=time_limit_ms,
        on_timeout="forfeit",
        max_crashes=3,
        server=server,
        bots=(candidate, base),
        base_dir=base_dir,
    )
    return SprtRun(t, test, max_pairs, options, workers)


def _with_options(bot: BotSpec, options: Mapping[str, Any]) -> BotSpec:
    """``bot`` carrying the options it plays with over the protocol (built-ins: the test's
    defaults, e.g. hard's fixed iterations, plus the command line's)."""
    if bot.kind == "builtin":
        options = builtin_options(bot.target, options)
    return dataclasses.replace(bot, options=dict(options)) if options else bot


# -- the statistics over stored results -------------------------------------------------------


def candidate_score(match: MatchRow) -> float:
    """The candidate's score in one counted match: 1 won, ½ no winner, 0 lost."""
    return pair_score(bot_places(match), CANDIDATE, BASE)


class Scoreboard:
    """The test over the sets recorded so far: fed finished matches in any order, it counts
    the longest run of complete sets in schedule order and checks the test after each set,
    so it stops at the same set whatever order the matches finished in."""

    def __init__(self, test: SprtConfig, max_pairs: int) -> None:
        self.test = test
        self.max_pairs = max_pairs
        self.next_seq = 0  # the first set not yet counted
        self.scores: list[float] = []  # pair scores of the counted sets, in order
        self.skipped = 0  # sets left out: a match of them was cancelled
        self._pending: dict[int, dict[str, MatchRow]] = {}
        self.status = self._status()

    def _status(self) -> sprt.SprtStatus:
        t = self.test
        counts = sprt.pentanomial(self.scores)
        return sprt.status(counts, t.elo0, t.elo1, t.alpha, t.beta, t.model)

    @property
    def counts(self) -> list[int]:
        return sprt.pentanomial(self.scores)

    @property
    def pairs(self) -> int:
        return len(self.scores)

    @property
    def done(self) -> bool:
        """Decided, or ``max_pairs`` sets counted: a run stopped before either (Ctrl-C, a
        failure) leaves the test incomplete."""
        return self.status.decision is not None or self.pairs >= self.max_pairs

    def add(self, rows: Sequence[MatchRow]) -> None:
        for row in rows:
            if row.seq >= self.next_seq:
                self._pending.setdefault(row.seq, {})[row.key] = row
        while not self.done and len(self._pending.get(self.next_seq, ())) >= 2:
            ms = list(self._pending.pop(self.next_seq).values())
            self.next_seq += 1
            if any(m.termination == "cancelled" for m in ms):
                self.skipped += 1
                continue
            self.scores.append(sum(candidate_score(m) for m in ms))
            self.status = self._status()


def stored_scoreboard(
    rows: Sequence[MatchRow], test: SprtConfig, max_pairs: int = NOMINAL_GAMES
) -> Scoreboard:
    """The test over every set of the stored matches ``rows``: what the command prints at
    its end and what the report shows, counted the one way from the same data."""
    board = Scoreboard(test, max_pairs)
    board.add(rows)
    return board


# -- the test as a stopping rule of the one run ----------------------------------------------


def _sprt_file(out: Where) -> Path:
    """The file of the test's hypotheses beside its results (a directory's alone)."""
    if not isinstance(out, Path):
        raise SprtError(f"{out}: an SPRT keeps its results in a directory")
    return out / SPRT_FILE


class SprtStop:
    """The SPRT as the run's stopping rule: once its :class:`Scoreboard` of the stored sets
    decides (or counts ``max_pairs``), no new set starts; ``sprt.json`` keeps its
    hypotheses, which a resumed run must repeat."""

    def __init__(self, test: SprtConfig, max_pairs: int) -> None:
        self.test = test
        self.board = Scoreboard(test, max_pairs)

    def bind(self, out: Where) -> None:
        """Record the hypotheses on first use, or check a resumed run repeats them."""
        # the run holds the lock of `out` and has opened the results in it (both refuse a
        # directory that cannot be written, creating nothing)
        path = _sprt_file(out)
        wanted = self.test.canonical()
        if not path.is_file():
            try:
                path.write_text(json.dumps(wanted, sort_keys=True) + "\n", encoding="utf-8")
            except OSError as e:  # a full disk, or the directory made read-only since
                # (a half-written file goes with the empty results, in discard())
                raise SprtError(f"cannot write results to {out}: {e.strerror or e}") from None
            return
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SprtError(f"{path}: unreadable ({e}); use another --out") from None
        if stored != wanted:
            changed = sorted(k for k in wanted if stored.get(k) != wanted[k])
            raise SprtError(
                f"{out} holds a test with other hypotheses (it differs in: {', '.join(changed)}); "
                "use another --out"
            )

    def discard(self, out: Where) -> None:
        _sprt_file(out).unlink(missing_ok=True)

    def update(self, results: Results) -> bool:
        self.board.add(results.matches(from_seq=self.board.next_seq))
        return self.board.done


@dataclass(frozen=True)
class SprtResult:
    """How a run of the test ended: its state, and why it stopped short of a decision."""

    board: Scoreboard
    interrupted: bool  # Ctrl-C or SIGTERM before the test was done
    #: bot name -> why it was disqualified (in this run or an earlier one): the test cannot
    #: go on in this directory, and every rerun says so again
    disqualified: dict[str, str]

    @property
    def stopped(self) -> bool:
        """Whether the run ended before the test was done, for a reason other than an
        interrupt (a disqualified bot, matches that did not finish)."""
        return not self.board.done and not self.interrupted


def run_sprt(
    run: SprtRun,
    out: Path,
    display: Callable[[Scoreboard], Display] | None = None,
    backend: Backend = LOCAL,
) -> SprtResult:
    """Play until the test decides or ``max_pairs`` sets are counted; resumable (on either
    backend). ``display`` makes what the person watching sees from the test's scoreboard."""
    stop = SprtStop(run.test, run.max_pairs)
    t = run.tournament
    study = Study.of(t, schedule(dataclasses.replace(t, games=run.max_pairs)), stop)
    local = LocalPlay(run.workers, run.options) if run.in_process else None
    shown = display(stop.board) if display is not None else None
    with locked(out):
        arena = backend.arena(t, out, shown, study=study, in_process=local, lock=False)
        summary = run_to_end(arena, SprtError, "the sets recorded so far")
        # what the run's own bookkeeping saw may lag the directory: an interrupt between a
        # set's commit and its count leaves sets stored but not counted (the report, reading
        # the directory, said 27 where the command said 24): the figures printed at the end
        # are the stored sets'
        board = stop.board
        if (out / DB_NAME).is_file():
            results = Results.open_existing(out)
            try:
                board = stored_scoreboard(results.matches(), run.test, run.max_pairs)
            finally:
                results.close()
    return SprtResult(board, summary.interrupted, summary.disqualified)


# -- what the command line reads and prints ---------------------------------------------


def parse_bot(option: str, text: str, name: str) -> BotSpec:
    """The bot of ``--base``/``--candidate``: a built-in name or an arena spec."""
    try:
        return bot_from_text(name, text, option)
    except TournamentError as e:
        raise SprtError(str(e)) from None


def parse_options(option: str, items: Sequence[str], bot: BotSpec) -> dict[str, Any]:
    """The ``KEY=VALUE`` items of ``--base-option``/``--candidate-option``, checked."""
    out: dict[str, Any] = {}
    for item in items:
        key, value = parse_assignment(item)
        out[key] = value
    if out and bot.kind not in ("builtin", "python", *LIBRARY_BOTS):
        raise SprtError(
            f"{option}: options are for builtin:, python:, openspiel: and dominoes: bots; put "
            "a command's arguments in the command"
        )
    try:
        if bot.kind == "builtin":
            check_builtin_options(bot.target, out)
        elif bot.kind in LIBRARY_BOTS:
            check_library_options(bot, out)
    except (TypeError, ValueError) as e:
        raise SprtError(f"{option}: {e}") from None
    return out


def status_dict(result: SprtResult, run: SprtRun) -> dict[str, Any]:
    """The machine-readable state of the test (``--json``): ``complete`` is false until it
    decides or counts ``max_pairs`` sets; ``disqualified`` maps a disqualified bot
    (``base``/``candidate``) to the reason, which ends the test without a decision.

    Intervals the pairs cannot support are null (the estimate's small-sample rule:
    ``small_sample`` is then true and ``elo_ci95`` is a Wilson interval); ``expected_pairs``
    is what the test plays on average if the truth is elo0, or elo1 (:func:`expected`)."""
    board = result.board
    st = board.status
    est = st.estimate
    return {
        "complete": board.done,
        "disqualified": result.disqualified,
        "decision": st.decision,
        "llr": round(st.llr, 4),
        "bounds": [round(st.lower, 4), round(st.upper, 4)],
        "pairs": board.pairs,
        "pentanomial": board.counts,
        "skipped_pairs": board.skipped,
        "elo0": run.test.elo0,
        "elo1": run.test.elo1,
        "alpha": run.test.alpha,
        "beta": run.test.beta,
        "model": run.test.model,
        "elo": _round(est.elo),
        "elo_ci95": [_round(v) for v in est.elo_ci95],
        "nelo": _round(est.nelo),
        "nelo_ci95": [_round(v) for v in est.nelo_ci95],
        "los": _round(est.los),
        "score": _round(est.score),
        "max_pairs": run.max_pairs,
        "small_sample": est.small_sample,
        "expected_pairs": expected(run.test),
    }


def _round(x: float) -> float | None:
    return round(x, 3) if math.isfinite(x) else None


def expected(test: SprtConfig) -> dict[str, int | None]:
    """The average pairs of the test if the candidate is truly elo0, or elo1, stronger
    (:func:`sprt.expected_pairs`: Wald's approximation for pair scores spread as hard's
    against medium's, without ``max_pairs``); None where the approximation has no answer
    (a hypothesis no pentanomial of that spread reaches)."""
    out: dict[str, int | None] = {}
    for key, truth in (("at_elo0", test.elo0), ("at_elo1", test.elo1)):
        try:
            n = sprt.expected_pairs(test.elo0, test.elo1, truth, test.alpha, test.beta, test.model)
        except (ValueError, ArithmeticError):
            out[key] = None
            continue
        out[key] = round(n) if math.isfinite(n) else None
    return out


def about(n: int | None) -> str:
    """``n`` to two significant digits, with thousands separators (``3,200``)."""
    if n is None:
        return "?"
    digits = len(str(n))
    return f"{round(n, 2 - digits) if digits > 2 else n:,}"


def header(run: SprtRun, where: str, out: Path) -> str:
    """The line ``capicua arena sprt`` starts with: the test, its LLR bounds, the pairs it
    is expected to take at either hypothesis, where it plays and where the results go."""
    t = run.test
    lower, upper = sprt.bounds(t.alpha, t.beta)
    bounds = f"±{upper:.2f}" if math.isclose(-lower, upper) else f"{lower:+.2f}, {upper:+.2f}"
    n = expected(t)
    cap = f"at most {run.max_pairs:,}"
    if any(v is not None and v > run.max_pairs for v in n.values()):
        cap = f"more than --max-pairs {run.max_pairs:,}: likely undecided"
    cand, base = (run.tournament.bot(name).spec for name in (CANDIDATE, BASE))
    return (
        f"SPRT {cand} vs {base} on {run.tournament.preset}: H0 {t.elo0:g}, H1 {t.elo1:g} "
        f"({t.model}), alpha {t.alpha:g}, beta {t.beta:g}, LLR bounds {bounds}; expected "
        f"pairs ~{about(n['at_elo0'])} at elo0, ~{about(n['at_elo1'])} at elo1 ({cap}); "
        f"{where}; results in {out}"
    )


#: A progress line stays within this many columns for tests of up to 100,000 pairs, so a
#: terminal shows one line per update (the bounds are in the header line, once).
STATUS_WIDTH = 100


def status_line(board: Scoreboard) -> str:
    """``pairs 152 [14 0 67 0 71]  LLR +2.98  Elo +137 [+97, +181]  nElo +142 ±47``: the
    pairs and their pentanomial, the LLR, and the estimates with their 95% intervals (nElo's
    is symmetric: ``±`` its half-width, ``±n/a`` under the small-sample rule); one decimal
    where the interval is narrower than 20. Short, so that it fits a terminal's line."""
    st = board.status
    est = st.estimate
    penta = " ".join(map(str, board.counts))
    return (
        f"pairs {board.pairs:,} [{penta}]  LLR {st.llr:+.2f}  "
        f"Elo {_interval(est.elo, est.elo_ci95)}  nElo {_plus_minus(est.nelo, est.nelo_ci95)}"
    )


def _decimals(lo: float, hi: float) -> int:
    return 1 if hi - lo < 20 else 0


def _interval(value: float, ci: tuple[float, float]) -> str:
    if not math.isfinite(value):
        return "n/a"
    if not all(math.isfinite(v) for v in ci):
        return f"{value:+.0f} [n/a]"
    d = _decimals(*ci)
    return f"{value:+.{d}f} [{ci[0]:+.{d}f}, {ci[1]:+.{d}f}]"


def _plus_minus(value: float, ci: tuple[float, float]) -> str:
    """A symmetric interval (nElo's, by the delta method) as ``value ±half``."""
    if not math.isfinite(value):
        return "n/a"
    if not all(math.isfinite(v) for v in ci):
        return f"{value:+.0f} ±n/a"
    d = _decimals(*ci)
    return f"{value:+.{d}f} ±{(ci[1] - ci[0]) / 2:.{d}f}"


def labels(run: SprtRun) -> dict[str, str]:
    """``candidate (python:crashbot:LateCrash)``: the two bots by role and spec."""
    return {b.name: f"{b.name} ({b.spec})" for b in run.tournament.bots}


def verdict(result: SprtResult, run: SprtRun) -> list[str]:
    """What the test concluded, for stdout: a disqualification first, with its cause."""
    board = result.board
    decision = board.status.decision
    if decision == "H1":
        return [
            f"H1 accepted: the candidate is stronger (elo1 = {run.test.elo1:g} {run.test.model} "
            f"Elo) after {board.pairs} pairs"
        ]
    if decision == "H0":
        return [
            f"H0 accepted: the candidate is not stronger than elo0 = {run.test.elo0:g} "
            f"({run.test.model} Elo) after {board.pairs} pairs"
        ]
    if result.disqualified:
        return [
            *disqualified_lines(result.disqualified, labels(run)),
            f"no decision: the test stopped after {board.pairs:,} pairs of at most "
            f"{run.max_pairs:,} because a bot was disqualified; this directory cannot go on "
            "(fix the bot and start again with another --out)",
        ]
    if result.interrupted:
        return [
            f"incomplete: no decision yet after {board.pairs:,} pairs of at most "
            f"{run.max_pairs:,} (run the same command again to resume)"
        ]
    if not board.done:
        return [
            f"incomplete: no decision after {board.pairs:,} pairs of at most "
            f"{run.max_pairs:,}: the run stopped with matches unfinished (see the notes above; "
            "run the same command again to resume)"
        ]
    return [f"no decision after {board.pairs} pairs (--max-pairs {run.max_pairs})"]
