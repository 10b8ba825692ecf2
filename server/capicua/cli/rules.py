"""``capicua rules``: list the presets and show every knob of a ruleset.

``capicua rules list`` prints one row per preset; ``capicua rules show NAME`` prints every
knob of a preset, after any ``--set knob=value`` overrides. Both take ``--json`` for
machine-readable output. A bad preset name or knob is a :class:`~capicua.engine.rules.RulesError`,
which the main group prints as one line on stderr (exit code 2).
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from capicua.engine.display import counts_hands, set_text, target_text
from capicua.engine.rules import Ruleset, load_preset, preset_names

# One line per knob for `rules show`, in the order of `Ruleset.knobs()`.
MEANING: dict[str, str] = {
    "max_pip": "the set: every tile a-b with 0 <= a <= b <= max_pip",
    "exclude": "tiles removed from the set before dealing",
    "seats": "number of players",
    "sides": "teams (seats 0+2 vs 1+3) or every seat for itself",
    "hand_size": "tiles dealt to each seat",
    "stock": "undealt tiles: out of play (sleeping) or drawn when stuck (draw)",
    "turn_order": "clockwise is seat+1, counterclockwise is seat-1",
    "first_opener": "who opens the first hand",
    "next_opener": "who opens after a hand with a winner",
    "no_winner_opener": "who opens after a hand with no winner",
    "block_opener": "who opens after a won block",
    "redeal_min_doubles": "doubles that let a seat ask for one redeal (0 = off)",
    "block_winner": "a block is won by the lowest seat or the lowest side total",
    "block_tie": "what a tied block gives",
    "domino_points": "what going out scores",
    "block_points": "what a won block scores",
    "finish_bonus": "bonuses for the final tile of a domino out",
    "reply_resets": "winning while an opponent has points resets every score",
    "all_scored_resets": "once every side has scored, all scores reset",
    "target": "score that wins the match",
    "win_needs_zero_opponent": "the target only wins while an opponent still has 0",
    "shutout": "multiplier (and name) when every loser ends the match on 0",
    "max_hands": "safety stop: the match ends unfinished after this many hands",
}


def _console() -> Console:
    # Built per call so it writes to whatever sys.stdout is now (tests swap it).
    return Console(highlight=False, soft_wrap=False)


def _table(title: str) -> Table:
    return Table(
        box=box.SIMPLE_HEAD,
        title=Text(title),
        title_justify="left",
        pad_edge=False,
        collapse_padding=True,
    )


def _sides_text(r: Ruleset) -> str:
    return r.sides.value


def _summary_row(r: Ruleset) -> dict[str, Any]:
    return {
        "name": r.name,
        "set": set_text(r),
        "max_pip": r.max_pip,
        "exclude": [str(t) for t in r.exclude],
        "seats": r.seats,
        "sides": r.sides.value,
        "hand_size": r.hand_size,
        "stock": r.stock.value,
        "target": r.target,
        "target_unit": "hands" if counts_hands(r) else "points",
        "summary": r.summary,
    }


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


_SET_HELP = (
    "Override a knob, as knob=value (repeatable). The value is a TOML literal or a bare "
    "word: --set target=150, --set stock=draw, --set 'exclude=[\"0-0\"]', "
    "--set finish_bonus.capicua.effect=add:25."
)


@click.group()
def rules() -> None:
    """List and show rulesets (presets and their knobs)."""


@rules.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list instead of a table.")
def list_presets(as_json: bool) -> None:
    """List every preset with its set, seats, sides, target and summary."""
    presets = [load_preset(name) for name in preset_names()]
    if as_json:
        _echo_json([_summary_row(r) for r in presets])
        return
    console = _console()
    table = _table("Presets")
    table.add_column("name", no_wrap=True, style="bold")
    # On a narrow terminal "double-6 minus 0-0" wraps after "double-6" to leave the summary room.
    table.add_column("set", max_width=None if console.width >= 110 else 10)
    table.add_column("seats", justify="right", no_wrap=True)
    table.add_column("sides", no_wrap=True)
    table.add_column("target", justify="right", no_wrap=True)
    table.add_column("summary", ratio=1, min_width=20)
    for r in presets:
        cells = (r.name, set_text(r), str(r.seats), _sides_text(r), target_text(r), r.summary)
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
    console.print(
        "Show every knob of one: capicua rules show NAME [--set knob=value ...]", markup=False
    )


def _value_text(knob: str, value: Any) -> str:
    """A knob value as a user would type it after ``--set knob=``, made readable."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if knob == "exclude":
        return ", ".join(value) if value else "none"
    if knob == "finish_bonus":
        return "none"  # a non-empty list is shown one bonus per row
    if knob == "shutout":
        if value == "none":
            return "none"
        label = f" ({value['label']})" if value.get("label") else ""
        return f"{value['name']}{label}: x{value['multiplier']}"
    return str(value)


def _bonus_text(bonus: dict[str, Any]) -> str:
    tests = [bonus["test"]]
    tests += [opt for opt in ("no_double", "distinct_ends") if bonus.get(opt)]
    label = f" ({bonus['label']})" if bonus.get("label") else ""
    return f"{' + '.join(tests)} -> {bonus['effect']}{label}"


def _overridden(knob: str, overrides: tuple[str, ...]) -> bool:
    for item in overrides:
        head = item.partition("=")[0].strip()
        if head == knob or head.startswith(knob + "."):
            return True
    return False


@rules.command("show")
@click.argument("name")
@click.option("--set", "overrides", multiple=True, metavar="KNOB=VALUE", help=_SET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print every knob as JSON.")
def show(name: str, overrides: tuple[str, ...], as_json: bool) -> None:
    """Show every knob of preset NAME, after any --set overrides."""
    r = load_preset(name, overrides)
    knobs = r.knobs()
    if as_json:
        _echo_json(knobs)
        return
    console = _console()
    # The meaning column only when there is room for it; knob and value always fit.
    explain = console.width >= 100
    table = _table(f"{r.name}: {r.summary}")
    table.add_column("knob", no_wrap=True, style="bold")
    table.add_column("value", min_width=14)
    if explain:
        table.add_column("meaning", ratio=1, min_width=30)
    for knob, value in knobs.items():
        if knob in ("name", "summary", "overrides"):
            continue
        mark = " *" if _overridden(knob, r.overrides) else ""
        if knob == "finish_bonus" and value:
            for bonus in value:
                row = (f"finish_bonus.{bonus['name']}{mark}", _bonus_text(bonus), MEANING[knob])
                table.add_row(*(Text(c) for c in row[: 3 if explain else 2]))
            continue
        row = (f"{knob}{mark}", _value_text(knob, value), MEANING.get(knob, ""))
        table.add_row(*(Text(c) for c in row[: 3 if explain else 2]))
    console.print(table)
    console.print(
        f"set: {set_text(r)}, {r.set_size} tiles; {r.seats} seats x {r.hand_size} dealt, "
        f"{r.stock_size} left in the stock",
        markup=False,
    )
    if r.overrides:
        console.print("* overridden: " + " ".join(r.overrides), markup=False, soft_wrap=True)
    else:
        console.print(
            "Override any knob with --set knob=value, e.g. --set target=150", markup=False
        )
