"""Rulesets as data: the knobs, their validation, presets and ``knob=value`` overrides.

A :class:`Ruleset` is an immutable set of knob values. Presets are TOML files in
``capicua/engine/presets/`` (one per name, aliases included, a preset may ``extends``
another); nothing in the engine branches on a preset's name. Every error names the knob
it is about, so ``capicua play --set hand_sise=3`` says ``hand_sise: unknown knob``; a
value is checked by the checks every configuration file shares (:mod:`capicua.common.checks`:
``target: expected an integer of at least 1, got -5``), without pydantic, which the
engine does not load (it would more than double the engine's import time).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import resources
from typing import Any, TypeVar

from capicua.common import checks
from capicua.common.checks import Invalid
from capicua.common.errors import CapicuaError
from capicua.common.pickling import by_constructor
from capicua.engine.tiles import Tile, TileError, full_set

T = TypeVar("T")


class RulesError(CapicuaError, ValueError):
    """A ruleset, preset name or override is invalid; the message names the knob."""


class UnknownPresetError(RulesError):
    """No preset has that name."""


class Sides(StrEnum):
    """How seats form sides."""

    TEAMS = "teams"
    INDIVIDUAL = "individual"


class Stock(StrEnum):
    """What happens to undealt tiles."""

    SLEEPING = "sleeping"
    DRAW = "draw"


class TurnOrder(StrEnum):
    """Direction of play."""

    CLOCKWISE = "clockwise"
    COUNTERCLOCKWISE = "counterclockwise"


class FirstOpener(StrEnum):
    """Who opens hand 1 (and hands after a no-winner hand under ``same_as_first``)."""

    HIGHEST_DOUBLE = "highest_double"
    TILE = "tile"
    RANDOM_SIDE = "random_side"


class NextOpener(StrEnum):
    """Who opens after a hand with a winner."""

    WINNER = "winner"
    WINNING_SIDE = "winning_side"
    HIGHEST_DOUBLE = "highest_double"


class NoWinnerOpener(StrEnum):
    """Who opens after a hand with no winner."""

    ROTATE = "rotate"
    SAME_AS_FIRST = "same_as_first"


class BlockOpener(StrEnum):
    """Who opens after a won block."""

    AS_NEXT = "as_next"
    LOCKER_IF_WON = "locker_if_won"


class BlockWinner(StrEnum):
    """How a blocked hand is decided."""

    LOWEST_SEAT = "lowest_seat"
    LOWEST_SIDE = "lowest_side"


class BlockTie(StrEnum):
    """What a tie on a block gives."""

    NO_WINNER = "no_winner"
    OPENING_SIDE = "opening_side"


class Points(StrEnum):
    """What a won hand scores."""

    ONE = "one"
    OPPONENTS_PIPS = "opponents_pips"
    ALL_PIPS = "all_pips"


class BonusTest(StrEnum):
    """The test a finish bonus applies to the final tile."""

    BOTH_ENDS = "both_ends"


class EffectKind(StrEnum):
    """How a finish bonus changes the hand's score."""

    ADD = "add"
    MULTIPLY = "multiply"


@dataclass(frozen=True, slots=True)
class Effect:
    """``add:N`` or ``multiply:K``."""

    kind: EffectKind
    amount: int

    @classmethod
    def parse(cls, text: str, knob: str = "effect") -> Effect:
        kind, sep, amount = str(text).partition(":")
        if not amount.strip().isdigit():
            raise RulesError(f"{knob}: expected add:N or multiply:K, got {text!r}")
        try:
            eff = cls(EffectKind(kind.strip()), int(amount))
        except ValueError:
            raise RulesError(f"{knob}: expected add:N or multiply:K, got {text!r}") from None
        if not sep:
            raise RulesError(f"{knob}: expected add:N or multiply:K, got {text!r}")
        if eff.kind is EffectKind.MULTIPLY and eff.amount < 1:
            raise RulesError(f"{knob}: a multiplier must be at least 1, got {eff.amount}")
        if eff.kind is EffectKind.ADD and eff.amount < 0:
            raise RulesError(f"{knob}: an addition must be at least 0, got {eff.amount}")
        return eff

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.amount}"


