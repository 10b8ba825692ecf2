"""Rulesets: every preset's knob values, defaults, validation and ``knob=value`` overrides."""

from __future__ import annotations

import dataclasses
import random
import re
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest

from capicua.engine.rules import (
    BlockOpener,
    BonusTest,
    Effect,
    EffectKind,
    FinishBonus,
    FirstOpener,
    NoWinnerOpener,
    Points,
    RulesError,
    Ruleset,
    Shutout,
    Sides,
    Stock,
    UnknownPresetError,
    load_preset,
    parse_assignment,
    preset_names,
    ruleset_from_mapping,
)
from capicua.engine.tiles import Tile, full_set

# -- the preset table, transcribed knob by knob -------------------------------------------
#
# Knobs a row does not mention take the table's stated defaults. Finish bonuses and shutouts
# are compared on their rule-bearing fields only (display labels are free text).

DEFAULTS: dict[str, Any] = {
    "exclude": [],
    "redeal_min_doubles": 0,
    "reply_resets": False,
    "all_scored_resets": False,
    "win_needs_zero_opponent": False,
    "finish_bonus": [],
    "shutout": "none",
    "block_opener": "as_next",
    "no_winner_opener": "rotate",
    "max_hands": 1000,
}


def _bonus(
    name: str, effect: str, *, no_double: bool = False, distinct: bool = False
) -> dict[str, Any]:
    return {
        "name": name,
        "test": "both_ends",
        "effect": effect,
        "no_double": no_double,
        "distinct_ends": distinct,
    }


IQ_1V1: dict[str, Any] = {
    "max_pip": 9, "seats": 2, "sides": "individual", "hand_size": 10, "stock": "sleeping",
    "turn_order": "clockwise", "first_opener": "highest_double", "next_opener": "highest_double",
    "block_winner": "lowest_side", "block_tie": "no_winner",
    "domino_points": "opponents_pips", "block_points": "opponents_pips", "target": 100,
    "finish_bonus": [_bonus("capicua", "multiply:2")],
    "shutout": {"name": "pollona", "multiplier": 2},
    "no_winner_opener": "same_as_first",
}  # fmt: skip
IQ_HANDS: dict[str, Any] = IQ_1V1 | {
    "domino_points": "one", "block_points": "one", "target": 3, "finish_bonus": [],
}  # fmt: skip
JAMAICAN: dict[str, Any] = {
    "max_pip": 6, "seats": 4, "sides": "teams", "hand_size": 7, "stock": "sleeping",
    "turn_order": "counterclockwise", "first_opener": "highest_double",
    "next_opener": "winning_side", "block_winner": "lowest_seat", "block_tie": "no_winner",
    "domino_points": "one", "block_points": "one", "target": 6,
}  # fmt: skip
BLOCK: dict[str, Any] = {
    "max_pip": 6, "seats": 4, "sides": "teams", "hand_size": 7, "stock": "sleeping",
    "turn_order": "counterclockwise", "first_opener": "highest_double", "next_opener": "winner",
    "block_winner": "lowest_seat", "block_tie": "no_winner",
    "domino_points": "opponents_pips", "block_points": "opponents_pips", "target": 100,
}  # fmt: skip
CUBAN: dict[str, Any] = {
    "max_pip": 9, "seats": 4, "sides": "teams", "hand_size": 10, "stock": "sleeping",
    "turn_order": "counterclockwise", "first_opener": "random_side",
    "next_opener": "winning_side", "block_winner": "lowest_seat", "block_tie": "no_winner",
    "domino_points": "opponents_pips", "block_points": "opponents_pips", "target": 100,
}  # fmt: skip
EL_DOMINITO: dict[str, Any] = {
    "max_pip": 6, "seats": 4, "sides": "teams", "hand_size": 7, "stock": "sleeping",
    "turn_order": "counterclockwise", "first_opener": "tile:6-6", "next_opener": "winner",
    "block_winner": "lowest_side", "block_tie": "no_winner",
    "domino_points": "all_pips", "block_points": "opponents_pips", "target": 200,
    "block_opener": "locker_if_won", "shutout": {"name": "chiva", "multiplier": 1},
}  # fmt: skip

