"""What an experiment is: its arms (rulesets), its bots, its unit and size, validated.

An experiment compares rulesets on the same deals. ``arms[0]`` is the base; every other arm
is a candidate compared with it (an A/B experiment has one candidate, a knob sweep one per
value after the first). The same object comes from the command line
(:func:`ab_experiment`, :func:`sweep_experiment`) or from a TOML file
(:func:`load_experiment`):

.. code-block:: toml

    name = "dominican capicua +25"
    unit = "hand"                 # or "match"
    pairs = 2000                  # pairs of hands (of matches at unit match)
    bots = ["hard"]               # one per seat, one per side, or one for every seat
    [matches]                     # as a tournament's (capicua.arena.config.Matches)
    seed = 1
    [base]
    preset = "dominican"
    [candidate]
    preset = "dominican"
    overrides = ["finish_bonus.capicua.effect=add:25"]
    [bot_options.hard]
    iterations = 200

or, for a sweep, ``[sweep]`` with ``preset``, ``overrides``, ``knob`` and ``values`` instead
of ``[base]``/``[candidate]``. Files written before ``[matches]`` still load: its keys at
the top level, and ``hands = N`` or ``matches = N`` for ``pairs``. The file is checked by a
declared schema (:class:`ExperimentFile`); every error is one line naming its key's path or
its option.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, NamedTuple

from pydantic import Field, model_validator

from capicua.bots import BUILTIN
from capicua.common import checks
from capicua.common.checks import Invalid
from capicua.common.errors import CapicuaError
from capicua.common.schema import (
    Checked,
    ConfigModel,
    integer,
    json_schema,
    one_of,
    parse,
    refuse,
    text,
    texts,
)
from capicua.engine.rules import Ruleset, load_preset, parse_assignment

from ..config import (
    WORKERS,
    BotSpec,
    StudyFile,
    TournamentError,
    bot_from_text,
    check_matches,
    load_file,
    study_rules,
)
from ..local import builtin_options, check_builtin_options

UNITS = ("hand", "match")
PLURAL = {"hand": "hands", "match": "matches"}
KINDS = ("ab", "sweep")
DEFAULT_PAIRS = {"hand": 1000, "match": 100}
MAX_PAIRS = 10_000_000
#: The override that makes a match one hand long (``unit = "hand"``).
ONE_HAND = "max_hands=1"
_LABEL = re.compile(r"^[^\s,]{1,40}$")


class ExperimentError(CapicuaError):
    """An experiment that cannot run as given; the message names the key or option."""


@dataclass(frozen=True)
class Arm:
    """One ruleset under test: a preset, its overrides and a short label."""

    label: str
    preset: str
    overrides: tuple[str, ...]
    ruleset: Ruleset  # as the user gave it (without the one-hand override)

    def played_overrides(self, unit: str) -> tuple[str, ...]:
        """The overrides its matches are played with: one hand long for ``unit = "hand"``."""
        return (*self.overrides, ONE_HAND) if unit == "hand" else self.overrides

    def canonical(self) -> dict[str, Any]:
        return {"label": self.label, "preset": self.preset, "overrides": list(self.overrides)}


class Play(NamedTuple):
    """One game of every pair: an arm's rules with the bot of every seat; a skill game
    also names its pairing and the side its stronger bot plays."""

    arm: int
    seats: tuple[str, ...]  # the built-in bot (or arena bot name) of every seat
    pairing: int | None = None  # index into Experiment.skill


def skill_plays(arms: int, skill: Sequence[tuple[str, str]], rules: Ruleset) -> tuple[Play, ...]:
    """The skill games of a pair: for every arm and (stronger, weaker) pairing, one game
    per side with the stronger bot on that side and the weaker on every other seat, on the
    pair's deal. Rotating the stronger bot through the sides is duplicate play: what the
    deal gives one side it gives the stronger bot once, so the deal's luck cancels out of
    its win rate and what is left is skill."""
    out = []
    for arm in range(arms):
        for i, (strong, weak) in enumerate(skill):
            for side in range(rules.num_sides):
                seats = tuple(strong if rules.side_of(s) == side else weak
                              for s in range(rules.seats))  # fmt: skip
                out.append(Play(arm, seats, i))
    return tuple(out)


DEFAULT_SKILL = "hard:random,medium:random"
#: The built-in bots from the weakest to the strongest: the default skill trace.
DEFAULT_TRACE = "random,easy,medium,hard"
SKILL_VS = " vs "  # between two bot specs of a pairing (a spec may hold colons itself)


def parse_skill(text: str) -> tuple[tuple[str, str], ...]:
    """(stronger, weaker) pairs of bots: ``hard:random,medium:random`` for built-in bots,
    ``STRONGER vs WEAKER`` for any bot specs (``python:mybot:Strong vs random``). Built-in
    bots are kept by their names (``hard``), any other bot by its spec."""
    out = []
    for item in split_list(text):
        pair = _skill_pair(item)
        if pair is None:
            raise ExperimentError(
                f"--skill-bots {item!r}: expected STRONGER:WEAKER with two built-in bots "
                f"({', '.join(sorted(BUILTIN))}), e.g. hard:random, or STRONGER vs WEAKER "
                "with any bot specs, e.g. 'python:mybot:Strong vs random'"
            )
        taken: dict[str, str] = {}
        strong, weak = (parse_bot(x, taken, "--skill-bots") for x in pair)
        if strong.spec == weak.spec:
            raise ExperimentError(f"--skill-bots {item!r}: a bot cannot play against itself")
        out.append((_skill_text(strong), _skill_text(weak)))
    if len(set(out)) != len(out):
        raise ExperimentError(f"--skill-bots {text!r}: a pairing is given twice")
    return tuple(out)


def parse_trace(text: str, where: str = "--skill-trace") -> tuple[str, ...]:
    """The levels of a skill trace, from the weakest to the strongest: built-in bots
    (``random,easy,medium,hard``) or any bot specs, kept as :func:`parse_skill` keeps them
    (built-in bots by their names, any other bot by its spec)."""
    taken: dict[str, str] = {}
    levels = tuple(_skill_text(parse_bot(x, taken, where)) for x in split_list(text))
    if len(levels) < 2:
        raise ExperimentError(
            f"{where} {text!r}: give at least two levels, weakest first (e.g. {DEFAULT_TRACE})"
        )
    if len(set(levels)) != len(levels):
        raise ExperimentError(f"{where} {text!r}: a level is given twice")
    return levels


def trace_rungs(levels: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The rungs of a skill trace: each level against the level below it, as a
    (stronger, weaker) pairing."""
    return tuple((levels[i], levels[i - 1]) for i in range(1, len(levels)))