@dataclass(frozen=True, slots=True)
class FinishBonus:
    """A bonus on a domino out whose final tile passes ``test`` (RULES: Finish bonuses)."""

    name: str
    effect: Effect
    test: BonusTest = BonusTest.BOTH_ENDS
    no_double: bool = False
    distinct_ends: bool = False
    label: str = ""

    @property
    def display(self) -> str:
        """Human label (may carry an accent), falling back to the ASCII name."""
        return self.label or self.name

    def applies(self, tile: Tile, left: int, right: int) -> bool:
        """Whether this bonus holds for a domino out with ``tile`` laid on open ends
        ``left``/``right`` (the ends before it)."""
        if (self.no_double and tile.is_double) or (self.distinct_ends and left == right):
            return False
        return fits_both_ends(tile, left, right)


def fits_both_ends(tile: Tile, left: int, right: int) -> bool:
    """``tile`` matches both open ends (the ``both_ends`` test: with equal ends, one
    half matching is enough, since either end takes it)."""
    if left != right:
        return {tile.low, tile.high} == {left, right}
    return left in (tile.low, tile.high)


@dataclass(frozen=True, slots=True)
class Shutout:
    """At match end, if every losing side has 0, multiply the winner's score and flag it."""

    name: str
    multiplier: int
    label: str = ""

    @property
    def display(self) -> str:
        return self.label or self.name


@dataclass(frozen=True, slots=True)
class Ruleset:
    """Every knob of RULES.md. Build with :func:`load_preset` or :func:`ruleset_from_mapping`."""

    name: str
    max_pip: int
    seats: int
    sides: Sides
    hand_size: int
    stock: Stock
    turn_order: TurnOrder
    first_opener: FirstOpener
    next_opener: NextOpener
    block_winner: BlockWinner
    block_tie: BlockTie
    domino_points: Points
    block_points: Points
    target: int
    opening_tile: Tile | None = None
    exclude: tuple[Tile, ...] = ()
    no_winner_opener: NoWinnerOpener = NoWinnerOpener.ROTATE
    block_opener: BlockOpener = BlockOpener.AS_NEXT
    redeal_min_doubles: int = 0
    finish_bonus: tuple[FinishBonus, ...] = ()
    reply_resets: bool = False
    all_scored_resets: bool = False
    win_needs_zero_opponent: bool = False
    shutout: Shutout | None = None
    max_hands: int = 1000
    summary: str = ""
    overrides: tuple[str, ...] = field(default=())

    # -- derived facts, cheap enough to compute on demand ---------------------------------

    @property
    def set_size(self) -> int:
        """Tiles in the set after exclusions."""
        return len(full_set(self.max_pip)) - len(self.exclude)

    @property
    def stock_size(self) -> int:
        """Tiles left in the stock after a deal (or a redeal)."""
        return self.set_size - self.seats * self.hand_size

    @property
    def num_sides(self) -> int:
        return 2 if self.sides is Sides.TEAMS else self.seats

    def side_of(self, seat: int) -> int:
        """Side number of ``seat`` (sides are numbered by their lowest seat, 0-based)."""
        return seat % 2 if self.sides is Sides.TEAMS else seat

    def side_seats(self, side: int) -> tuple[int, ...]:
        """Seats of ``side`` in seat order."""
        return (side, side + 2) if self.sides is Sides.TEAMS else (side,)

    @property
    def first_opener_text(self) -> str:
        """``first_opener`` in its knob form, e.g. ``tile:6-6``."""
        if self.first_opener is FirstOpener.TILE:
            return f"tile:{self.opening_tile}"
        return self.first_opener.value

    def knobs(self) -> dict[str, Any]:
        """Every knob as plain TOML-able values (the preset-file form)."""
        out: dict[str, Any] = {
            "name": self.name,
            "summary": self.summary,
            "max_pip": self.max_pip,
            "exclude": [str(t) for t in self.exclude],
            "seats": self.seats,
            "sides": self.sides.value,
            "hand_size": self.hand_size,
            "stock": self.stock.value,
            "turn_order": self.turn_order.value,
            "first_opener": self.first_opener_text,
            "next_opener": self.next_opener.value,
            "no_winner_opener": self.no_winner_opener.value,
            "block_opener": self.block_opener.value,
            "redeal_min_doubles": self.redeal_min_doubles,
            "block_winner": self.block_winner.value,
            "block_tie": self.block_tie.value,
            "domino_points": self.domino_points.value,
            "block_points": self.block_points.value,
            "finish_bonus": [_bonus_knobs(b) for b in self.finish_bonus],
            "reply_resets": self.reply_resets,
            "all_scored_resets": self.all_scored_resets,
            "target": self.target,
            "win_needs_zero_opponent": self.win_needs_zero_opponent,
            "shutout": (
                {"name": self.shutout.name, "multiplier": self.shutout.multiplier}
                | ({"label": self.shutout.label} if self.shutout.label else {})
                if self.shutout
                else "none"
            ),
            "max_hands": self.max_hands,
        }
        if self.overrides:
            out["overrides"] = list(self.overrides)
        return out

    def with_overrides(self, assignments: Iterable[str]) -> Ruleset:
        """A copy with ``knob=value`` overrides applied (values are TOML literals)."""
        items = list(assignments)
        if not items:
            return self
        data = self.knobs()
        data.pop("overrides", None)
        for item in items:
            knob, value = parse_assignment(item)
            _assign(data, knob, value)
        rules = ruleset_from_mapping(data)
        return dataclasses.replace(rules, overrides=self.overrides + tuple(items))