EXPECTED: dict[str, dict[str, Any]] = {
    "iq-1v1": IQ_1V1,
    "iq-2v2": IQ_1V1 | {"seats": 4, "sides": "teams"},
    "iq-1v1-hands": IQ_HANDS,
    "iq-2v2-hands": IQ_HANDS | {"seats": 4, "sides": "teams"},
    "iq-ffa": IQ_HANDS | {"seats": 4, "sides": "individual"},
    "jamaican": JAMAICAN,
    "jamaican-six-love": JAMAICAN | {
        "reply_resets": True, "win_needs_zero_opponent": True,
        "finish_bonus": [_bonus("key_bone", "add:1")],
    },
    "trinidad": JAMAICAN,
    "barbados": JAMAICAN,
    "puerto-rican": JAMAICAN | {
        "block_winner": "lowest_side", "domino_points": "all_pips", "block_points": "all_pips",
        "target": 200,
    },
    "dominican": JAMAICAN | {
        "block_winner": "lowest_side", "block_tie": "opening_side",
        "domino_points": "opponents_pips", "block_points": "opponents_pips", "target": 200,
        "finish_bonus": [_bonus("capicua", "add:30", no_double=True, distinct=True)],
    },
    "cuban": CUBAN | {"redeal_min_doubles": 5},
    "cutthroat": {
        "max_pip": 6, "exclude": ["0-0"], "seats": 3, "sides": "individual", "hand_size": 9,
        "stock": "sleeping", "turn_order": "counterclockwise", "first_opener": "highest_double",
        "next_opener": "winner", "block_winner": "lowest_seat", "block_tie": "no_winner",
        "domino_points": "one", "block_points": "one", "target": 6,
        "win_needs_zero_opponent": True, "all_scored_resets": True,
    },
    "block": BLOCK,
    "draw": BLOCK | {"stock": "draw"},
    "ludoteka-cuban": CUBAN | {
        "finish_bonus": [_bonus("capicua", "multiply:2", no_double=True)],
    },
    "el-dominito": EL_DOMINITO,
    "el-dominito-2p": EL_DOMINITO | {
        "seats": 2, "sides": "individual", "stock": "draw", "block_opener": "as_next",
    },
}  # fmt: skip


def _rule_knobs(r: Ruleset) -> dict[str, Any]:
    """``r.knobs()`` without name, summary and display labels; bonus flags made explicit."""
    knobs = r.knobs()
    for key in ("name", "summary"):
        knobs.pop(key)
    knobs["finish_bonus"] = [
        {
            "name": b["name"],
            "test": b["test"],
            "effect": b["effect"],
            "no_double": b.get("no_double", False),
            "distinct_ends": b.get("distinct_ends", False),
        }
        for b in knobs["finish_bonus"]
    ]
    if isinstance(knobs["shutout"], dict):
        knobs["shutout"] = {k: knobs["shutout"][k] for k in ("name", "multiplier")}
    return knobs


def test_the_eighteen_presets_are_shipped() -> None:
    assert len(EXPECTED) == 18
    assert preset_names() == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_has_exactly_the_table_values(name: str) -> None:
    r = load_preset(name)
    assert r.name == name
    assert r.summary, "every preset has a one-line summary"
    assert "\n" not in r.summary
    assert r.overrides == ()
    assert _rule_knobs(r) == DEFAULTS | EXPECTED[name]


@pytest.mark.parametrize("alias", ["trinidad", "barbados"])
def test_aliases_equal_jamaican_except_name_and_summary(alias: str) -> None:
    jamaican = load_preset("jamaican")
    r = load_preset(alias)
    assert r != jamaican
    assert dataclasses.replace(r, name="jamaican", summary=jamaican.summary) == jamaican


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_round_trip_through_knobs(name: str) -> None:
    r = load_preset(name)
    assert ruleset_from_mapping(r.knobs()) == r


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_preset_deals_within_its_set(name: str) -> None:
    r = load_preset(name)
    assert r.seats * r.hand_size <= r.set_size
    assert r.num_sides == (2 if r.sides is Sides.TEAMS else r.seats)


def test_typed_values_of_a_preset() -> None:
    r = load_preset("dominican")
    assert r.finish_bonus == (
        FinishBonus(
            name="capicua",
            effect=Effect(EffectKind.ADD, 30),
            test=BonusTest.BOTH_ENDS,
            no_double=True,
            distinct_ends=True,
            label="capicúa",
        ),
    )
    assert r.finish_bonus[0].display == "capicúa"
    el = load_preset("el-dominito")
    assert el.first_opener is FirstOpener.TILE
    assert el.opening_tile == Tile(6, 6)
    assert el.first_opener_text == "tile:6-6"
    assert el.block_opener is BlockOpener.LOCKER_IF_WON
    assert el.shutout == Shutout("chiva", 1)
    assert el.shutout.display == "chiva"
    cut = load_preset("cutthroat")
    assert cut.exclude == (Tile(0, 0),)
    assert cut.set_size == 27
    assert load_preset("iq-1v1").set_size == 55
    assert load_preset("iq-1v1").no_winner_opener is NoWinnerOpener.SAME_AS_FIRST