def all_pairings(
    skill: Sequence[tuple[str, str]], levels: Sequence[str]
) -> tuple[tuple[str, str], ...]:
    """Every (stronger, weaker) pairing an experiment plays: those of ``--skill-bots``, then
    the trace's rungs that are not among them (a pairing is played once, whatever asks
    for it)."""
    return tuple(dict.fromkeys([*skill, *trace_rungs(levels)]))


def _skill_pair(item: str) -> tuple[str, str] | None:
    if SKILL_VS in item:
        strong, _, weak = item.partition(SKILL_VS)
    else:
        strong, colon, weak = (x.strip().lower() for x in item.partition(":"))
        if not colon or strong not in BUILTIN or weak not in BUILTIN:
            return None
    return (strong.strip(), weak.strip()) if strong.strip() and weak.strip() else None


def _skill_text(bot: BotSpec) -> str:
    return bot.target if bot.kind == "builtin" else bot.spec


def skill_bots(
    skill: Sequence[tuple[str, str]], seats: Sequence[BotSpec] = ()
) -> tuple[tuple[BotSpec, BotSpec], ...]:
    """The bots of every (stronger, weaker) pairing, named as the experiment's bots are
    (a spec that also plays a seat keeps that seat's name)."""
    taken = {b.name: b.spec for b in seats}
    return tuple((parse_bot(s, taken, "skill"), parse_bot(w, taken, "skill")) for s, w in skill)