def _bonus_knobs(b: FinishBonus) -> dict[str, Any]:
    d: dict[str, Any] = {"name": b.name, "test": b.test.value, "effect": str(b.effect)}
    if b.no_double:
        d["no_double"] = True
    if b.distinct_ends:
        d["distinct_ends"] = True
    if b.label:
        d["label"] = b.label
    return d


# -- building and validating --------------------------------------------------------------

_REQUIRED = (
    "max_pip", "seats", "sides", "hand_size", "stock", "turn_order", "first_opener",
    "next_opener", "block_winner", "block_tie", "domino_points", "block_points", "target",
)  # fmt: skip
_KNOWN = set(_REQUIRED) | {
    "name", "summary", "exclude", "no_winner_opener", "block_opener", "redeal_min_doubles",
    "finish_bonus", "reply_resets", "all_scored_resets", "win_needs_zero_opponent",
    "shutout", "max_hands", "overrides",
}  # fmt: skip
_ENUMS: dict[str, type[StrEnum]] = {
    "sides": Sides,
    "stock": Stock,
    "turn_order": TurnOrder,
    "next_opener": NextOpener,
    "no_winner_opener": NoWinnerOpener,
    "block_opener": BlockOpener,
    "block_winner": BlockWinner,
    "block_tie": BlockTie,
    "domino_points": Points,
    "block_points": Points,
}
#: Each integer knob's bounds (None: no upper bound).
_BOUNDS: dict[str, tuple[int, int | None]] = {
    "max_pip": (1, 12),
    "seats": (2, 4),
    "hand_size": (1, None),
    "redeal_min_doubles": (0, None),
    "target": (1, None),
    "max_hands": (1, None),
    "shutout.multiplier": (1, None),
}
_FLAGS = ("reply_resets", "all_scored_resets", "win_needs_zero_opponent")


def _checked(check: Callable[..., T], knob: str, value: Any, *args: Any) -> T:
    """``check(value, *args)``, one of the checks every configuration shares, its failure
    a :class:`RulesError` naming ``knob``."""
    try:
        return check(value, *args)
    except Invalid as e:
        raise RulesError(f"{knob}: {e}") from None


def _int(knob: str, value: Any) -> int:
    """An integer knob, within its :data:`_BOUNDS`."""
    return _checked(checks.integer, knob, value, *_BOUNDS[knob])


def _enum(knob: str, value: Any) -> Any:
    enum = _ENUMS[knob]
    return enum(_checked(checks.choice, knob, value, [e.value for e in enum]))


def _tile(knob: str, value: Any, max_pip: int) -> Tile:
    try:
        tile = Tile.parse(_checked(checks.text, knob, value))
    except TileError as e:
        raise RulesError(f"{knob}: {e}") from None
    if tile.high > max_pip:
        raise RulesError(f"{knob}: tile {tile} is not in a double-{max_pip} set")
    return tile


def _ident(knob: str, value: Any) -> str:
    name = _checked(checks.text, knob, value)
    if not name.isascii() or not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise RulesError(f"{knob}: names are ASCII identifiers, got {name!r}")
    return name