def test_sides_and_seats() -> None:
    teams = load_preset("jamaican")
    assert [teams.side_of(s) for s in range(4)] == [0, 1, 0, 1]
    assert teams.side_seats(0) == (0, 2)
    assert teams.side_seats(1) == (1, 3)
    ffa = load_preset("iq-ffa")
    assert ffa.num_sides == 4
    assert [ffa.side_of(s) for s in range(4)] == [0, 1, 2, 3]
    assert ffa.side_seats(3) == (3,)


# -- defaults -----------------------------------------------------------------------------

MINIMAL: dict[str, Any] = {
    "max_pip": 6, "seats": 4, "sides": "teams", "hand_size": 7, "stock": "sleeping",
    "turn_order": "counterclockwise", "first_opener": "highest_double", "next_opener": "winner",
    "block_winner": "lowest_seat", "block_tie": "no_winner",
    "domino_points": "opponents_pips", "block_points": "opponents_pips", "target": 100,
}  # fmt: skip


def test_defaults_of_optional_knobs() -> None:
    r = ruleset_from_mapping(MINIMAL)
    assert r.name == "custom"
    assert r.summary == ""
    assert r.exclude == ()
    assert r.opening_tile is None
    assert r.no_winner_opener is NoWinnerOpener.ROTATE
    assert r.block_opener is BlockOpener.AS_NEXT
    assert r.redeal_min_doubles == 0
    assert r.finish_bonus == ()
    assert r.reply_resets is False
    assert r.all_scored_resets is False
    assert r.win_needs_zero_opponent is False
    assert r.shutout is None
    assert r.max_hands == 1000
    assert r.overrides == ()
    assert _rule_knobs(r) == DEFAULTS | MINIMAL
    # The minimal table is exactly the block preset under another name.
    assert dataclasses.replace(load_preset("block"), name="custom", summary="") == r


@pytest.mark.parametrize("knob", sorted(MINIMAL))
def test_required_knobs(knob: str) -> None:
    data = {k: v for k, v in MINIMAL.items() if k != knob}
    with pytest.raises(RulesError, match=rf"^{knob}: missing"):
        ruleset_from_mapping(data)


# -- validation ---------------------------------------------------------------------------