def skill_names(skill: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Every pairing by its bots' short names (``hard``, ``python-mybot-Strong``): the
    skill metrics' names."""
    return tuple((s.name, w.name) for s, w in skill_bots(skill))


def trace_names(pairings: Sequence[tuple[str, str]], levels: Sequence[str]) -> tuple[str, ...]:
    """The levels of a trace by their short names, named as in ``pairings`` (every pairing
    the experiment plays, the trace's rungs among them: :func:`all_pairings`)."""
    named = {
        spec: name
        for pair, names in zip(pairings, skill_names(pairings), strict=True)
        for spec, name in zip(pair, names, strict=True)
    }
    return tuple(named[level] for level in levels)


@dataclass(frozen=True)
class Experiment:
    """A validated experiment. ``concurrency``, ``workers`` and ``server`` only change how
    fast it runs, never its results, so they are not part of its digest."""

    name: str
    kind: str  # "ab" or "sweep"
    arms: tuple[Arm, ...]
    unit: str
    pairs: int
    seed: int
    seats: tuple[BotSpec, ...]  # the bot of every seat (names repeat: one bot, many seats)
    bot_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    knob: str | None = None  # the swept knob
    time_limit_ms: int = 5000  # per decision, over the protocol
    concurrency: int = 4  # matches in flight, over the protocol
    workers: int = 1  # processes, in-process
    server: str | None = None  # a server for remote: bots (default: an embedded one)
    base_dir: Path = Path(".")
    #: (stronger, weaker) bots whose games on the same deals measure skill: built-in bots
    #: by name, any other bot by its spec (see :func:`parse_skill`)
    skill: tuple[tuple[str, str], ...] = ()
    #: the levels of a skill trace, weakest first (see :func:`parse_trace`): each is
    #: played against the level below it, as a pairing
    trace: tuple[str, ...] = ()

    @property
    def base(self) -> Arm:
        return self.arms[0]

    @property
    def candidates(self) -> tuple[Arm, ...]:
        return self.arms[1:]

    @property
    def pairings(self) -> tuple[tuple[str, str], ...]:
        """Every (stronger, weaker) pairing played: ``--skill-bots``'s and the trace's."""
        return all_pairings(self.skill, self.trace)

    @property
    def skill_bots(self) -> tuple[tuple[BotSpec, BotSpec], ...]:
        return skill_bots(self.pairings, self.seats)

    @property
    def in_process(self) -> bool:
        """Whether every bot (of the seats and of ``--skill``) is a built-in bot: then no
        server is involved."""
        return all(b.kind == "builtin" for b in self.bots)

    @property
    def bots(self) -> tuple[BotSpec, ...]:
        """Every distinct bot, in seat order, then those only ``--skill`` plays."""
        every = [*self.seats, *(b for pair in self.skill_bots for b in pair)]
        return tuple({b.name: b for b in every}.values())

    @property
    def plays(self) -> tuple[Play, ...]:
        """Every game a pair plays, in stored order: each arm with the experiment's bots,
        then with ``--skill`` each arm's skill games (see :func:`skill_plays`); seats by
        built-in bot name (in-process)."""
        return self._plays(lambda b: b.target)

    @property
    def arena_plays(self) -> tuple[Play, ...]:
        """:attr:`plays` with the seats by their arena bot names (over the protocol)."""
        return self._plays(lambda b: b.name)

    def _plays(self, ident: Callable[[BotSpec], str]) -> tuple[Play, ...]:
        seats = tuple(ident(b) for b in self.seats)
        main = tuple(Play(arm, seats) for arm in range(len(self.arms)))
        pairs = [(ident(s), ident(w)) for s, w in self.skill_bots]
        return main + skill_plays(len(self.arms), pairs, self.base.ruleset)

    def options_for(self, builtin: str) -> dict[str, Any]:
        """The factory options of a built-in bot in this experiment (in-process)."""
        return builtin_options(builtin, self.bot_options.get(builtin, {}))

    def canonical(self) -> dict[str, Any]:
        """Everything that changes results, as plain JSON values (stored with them)."""
        return (
            {
                "name": self.name,
                "kind": self.kind,
                "arms": [a.canonical() for a in self.arms],
                "knob": self.knob,
                "unit": self.unit,
                "pairs": self.pairs,
                "seed": self.seed,
                "seats": [b.spec for b in self.seats],
                "bot_options": {k: dict(v) for k, v in sorted(self.bot_options.items())},
                "time_limit_ms": None if self.in_process else self.time_limit_ms,
            }
            | ({"skill": [list(p) for p in self.skill]} if self.skill else {})
            | ({"skill_trace": list(self.trace)} if self.trace else {})
        )  # each only when given: the experiments before it keep their digests

    def digest(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def same_deals(self) -> bool:
        """Whether every arm deals from the same tile set (else the pairing is by seed only:
        the same seed shuffles a different set into different hands)."""
        sets = {(a.ruleset.max_pip, a.ruleset.exclude, a.ruleset.hand_size) for a in self.arms}
        return len(sets) == 1


# -- pieces ---------------------------------------------------------------------------------


def make_arm(label: str, preset: str, overrides: Sequence[str], where: str) -> Arm:
    try:
        ruleset = load_preset(preset, overrides)
    except CapicuaError as e:
        raise ExperimentError(f"{where}: {e}") from None
    return Arm(label, preset, tuple(overrides), ruleset)


def _bot_name(spec: BotSpec, taken: dict[str, str]) -> str:
    """A short unique name for a bot spec (built-ins keep theirs: ``hard``)."""
    if spec.kind == "builtin":
        return spec.target
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", spec.target.split("/")[-1]).strip("-") or spec.kind
    stem = f"{spec.kind}-{stem}"[:40]
    name, n = stem, 2
    while name in taken and taken[name] != spec.spec:
        name, n = f"{stem}-{n}", n + 1
    return name


def parse_bot(text: str, taken: dict[str, str], where: str = "bots") -> BotSpec:
    """One bot: a built-in name (``hard``) or an arena spec (``python:mod:Class``...)."""
    try:
        probe = bot_from_text("bot", text, where)
    except TournamentError as e:
        raise ExperimentError(str(e)) from None
    name = _bot_name(probe, taken)
    taken[name] = probe.spec
    return BotSpec(name, probe.kind, probe.target)


def seat_bots(specs: Sequence[str], ruleset: Ruleset, where: str = "bots") -> tuple[BotSpec, ...]:
    """The bot of every seat: one spec for all seats, one per side, or one per seat."""
    taken: dict[str, str] = {}
    bots = [parse_bot(s, taken, where) for s in specs if s.strip()]
    seats, sides = ruleset.seats, ruleset.num_sides
    if len(bots) == 1:
        return tuple(bots * seats)
    if len(bots) == seats:
        return tuple(bots)
    if len(bots) == sides:
        return tuple(bots[ruleset.side_of(s)] for s in range(seats))
    raise ExperimentError(
        f"{where}: {ruleset.name} has {seats} seats and {sides} sides; give 1, {sides} or "
        f"{seats} bots, not {len(bots)}"
    )


def split_list(text: str) -> list[str]:
    """Split ``a,b,c`` at the commas outside brackets and quotes (``["0-0"],[]`` is two)."""
    out: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [s for s in out if s]


def parse_bot_options(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``hard.iterations=400`` items into ``{"hard": {"iterations": 400}}``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, value = parse_assignment(item)
        bot, dot, option = key.partition(".")
        if not dot or not option or bot not in BUILTIN:
            raise ExperimentError(
                f"--bot-option {item!r}: expected BOT.OPTION=VALUE with BOT one of "
                f"{', '.join(sorted(BUILTIN))} (e.g. hard.iterations=400)"
            )
        out.setdefault(bot, {})[option] = value
    return out


def _check_options(options: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """Build each optioned bot once, so a wrong option fails now with its name."""
    for bot, opts in options.items():
        if bot not in BUILTIN:
            raise ExperimentError(f"{where}.{bot}: not a built-in bot")
        try:
            check_builtin_options(bot, opts)
        except (TypeError, ValueError) as e:
            raise ExperimentError(f"{where}.{bot}: {e}") from None


def _pairs(unit: str, hands: int | None, matches: int | None) -> tuple[str, int]:
    if hands is not None and matches is not None:
        raise ExperimentError("--hands and --matches: give one of them")
    if unit == "hand" and matches is not None:
        raise ExperimentError("--matches: the unit is hand; use --hands, or --unit match")
    if unit == "match" and hands is not None:
        raise ExperimentError("--hands: the unit is match; use --matches, or --unit hand")
    n = hands if hands is not None else matches if matches is not None else DEFAULT_PAIRS[unit]
    if not 1 <= n <= MAX_PAIRS:
        raise ExperimentError(f"--{PLURAL[unit]}: expected 1 to {MAX_PAIRS}, got {n}")
    return unit, n


#: Knobs that act only after a match's first hand or at its end (who opens next, resets,
#: the target, shutouts, the hand limit): at ``unit = "hand"`` every deal is played alone as
#: a match's first hand, so they cannot change anything there.
MATCH_ONLY_KNOBS = frozenset({
    "target", "next_opener", "no_winner_opener", "block_opener", "reply_resets",
    "all_scored_resets", "win_needs_zero_opponent", "shutout", "max_hands",
})  # fmt: skip


def changed_knobs(rulesets: Sequence[Ruleset]) -> list[str]:
    """The knobs in which any arm differs from the base, in the rules' order."""
    base = rulesets[0].knobs()
    changed = {k for r in rulesets[1:] for k, v in r.knobs().items() if base.get(k) != v}
    return [k for k in base if k in changed and k not in ("name", "summary")]


def unmeasured_knobs(unit: str, rulesets: Sequence[Ruleset]) -> list[str]:
    """The changed knobs an experiment at ``unit`` cannot measure (none at the match unit)."""
    if unit != "hand":
        return []
    return [k for k in changed_knobs(rulesets) if k in MATCH_ONLY_KNOBS]


def _check_unit(unit: str, arms: Sequence[Arm]) -> None:
    """Refuse, before anything is played, an experiment whose every change is one the unit
    cannot show (``target`` at ``--unit hand`` would only print "identical")."""
    rulesets = [a.ruleset for a in arms]
    changed = changed_knobs(rulesets)
    lost = unmeasured_knobs(unit, rulesets)
    if changed and lost == changed:
        raise ExperimentError(
            f"--unit hand plays every deal alone, as a match's first hand, so "
            f"{', '.join(lost)} cannot change anything there; use --unit match (--matches N)"
        )


def _check_arms(arms: Sequence[Arm]) -> None:
    base = arms[0].ruleset
    for arm in arms[1:]:
        r = arm.ruleset
        if (r.seats, r.sides) != (base.seats, base.sides):
            raise ExperimentError(
                f"{arm.label}: {r.seats} seats ({r.sides}) against the base's {base.seats} "
                f"({base.sides}); the arms must seat the same bots the same way"
            )
    labels = [a.label for a in arms]
    if len(set(labels)) != len(labels):
        raise ExperimentError(f"values: each arm needs its own label, got {', '.join(labels)}")


def build(
    *,
    kind: str,
    arms: Sequence[Arm],
    bots: Sequence[str],
    unit: str | None,
    hands: int | None,
    matches: int | None,
    seed: int,
    name: str | None = None,
    knob: str | None = None,
    bot_options: Mapping[str, Mapping[str, Any]] | None = None,
    time_limit_ms: int = 5000,
    concurrency: int = 4,
    workers: int = 1,
    server: str | None = None,
    base_dir: Path = Path("."),
    skill: Sequence[tuple[str, str]] = (),
    trace: Sequence[str] = (),
) -> Experiment:
    """Validate the pieces of an experiment (shared by the command line and TOML files)."""
    if unit is None:
        unit = "match" if matches is not None else "hand"
    if unit not in UNITS:
        raise ExperimentError(f"unit: expected hand or match, got {unit!r}")
    unit, pairs = _pairs(unit, hands, matches)
    if len(arms) < 2 and kind != "measure":
        raise ExperimentError("an experiment needs a base and at least one candidate")
    _check_arms(arms)
    _check_unit(unit, arms)
    if not bots:
        raise ExperimentError("bots: give at least one bot (e.g. --bots random)")
    seats = seat_bots(bots, arms[0].ruleset)
    options = {k: dict(v) for k, v in (bot_options or {}).items()}
    _check_options(options, "bot_options")
    check_matches(ExperimentError, seed=seed, concurrency=concurrency, time_limit_ms=time_limit_ms)
    try:
        checks.integer(workers, *WORKERS)
    except Invalid as e:
        raise ExperimentError(f"workers: {e}") from None
    if server is None and any(b.kind == "remote" for b in seats):
        raise ExperimentError("bots: a remote: bot needs --server HOST:PORT (where it plays)")
    if server is None and any(b.kind == "remote" for pair in skill_bots(skill) for b in pair):
        raise ExperimentError("--skill-bots: a remote: bot needs --server HOST:PORT")
    if server is None and any(b.kind == "remote" for pair in skill_bots(trace_rungs(trace))
                              for b in pair):  # fmt: skip
        raise ExperimentError("--skill-trace: a remote: bot needs --server HOST:PORT")
    if name is None:
        name = f"{arms[0].preset} {kind}"
    return Experiment(
        name=name,
        kind=kind,
        arms=tuple(arms),
        unit=unit,
        pairs=pairs,
        seed=seed,
        seats=seats,
        bot_options=options,
        knob=knob,
        time_limit_ms=time_limit_ms,
        concurrency=concurrency,
        workers=workers,
        server=server,
        base_dir=base_dir,
        skill=tuple(skill),
        trace=tuple(trace),
    )


def sweep_arms(
    preset: str, overrides: Sequence[str], knob: str, values: Sequence[str]
) -> list[Arm]:
    """One arm per value of ``knob`` (the first is the base), each labelled by its value."""
    if len(values) < 2:
        raise ExperimentError("--values: a sweep needs at least two values (the first is the base)")
    if "=" in knob or not knob.strip():
        raise ExperimentError(f"--knob: expected a knob name such as target, got {knob!r}")
    arms: list[Arm] = []
    for value in values:
        label = value if _LABEL.match(value) else f"v{len(arms)}"
        arms.append(make_arm(label, preset, [*overrides, f"{knob}={value}"], f"--values {value}"))
    return arms


# -- TOML files -----------------------------------------------------------------------------


def _label(value: Any) -> str:
    if not isinstance(value, str) or not _LABEL.match(value):
        raise Invalid(f"expected 1-40 characters without spaces or commas, got {value!r}")
    return value


def _values(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise Invalid(f"expected a list of values, got {value!r}")
    return value


def _bots(value: Any) -> tuple[str, ...]:
    """``bots = "hard"`` is ``bots = ["hard"]``."""
    return (value,) if isinstance(value, str) else checks.texts(value, '"hard"')


def _bot_options(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise Invalid(f"expected tables such as [bot_options.hard], got {value!r}")
    return value


def _skill_value(value: Any) -> bool | tuple[str, ...]:
    """``true`` (the default pairings or levels) or a list of them."""
    return value if isinstance(value, bool) else checks.texts(value, '"hard:random"')


_STRINGS_JSON: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_BOTS_JSON = {"anyOf": [{"type": "string"}, _STRINGS_JSON]}
_SKILL_JSON = {"anyOf": [{"type": "boolean"}, _STRINGS_JSON]}
_OPTIONS_JSON = {"type": "object", "additionalProperties": {"type": "object"}}


Label = Annotated[str, Checked(_label, {"type": "string", "pattern": _LABEL.pattern})]
Overrides = Annotated[tuple[str, ...], texts('"target=150"')]


class ArmTable(ConfigModel):
    """``[base]``, ``[candidate]`` or ``[measure]``: one ruleset."""

    preset: Annotated[str, text('a preset name, e.g. "block"')]
    overrides: Overrides = ()
    label: Label | None = Field(default=None, description="default: the table's name")


class SweepTable(ConfigModel):
    """``[sweep]``: one arm per value of ``knob``, the first the base."""

    preset: Annotated[str, text('a preset name, e.g. "block"')]
    knob: Annotated[str, text("a knob name such as target")]
    values: Annotated[list[Any], Checked(_values, {"type": "array", "minItems": 2})]
    overrides: Overrides = ()


class ExperimentFile(StudyFile):
    """An experiment file as written (:func:`experiment_from_mapping` makes it an
    :class:`Experiment`). ``matches`` is the ``[matches]`` table; an integer there is the
    number of pairs at ``unit = "match"``, as files before the table wrote it (a file
    with the table says ``pairs = N``: TOML has one value per key)."""

    name: Annotated[str, text()] | None = None
    unit: Annotated[str, one_of(UNITS)] | None = None
    pairs: Annotated[int, integer(1, MAX_PAIRS)] | None = Field(
        default=None, description="pairs of hands or of matches, as the unit says"
    )
    hands: Annotated[int, integer(1, MAX_PAIRS)] | None = Field(
        default=None, description='pairs of hands (unit = "hand"); pairs says it too'
    )
    bots: Annotated[tuple[str, ...], Checked(_bots, _BOTS_JSON)] = ()
    bot_options: Annotated[dict[str, dict[str, Any]], Checked(_bot_options, _OPTIONS_JSON)] = {}
    workers: Annotated[int, integer(*WORKERS)] = Field(
        default=1, description="processes, in-process"
    )
    base: ArmTable | None = None
    candidate: ArmTable | None = None
    sweep: SweepTable | None = None
    measure: ArmTable | None = None
    skill: Annotated[bool | tuple[str, ...], Checked(_skill_value, _SKILL_JSON)] = False
    skill_trace: Annotated[bool | tuple[str, ...], Checked(_skill_value, _SKILL_JSON)] = False

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        """One kind of experiment, said before any of its tables is checked."""
        if isinstance(data, dict) and sum(k in data for k in ("sweep", "measure", "base")) > 1:
            refuse("give one of [base] and [candidate], [sweep] or [measure]")
        return data


def experiment_json_schema() -> dict[str, Any]:
    """The experiment file's JSON Schema: ``matches`` a table, or (as before) a number."""
    schema = json_schema(ExperimentFile, "capicua experiment file")
    count = {"type": "integer", "minimum": 1, "maximum": MAX_PAIRS, "deprecated": True}
    schema["properties"]["matches"] = {"anyOf": [{"$ref": "#/$defs/Matches"}, count]}
    return schema


def _count_of_matches(data: Mapping[str, Any]) -> tuple[dict[str, Any], int | None]:
    """``matches = N`` (the pairs at unit match) taken out of ``data``, whose ``matches``
    is otherwise the ``[matches]`` table."""
    if isinstance(data.get("matches", {}), dict):
        return dict(data), None
    rest = {k: v for k, v in data.items() if k != "matches"}
    try:
        return rest, checks.integer(data["matches"], 1, MAX_PAIRS)
    except Invalid as e:
        raise ExperimentError(f"matches: a [matches] table, or the number of pairs: {e}") from None


def _arms(file: ExperimentFile) -> tuple[str, list[Arm], str | None]:
    """The kind, the arms and the swept knob of a file (of one kind: _one_kind)."""
    if file.measure is not None:  # labelled as `capicua experiment measure` does
        return "measure", [_arm(file.measure, "measure", "rules")], None
    if file.sweep is not None:
        sweep = file.sweep
        values = [v if isinstance(v, str) else _toml_text(v) for v in sweep.values]
        return "sweep", sweep_arms(sweep.preset, sweep.overrides, sweep.knob, values), sweep.knob
    for key in ("base", "candidate"):
        if getattr(file, key) is None:
            raise ExperimentError(f'{key}.preset: missing (e.g. [{key}] preset = "block")')
    assert file.base is not None and file.candidate is not None
    return (
        "ab",
        [_arm(file.base, "base", "base"), _arm(file.candidate, "candidate", "candidate")],
        None,
    )


def _arm(table: ArmTable, key: str, label: str) -> Arm:
    rules = study_rules(table.preset, table.overrides, key, ExperimentError)
    return Arm(table.label or label, table.preset, table.overrides, rules)


def experiment_from_mapping(data: Mapping[str, Any], base_dir: Path) -> Experiment:
    """Validate a parsed experiment file."""
    rest, count = _count_of_matches(data)
    file = parse(ExperimentFile, rest, ExperimentError)
    kind, arms, knob = _arms(file)
    hands, matches = file.hands, count
    if file.pairs is not None:
        if hands is not None or matches is not None:
            raise ExperimentError("pairs: give one of pairs, hands and matches = N")
        hands, matches = (None, file.pairs) if file.unit == "match" else (file.pairs, None)
    return build(
        kind=kind,
        arms=arms,
        bots=file.bots,
        unit=file.unit,
        hands=hands,
        matches=matches,
        seed=file.setting("seed", 1),
        name=file.name,
        knob=knob,
        bot_options=file.bot_options,
        time_limit_ms=file.setting("time_limit_ms", 5000),
        concurrency=file.setting("concurrency", 4),
        workers=file.workers,
        server=file.setting("server", None),
        base_dir=base_dir,
        skill=_skill(file.skill),
        trace=_trace(file.skill_trace),
    )


def _skill(value: bool | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``skill = true`` (the default pairings) or ``skill = ["hard:random", ...]``."""
    if value is False:
        return ()
    if value is True:
        return parse_skill(DEFAULT_SKILL)
    return parse_skill(",".join(value))


def _trace(value: bool | tuple[str, ...]) -> tuple[str, ...]:
    """``skill_trace = true`` (the built-in bots, weakest first) or ``skill_trace =
    ["random", "easy", ...]``."""
    if value is False:
        return ()
    if value is True:
        return parse_trace(DEFAULT_TRACE, "skill_trace")
    return parse_trace(",".join(value), "skill_trace")


def _toml_text(value: Any) -> str:
    """A TOML value back in override form (``150``, ``true``, ``["0-0"]``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"))


def load_experiment(path: Path) -> Experiment:
    """Read and validate an experiment file; errors are prefixed with its path."""
    return load_file(path, ExperimentError, experiment_from_mapping)