_BONUS_KEYS = {"name", "test", "effect", "no_double", "distinct_ends", "label"}


def _finish_bonus(value: Any) -> tuple[FinishBonus, ...]:
    if not isinstance(value, list):
        raise RulesError(f"finish_bonus: expected a list of tables, got {value!r}")
    bonuses: list[FinishBonus] = []
    for i, raw in enumerate(value):
        if not isinstance(raw, Mapping):
            raise RulesError(f"finish_bonus[{i}]: expected a table, got {raw!r}")
        if "name" not in raw:
            raise RulesError(f"finish_bonus[{i}].name: missing")
        name = _ident(f"finish_bonus[{i}].name", raw["name"])
        knob = f"finish_bonus.{name}"
        for key in raw:
            if key not in _BONUS_KEYS:
                raise RulesError(f"{knob}.{key}: unknown knob")
        if "effect" not in raw:
            raise RulesError(f"{knob}.effect: missing")
        test_choices = [t.value for t in BonusTest]
        test = BonusTest(
            _checked(checks.choice, f"{knob}.test", raw.get("test", "both_ends"), test_choices)
        )
        if any(b.name == name for b in bonuses):
            raise RulesError(f"{knob}: duplicate bonus name")
        bonuses.append(
            FinishBonus(
                name=name,
                effect=Effect.parse(raw["effect"], f"{knob}.effect"),
                test=test,
                no_double=_checked(checks.flag, f"{knob}.no_double", raw.get("no_double", False)),
                distinct_ends=_checked(
                    checks.flag, f"{knob}.distinct_ends", raw.get("distinct_ends", False)
                ),
                label=_checked(checks.text, f"{knob}.label", raw.get("label", "")),
            )
        )
    return tuple(bonuses)


def _shutout(value: Any) -> Shutout | None:
    if value is None or value is False or value == "none":
        return None
    if not isinstance(value, Mapping):
        raise RulesError(f"shutout: expected {{name, multiplier}} or 'none', got {value!r}")
    for key in value:
        if key not in ("name", "multiplier", "label"):
            raise RulesError(f"shutout.{key}: unknown knob")
    if "name" not in value or "multiplier" not in value:
        raise RulesError("shutout: needs both name and multiplier")
    return Shutout(
        name=_ident("shutout.name", value["name"]),
        multiplier=_int("shutout.multiplier", value["multiplier"]),
        label=_checked(checks.text, "shutout.label", value.get("label", "")),
    )


def ruleset_from_mapping(data: Mapping[str, Any]) -> Ruleset:
    """Build and validate a ruleset from knob values (a preset file's table, flattened)."""
    for key in data:
        if key not in _KNOWN:
            raise RulesError(f"{key}: unknown knob")
    for key in _REQUIRED:
        if key not in data:
            raise RulesError(f"{key}: missing")
    max_pip = _int("max_pip", data["max_pip"])
    seats = _int("seats", data["seats"])
    sides = _enum("sides", data["sides"])
    exclude_raw = data.get("exclude", [])
    if not isinstance(exclude_raw, list):
        raise RulesError(f"exclude: expected a list of tiles, got {exclude_raw!r}")
    exclude = tuple(sorted({_tile("exclude", t, max_pip) for t in exclude_raw}))
    first_raw = _checked(checks.text, "first_opener", data["first_opener"])
    kind, _, tile_text = first_raw.partition(":")
    try:
        first_opener = FirstOpener(kind)
    except ValueError:
        raise RulesError(
            f"first_opener: {first_raw!r} is not one of highest_double, tile:A-B, random_side"
        ) from None
    opening_tile = None
    if first_opener is FirstOpener.TILE:
        opening_tile = _tile("first_opener", tile_text, max_pip)
        if opening_tile in exclude:
            raise RulesError(f"first_opener: tile {opening_tile} is excluded from the set")
    elif tile_text:
        raise RulesError(f"first_opener: {first_raw!r} takes no tile")
    rules = Ruleset(
        name=_checked(checks.text, "name", data.get("name", "custom")),
        summary=_checked(checks.text, "summary", data.get("summary", "")),
        max_pip=max_pip,
        exclude=exclude,
        seats=seats,
        sides=sides,
        hand_size=_int("hand_size", data["hand_size"]),
        stock=_enum("stock", data["stock"]),
        turn_order=_enum("turn_order", data["turn_order"]),
        first_opener=first_opener,
        opening_tile=opening_tile,
        next_opener=_enum("next_opener", data["next_opener"]),
        no_winner_opener=_enum("no_winner_opener", data.get("no_winner_opener", "rotate")),
        block_opener=_enum("block_opener", data.get("block_opener", "as_next")),
        redeal_min_doubles=_int("redeal_min_doubles", data.get("redeal_min_doubles", 0)),
        block_winner=_enum("block_winner", data["block_winner"]),
        block_tie=_enum("block_tie", data["block_tie"]),
        domino_points=_enum("domino_points", data["domino_points"]),
        block_points=_enum("block_points", data["block_points"]),
        finish_bonus=_finish_bonus(data.get("finish_bonus", [])),
        reply_resets=_checked(checks.flag, "reply_resets", data.get("reply_resets", False)),
        all_scored_resets=_checked(
            checks.flag, "all_scored_resets", data.get("all_scored_resets", False)
        ),
        target=_int("target", data["target"]),
        win_needs_zero_opponent=_checked(
            checks.flag, "win_needs_zero_opponent", data.get("win_needs_zero_opponent", False)
        ),
        shutout=_shutout(data.get("shutout")),
        max_hands=_int("max_hands", data.get("max_hands", 1000)),
        overrides=_overrides(data.get("overrides", [])),
    )
    _check_combination(rules)
    return rules