BAD_MAPPINGS: list[tuple[str, dict[str, Any], str]] = [
    # (id, changes to MINIMAL, knob the message must start with)
    ("unknown knob", {"hand_sise": 7}, "hand_sise"),
    ("bad enum", {"stock": "boneyard"}, "stock"),
    ("bad enum type", {"sides": 2}, "sides"),
    ("negative target", {"target": -5}, "target"),
    ("zero target", {"target": 0}, "target"),
    ("bool for int", {"target": True}, "target"),
    ("float for int", {"hand_size": 7.0}, "hand_size"),
    ("string for int", {"seats": "4"}, "seats"),
    ("too many seats", {"seats": 5}, "seats"),
    ("max_pip out of range", {"max_pip": 0}, "max_pip"),
    ("teams with 3 seats", {"seats": 3, "hand_size": 5}, "sides"),
    ("4 x 10 from double-six", {"hand_size": 10}, "hand_size"),
    ("bad tile in exclude", {"exclude": ["6/6"]}, "exclude"),
    ("tile outside the set in exclude", {"exclude": ["3-7"]}, "exclude"),
    ("exclude not a list", {"exclude": "0-0"}, "exclude"),
    ("opening tile outside the set", {"first_opener": "tile:7-7"}, "first_opener"),
    ("opening tile missing", {"first_opener": "tile:"}, "first_opener"),
    ("unknown opener", {"first_opener": "youngest"}, "first_opener"),
    ("opener that takes no tile", {"first_opener": "highest_double:6-6"}, "first_opener"),
    (
        "excluded opening tile",
        {"first_opener": "tile:0-0", "exclude": ["0-0"], "hand_size": 6},
        "first_opener",
    ),
    ("bool knob given an int", {"reply_resets": 1}, "reply_resets"),
    ("redeal impossible", {"redeal_min_doubles": 8}, "redeal_min_doubles"),
    ("max_hands zero", {"max_hands": 0}, "max_hands"),
    ("finish_bonus not a list", {"finish_bonus": {"name": "x"}}, "finish_bonus"),
    ("finish_bonus item not a table", {"finish_bonus": ["capicua"]}, "finish_bonus[0]"),
    ("bonus without name", {"finish_bonus": [{"effect": "add:1"}]}, "finish_bonus[0].name"),
    (
        "bonus name not an identifier",
        {"finish_bonus": [{"name": "capicúa", "effect": "add:1"}]},
        "finish_bonus[0].name",
    ),
    ("bonus without effect", {"finish_bonus": [{"name": "x"}]}, "finish_bonus.x.effect"),
    (
        "bad effect text",
        {"finish_bonus": [{"name": "x", "effect": "times:2"}]},
        "finish_bonus.x.effect",
    ),
    (
        "effect without amount",
        {"finish_bonus": [{"name": "x", "effect": "add"}]},
        "finish_bonus.x.effect",
    ),
    (
        "multiplier below one",
        {"finish_bonus": [{"name": "x", "effect": "multiply:0"}]},
        "finish_bonus.x.effect",
    ),
    (
        "negative addition",
        {"finish_bonus": [{"name": "x", "effect": "add:-1"}]},
        "finish_bonus.x.effect",
    ),
    (
        "unknown bonus test",
        {"finish_bonus": [{"name": "x", "effect": "add:1", "test": "one_end"}]},
        "finish_bonus.x.test",
    ),
    (
        "unknown finish_bonus sub-knob",
        {"finish_bonus": [{"name": "x", "effect": "add:1", "no_doubles": True}]},
        "finish_bonus.x.no_doubles",
    ),
    (
        "bonus flag not a bool",
        {"finish_bonus": [{"name": "x", "effect": "add:1", "no_double": "yes"}]},
        "finish_bonus.x.no_double",
    ),
    (
        "duplicate bonus name",
        {"finish_bonus": [{"name": "x", "effect": "add:1"}, {"name": "x", "effect": "add:2"}]},
        "finish_bonus.x",
    ),
    ("shutout not a table", {"shutout": ["pollona"]}, "shutout"),
    ("shutout zero is not none", {"shutout": 0}, "shutout"),
    ("shutout without multiplier", {"shutout": {"name": "pollona"}}, "shutout"),
    ("shutout unknown sub-knob", {"shutout": {"name": "p", "multiplier": 2, "x": 1}}, "shutout.x"),
    ("shutout multiplier zero", {"shutout": {"name": "p", "multiplier": 0}}, "shutout.multiplier"),
    ("shutout bad name", {"shutout": {"name": "zapato!", "multiplier": 2}}, "shutout.name"),
    ("name not a string", {"name": 7}, "name"),
]


@pytest.mark.parametrize(
    ("changes", "knob"), [(c, k) for _, c, k in BAD_MAPPINGS], ids=[i for i, _, _ in BAD_MAPPINGS]
)
def test_invalid_mapping_names_the_knob(changes: dict[str, Any], knob: str) -> None:
    with pytest.raises(RulesError) as info:
        ruleset_from_mapping(MINIMAL | changes)
    message = str(info.value)
    assert message.startswith(f"{knob}:"), message


BAD_OVERRIDES: list[tuple[str, str, str]] = [
    # (preset, override, knob the message must start with)
    ("dominican", "hand_sise=3", "hand_sise"),
    ("dominican", "stock=boneyard", "stock"),
    ("dominican", "target=-1", "target"),
    ("dominican", "target=true", "target"),
    ("dominican", "target=1.5", "target"),
    ("dominican", "seats=3", "sides"),
    ("dominican", "hand_size=10", "hand_size"),
    ("dominican", 'exclude=["x-y"]', "exclude"),
    ("dominican", "first_opener=tile:7-7", "first_opener"),
    ("dominican", "finish_bonus.capicua.effect=add", "finish_bonus.capicua.effect"),
    ("dominican", "finish_bonus.capicua.effect=plus:3", "finish_bonus.capicua.effect"),
    ("dominican", "finish_bonus.capicua.bonus=3", "finish_bonus.capicua.bonus"),
    ("dominican", "finish_bonus.capicua.name=other", "finish_bonus.capicua.name"),
    ("dominican", "finish_bonus.key_bone.effect=add:1", "finish_bonus.key_bone.effect"),
    ("dominican", "shutout.multiplier=3", "shutout.multiplier"),  # dominican has no shutout
    ("el-dominito", "shutout.times=3", "shutout.times"),
    ("el-dominito", "shutout.multiplier=0", "shutout.multiplier"),
    ("dominican", "target.points=3", "target.points"),
    ("dominican", "overrides=[]", "overrides"),
    ("dominican", "extends=block", "extends"),
]


@pytest.mark.parametrize(
    ("preset", "override", "knob"),
    BAD_OVERRIDES,
)
def test_invalid_override_names_the_knob(preset: str, override: str, knob: str) -> None:
    with pytest.raises(RulesError) as info:
        load_preset(preset, [override])
    message = str(info.value)
    assert message.startswith(f"{knob}:"), message


def test_excluding_the_opening_tile_is_rejected() -> None:
    # Each override alone is fine; together they are not, in either order.
    assert load_preset("iq-1v1", ['exclude=["5-5"]']).exclude == (Tile(5, 5),)
    assert load_preset("iq-1v1", ["first_opener=tile:5-5"]).opening_tile == Tile(5, 5)
    for overrides in (
        ['exclude=["5-5"]', "first_opener=tile:5-5"],
        ["first_opener=tile:5-5", 'exclude=["5-5"]'],
    ):
        with pytest.raises(RulesError, match=r"^first_opener: tile 5-5 is excluded"):
            load_preset("iq-1v1", overrides)
    # el-dominito opens with 6-6, so it cannot drop that tile.
    with pytest.raises(RulesError, match=r"^first_opener: tile 6-6 is excluded"):
        load_preset("el-dominito", ['exclude=["6-6"]', "hand_size=6"])


def test_bad_override_syntax() -> None:
    for item in ("target", "=3", " =3"):
        with pytest.raises(RulesError, match="expected knob=value"):
            load_preset("block", [item])


def test_unknown_preset_lists_the_known_names() -> None:
    with pytest.raises(UnknownPresetError) as info:
        load_preset("domincan")
    message = str(info.value)
    assert "'domincan'" in message
    for name in EXPECTED:
        assert name in message
    assert isinstance(info.value, RulesError)


@pytest.mark.parametrize("name", ["", "../block", "presets/block", "__init__", "block.toml"])
def test_odd_preset_names_are_unknown_presets(name: str) -> None:
    with pytest.raises(UnknownPresetError):
        load_preset(name)


# -- overrides ----------------------------------------------------------------------------


def test_parse_assignment() -> None:
    assert parse_assignment("target=150") == ("target", 150)
    assert parse_assignment(" target = 150 ") == ("target", 150)
    assert parse_assignment("stock=draw") == ("stock", "draw")
    assert parse_assignment('stock="draw"') == ("stock", "draw")
    assert parse_assignment("first_opener=tile:6-6") == ("first_opener", "tile:6-6")
    assert parse_assignment("finish_bonus.capicua.effect=add:25") == (
        "finish_bonus.capicua.effect",
        "add:25",
    )
    assert parse_assignment('exclude=["0-0"]') == ("exclude", ["0-0"])
    assert parse_assignment("reply_resets=true") == ("reply_resets", True)
    assert parse_assignment("finish_bonus=[]") == ("finish_bonus", [])
    assert parse_assignment("shutout=none") == ("shutout", "none")
    assert parse_assignment("summary=a b=c") == ("summary", "a b=c")


def test_override_exclude() -> None:
    r = load_preset("iq-1v1", ['exclude=["0-0"]'])
    assert r.exclude == (Tile(0, 0),)
    assert r.set_size == 54
    assert r.overrides == ('exclude=["0-0"]',)
    # Tiles are normalised, deduplicated and sorted.
    r = load_preset("iq-2v2", ['exclude=["9-8", "0-0", "8-9"]'])
    assert r.exclude == (Tile(0, 0), Tile(8, 9))
    # A preset's own exclusion can be lifted.
    assert load_preset("cutthroat", ["exclude=[]", "hand_size=9"]).exclude == ()


def test_override_target() -> None:
    r = load_preset("iq-2v2", ["target=150"])
    assert r.target == 150
    assert r.overrides == ("target=150",)
    assert dataclasses.replace(r, target=100, overrides=()) == load_preset("iq-2v2")