def _overrides(value: Any) -> tuple[str, ...]:
    return _checked(checks.texts, "overrides", value, '"target=150"')


def _check_combination(r: Ruleset) -> None:
    """Reject knob values that are fine alone but impossible together."""
    if r.sides is Sides.TEAMS and r.seats != 4:
        raise RulesError(f"sides: 'teams' needs 4 seats, got seats={r.seats}")
    if r.seats * r.hand_size > r.set_size:
        raise RulesError(
            f"hand_size: {r.seats} seats x {r.hand_size} tiles = {r.seats * r.hand_size} "
            f"> {r.set_size} tiles in the set (max_pip={r.max_pip}, {len(r.exclude)} excluded)"
        )
    doubles = r.max_pip + 1 - sum(1 for t in r.exclude if t.is_double)
    if r.redeal_min_doubles > min(doubles, r.hand_size):
        raise RulesError(
            f"redeal_min_doubles: {r.redeal_min_doubles} doubles can never be dealt "
            f"(hand_size={r.hand_size}, {doubles} doubles in the set)"
        )


# -- the JSON Schema of a knob table -----------------------------------------------------

_TILE_JSON = {"type": "string", "pattern": r"^\s*\d+\s*-\s*\d+\s*$"}
_IDENT_JSON = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}


def _int_json(knob: str) -> dict[str, Any]:
    low, high = _BOUNDS[knob]
    return {"type": "integer", "minimum": low} | ({} if high is None else {"maximum": high})


def _table_json(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def knobs_json_schema() -> dict[str, Any]:
    """The JSON Schema of a table of knobs (a preset file's: ``extends`` another preset,
    or every required knob), from the declarations :func:`ruleset_from_mapping` checks
    with: an editor's view of the same rules (the checks that need several knobs at once,
    such as a tile within ``max_pip``, are the program's)."""
    openers = "|".join(o.value for o in FirstOpener if o is not FirstOpener.TILE)
    effects = "|".join(e.value for e in EffectKind)
    knobs: dict[str, Any] = {
        "extends": {"type": "string", "description": "the preset this one starts from"},
        "name": {"type": "string"},
        "summary": {"type": "string"},
        "exclude": {"type": "array", "items": _TILE_JSON},
        "first_opener": {"type": "string", "pattern": rf"^({openers}|tile:\s*\d+\s*-\s*\d+\s*)$"},
        "finish_bonus": {"type": "array", "items": _bonus_json(effects)},
        "shutout": {
            "anyOf": [
                {"enum": ["none", False]},
                _table_json(
                    {"name": _IDENT_JSON, "multiplier": _int_json("shutout.multiplier"),
                     "label": {"type": "string"}},
                    ["name", "multiplier"],
                ),
            ]
        },
        "overrides": {"type": "array", "items": {"type": "string"}},
    }  # fmt: skip
    knobs |= {k: _int_json(k) for k in _BOUNDS if "." not in k}
    knobs |= {k: {"enum": [e.value for e in enum]} for k, enum in _ENUMS.items()}
    knobs |= {k: {"type": "boolean"} for k in _FLAGS}
    return {
        "type": "object",
        "properties": knobs,
        "additionalProperties": False,
        # a preset that extends another inherits the knobs it leaves out
        "if": {"not": {"required": ["extends"]}},
        "then": {"required": list(_REQUIRED)},
    }


def _bonus_json(effects: str) -> dict[str, Any]:
    properties = {
        "name": _IDENT_JSON,
        "effect": {"type": "string", "pattern": rf"^({effects}):\d+$"},
        "test": {"enum": [t.value for t in BonusTest]},
        "no_double": {"type": "boolean"},
        "distinct_ends": {"type": "boolean"},
        "label": {"type": "string"},
    }
    return _table_json(properties, ["name", "effect"])


# -- overrides ----------------------------------------------------------------------------


def parse_assignment(item: str) -> tuple[str, Any]:
    """Split ``knob=value``; the value is a TOML literal, or a bare word taken as a string."""
    knob, sep, text = item.partition("=")
    knob = knob.strip()
    if not sep or not knob:
        raise RulesError(f"bad override {item!r}: expected knob=value")
    text = text.strip()
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text  # a bare word such as draw, add:25 or tile:6-6
    return knob, value


def _assign(data: dict[str, Any], knob: str, value: Any) -> None:
    """Set one (possibly dotted) knob in a knob mapping, naming the knob on errors."""
    head, _, rest = knob.partition(".")
    if head not in _KNOWN or head == "overrides":
        raise RulesError(f"{knob}: unknown knob")
    if not rest:
        data[head] = value
        return
    if head == "shutout":
        current = data.get("shutout")
        if not isinstance(current, dict):
            raise RulesError(f"{knob}: this ruleset has no shutout; set shutout={{...}} first")
        if rest not in ("name", "multiplier", "label"):
            raise RulesError(f"{knob}: unknown knob")
        data["shutout"] = {**current, rest: value}
        return
    if head == "finish_bonus":
        name, _, key = rest.partition(".")
        bonuses = [dict(b) for b in data.get("finish_bonus", [])]
        match = [b for b in bonuses if b.get("name") == name]
        if not match:
            have = ", ".join(b["name"] for b in bonuses) or "none"
            raise RulesError(
                f"{knob}: no bonus named {name!r} in this ruleset (has: {have}); "
                'add one with --set \'finish_bonus=[{name="...", effect="add:N"}]\''
            )
        if key not in _BONUS_KEYS or key == "name":
            raise RulesError(f"{knob}: unknown knob")
        match[0][key] = value
        data["finish_bonus"] = bonuses
        return
    raise RulesError(f"{knob}: {head} has no sub-knobs")


# -- presets ------------------------------------------------------------------------------


def _preset_file(name: str) -> Any:
    return resources.files("capicua.engine.presets").joinpath(f"{name}.toml")


def preset_names() -> list[str]:
    """Every preset name, sorted."""
    folder = resources.files("capicua.engine.presets")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def _preset_data(name: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    if name in seen:
        raise RulesError(f"extends: cycle {' -> '.join(seen + (name,))}")
    path = _preset_file(name)
    if not name or "/" in name or not path.is_file():
        raise UnknownPresetError(
            f"unknown preset {name!r}; known presets: {', '.join(preset_names())}"
        )
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    parent = data.pop("extends", None)
    if parent is None:
        return data
    return _preset_data(str(parent), seen + (name,)) | data


def load_preset(name: str, overrides: Iterable[str] = ()) -> Ruleset:
    """The preset ``name`` with ``knob=value`` overrides applied."""
    data = _preset_data(name)
    data["name"] = name
    try:
        rules = ruleset_from_mapping(data)
    except RulesError as e:  # a broken shipped preset is a bug; say which file
        raise RulesError(f"preset {name}: {e}") from None
    return rules.with_overrides(overrides)


# (the compiled build cannot unpickle a frozen dataclass field by field)
by_constructor(Effect, FinishBonus, Shutout, Ruleset)