def test_override_a_finish_bonus_field() -> None:
    r = load_preset("dominican", ["finish_bonus.capicua.effect=add:25"])
    (bonus,) = r.finish_bonus
    assert bonus.effect == Effect(EffectKind.ADD, 25)
    # The other fields of the bonus are kept.
    assert (bonus.no_double, bonus.distinct_ends, bonus.label) == (True, True, "capicúa")
    assert r.overrides == ("finish_bonus.capicua.effect=add:25",)
    r = load_preset("dominican", ["finish_bonus.capicua.distinct_ends=false"])
    assert r.finish_bonus[0].distinct_ends is False


def test_override_bare_words() -> None:
    r = load_preset("block", ["stock=draw"])
    assert r.stock is Stock.DRAW
    assert dataclasses.replace(r, name="draw", summary="", overrides=()) == dataclasses.replace(
        load_preset("draw"), summary=""
    )
    r = load_preset("block", ["domino_points=all_pips", "first_opener=tile:3-3"])
    assert r.domino_points is Points.ALL_PIPS
    assert r.opening_tile == Tile(3, 3)


def test_override_shutout() -> None:
    assert load_preset("iq-1v1", ["shutout=none"]).shutout is None
    assert load_preset("iq-1v1", ["shutout=false"]).shutout is None
    r = load_preset("iq-1v1", ["shutout.multiplier=3"])
    assert r.shutout == Shutout("pollona", 3)
    r = load_preset("block", ['shutout={name="zapato", multiplier=2}'])
    assert r.shutout == Shutout("zapato", 2)
    # Dropping then re-adding in one go is fine; the overrides apply in order.
    r = load_preset("el-dominito", ["shutout=none", 'shutout={name="chiva", multiplier=4}'])
    assert r.shutout == Shutout("chiva", 4)


def test_override_finish_bonus_lists() -> None:
    assert load_preset("dominican", ["finish_bonus=[]"]).finish_bonus == ()
    r = load_preset(
        "block",
        [
            'finish_bonus=[{name="capicua", effect="multiply:2", no_double=true}, '
            '{name="key_bone", test="both_ends", effect="add:1", label="key bone"}]'
        ],
    )
    assert r.finish_bonus == (
        FinishBonus("capicua", Effect(EffectKind.MULTIPLY, 2), no_double=True),
        FinishBonus("key_bone", Effect(EffectKind.ADD, 1), label="key bone"),
    )
    assert ruleset_from_mapping(r.knobs()) == r


def test_overrides_accumulate_and_round_trip() -> None:
    r = load_preset("draw", ["seats=2", "sides=individual"])
    assert (r.seats, r.sides, r.stock) == (2, Sides.INDIVIDUAL, Stock.DRAW)
    r2 = r.with_overrides(["target=150"])
    assert r2.overrides == ("seats=2", "sides=individual", "target=150")
    assert r2.knobs()["overrides"] == ["seats=2", "sides=individual", "target=150"]
    assert ruleset_from_mapping(r2.knobs()) == r2
    assert r2.with_overrides([]) is r2
    assert load_preset("draw", []) == load_preset("draw")


def test_failed_override_leaves_the_ruleset_alone() -> None:
    r = load_preset("dominican")
    with pytest.raises(RulesError):
        r.with_overrides(["target=150", "stock=boneyard"])
    assert r == load_preset("dominican")
    assert r.target == 200


# -- the rules documentation stays in step with the presets -------------------------------

DOC = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_docs_name_every_preset_and_knob() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in EXPECTED:
        assert f"`{name}`" in text, name
    for knob in load_preset("dominican").knobs():
        if knob not in ("name", "summary"):
            assert f"`{knob}`" in text, knob
    assert "RULES.md" not in text
    assert "shared/" not in text


def test_docs_deal_example_follows_the_formula() -> None:
    text = DOC.read_text(encoding="utf-8")
    tiles = [str(t) for t in full_set(6)]
    key = int.from_bytes(sha256(b"7:0:0").digest()[:8], "big")
    random.Random(key).shuffle(tiles)
    rows = re.findall(r"^\| (\d) \| ((?:\d-\d ?)+) \|$", text, flags=re.MULTILINE)
    assert [(int(seat), hand.split()) for seat, hand in rows] == [
        (s, tiles[s * 7 : (s + 1) * 7]) for s in range(4)
    ]
