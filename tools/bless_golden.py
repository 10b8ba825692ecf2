"""Re-bless the golden replays in tests/golden/ from their recipes in tests/golden/corpus.toml.

Usage, from anywhere::

    python tools/bless_golden.py                    # replay every recipe, rewrite what changed
    python tools/bless_golden.py --check            # write nothing; exit 1 if a file would change
    python tools/bless_golden.py --find chiva --preset el-dominito [--set target=50] \\
        [--bots random] [--from 0] [--seeds 500] [--limit 5]   # the smallest that show it
    python tools/bless_golden.py --features         # every feature name, with its meaning

A recipe names a file, a preset, its overrides, a match seed, the bots (as ``capicua play
--bots`` takes them) and the features its replay must exhibit. Blessing plays every recipe
with the current engine and bots exactly as ``capicua play`` does (each seat's bot seeded by
``capicua.cli.play.bot_seed``) and rewrites the files whose content changed. It writes nothing
and exits 1, naming the entries, when a recipe no longer exhibits its features (pick a new seed
with ``--find``), or when a replay file in tests/golden/ has no recipe.

Feature detection (:func:`features`) works on the replay records alone — events, hand
results and the outcome — so tests/test_golden.py checks the stored files with it.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capicua.bots import LEVELS, HardBot
from capicua.cli.play import play_match, seat_names
from capicua.common.errors import CapicuaError
from capicua.engine.line import Line
from capicua.engine.records import (
    Defer,
    Draw,
    HandEnd,
    HandRecord,
    HandResult,
    Pass,
    Play,
    RedealChoice,
    Replay,
    Reset,
    Termination,
)
from capicua.engine.replay import ReplayMismatch, verify
from capicua.engine.rules import BlockOpener, BlockWinner, Ruleset, load_preset
from capicua.engine.tiles import Tile
from capicua.wire.codec import ReplayError, read_replay, replay_to_json, write_replay

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
CORPUS = GOLDEN / "corpus.toml"
SUFFIXES = (".json", ".json.gz")

# `capicua play --rules dominican --seed 5` with its default bots, as the README shows it.
README_EXAMPLE = ("dominican", 5, "random")

FEATURES: dict[str, str] = {
    "domino": "a hand won by a domino out",
    "block": "a blocked hand",
    "pass": "a seat passes",
    "draw": "a seat draws from the stock",
    "forced_move": "a seat plays with exactly one legal option (not counting the opening)",
    "redeal": "a seat with redeal_min_doubles or more doubles asks for a redeal",
    "redeal_declined": "a seat offered a redeal keeps its tiles",
    "defer": "the seat offered the opening defers it to its partner",
    "block_tie_no_winner": "a blocked hand tied between sides, with no winner",
    "block_tie_opening_side": "a blocked hand tied between sides, won by the opening side",
    "capicua": "a domino out earning the capicua finish bonus",
    "capicua_on_double": "a capicua whose final tile is a double",
    "capicua_refused_double": "a final double fitting both ends, refused (no_double)",
    "capicua_refused_equal_ends": "a final tile fitting two equal ends, refused (distinct_ends)",
    "key_bone": "a domino out earning the key_bone finish bonus",
    "reply_reset": "a reply: a win while an opponent has points resets every score",
    "all_scored_reset": "every side has scored, so every score resets",
    "locker_opens": "the locker of a block its side won opens the next hand",
    "shutout": "the match ends with a shutout (any name)",
    "pollona": "the match ends with the pollona shutout",
    "chiva": "the match ends with the chiva shutout",
    "hand_limit": "the match ends at max_hands",
    "readme_example": "the README's worked example: capicua play --rules dominican --seed 5",
}

REQUIRED_FEATURES = (
    "redeal", "defer", "block_tie_no_winner", "block_tie_opening_side", "chiva", "pollona",
    "capicua_on_double", "reply_reset", "all_scored_reset", "shutout", "hand_limit",
    "forced_move", "draw", "readme_example",
)  # fmt: skip
"""What the corpus as a whole must show (tests/test_golden.py checks it)."""


class GoldenError(CapicuaError):
    """A broken recipe file, or a recipe that no longer shows its features."""


# -- recipes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """How one golden replay is played, and what it must show."""

    file: str
    preset: str
    overrides: tuple[str, ...]
    seed: int
    bots: str  # as `capicua play --bots`: one name for every seat, or one per seat
    features: tuple[str, ...]

    def ruleset(self) -> Ruleset:
        return load_preset(self.preset, self.overrides)

    @property
    def is_plain_preset(self) -> bool:
        """Played under the preset exactly as shipped."""
        return not self.overrides


_RECIPE_KEYS = {"file", "preset", "overrides", "seed", "bots", "features"}


def load_recipes(path: Path = CORPUS) -> list[Recipe]:
    """Every ``[[replay]]`` entry of the recipe file, validated (one line per problem)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise GoldenError(f"{path}: {e}") from None
    recipes = [_recipe(entry, i) for i, entry in enumerate(data.get("replay", []))]
    seen: set[str] = set()
    for r in recipes:
        if r.file in seen:
            raise GoldenError(f"{r.file}: two recipes write this file")
        seen.add(r.file)
    return recipes


def _recipe(entry: Any, i: int) -> Recipe:
    where = f"replay[{i}]"
    if not isinstance(entry, dict):
        raise GoldenError(f"{where}: expected a table")
    if set(entry) != _RECIPE_KEYS:
        missing = sorted(_RECIPE_KEYS - set(entry))
        extra = sorted(set(entry) - _RECIPE_KEYS)
        raise GoldenError(f"{where}: missing {missing}, unknown {extra}")
    file, features = entry["file"], entry["features"]
    if not isinstance(file, str) or "/" in file or not file.endswith(SUFFIXES):
        raise GoldenError(f"{where}.file: a file name ending in .json or .json.gz, got {file!r}")
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise GoldenError(f"{file}: unknown features {unknown} (see --features)")
    return Recipe(
        file=file,
        preset=str(entry["preset"]),
        overrides=tuple(str(o) for o in entry["overrides"]),
        seed=int(entry["seed"]),
        bots=str(entry["bots"]),
        features=tuple(features),
    )


# -- playing --------------------------------------------------------------------------------


# hard searches under a time budget: its moves depend on the machine's speed, so a replay
# it played could not be blessed again the same way.
GOLDEN_BOTS = tuple(name for name in LEVELS if name != HardBot.name)


def play(recipe: Recipe) -> Replay:
    """The replay ``capicua play --rules P --set ... --bots B --seed S`` writes for it."""
    ruleset = recipe.ruleset()
    names = seat_names(ruleset, recipe.bots)
    others = sorted({n for n in names if n not in GOLDEN_BOTS})
    if others:
        raise GoldenError(f"bots: {others} not one of {', '.join(GOLDEN_BOTS)} (deterministic)")
    return play_match(ruleset, recipe.bots, recipe.seed)


# -- features -------------------------------------------------------------------------------


def _fits(tile: Tile, pip: int) -> bool:
    return pip in (tile.low, tile.high)


def _options(hand: Iterable[Tile], ends: tuple[int, int]) -> int:
    """How many legal plays ``hand`` has on ``ends``, counted as the engine offers them: each
    fitting tile once per end, and once only when both ends are equal."""
    left, right = ends
    tiles = list(hand)
    count = sum(_fits(t, left) for t in tiles)
    if left != right:
        count += sum(_fits(t, right) for t in tiles)
    return count


def _has_forced_move(record: HandRecord) -> bool:
    """A play after the opening that was the seat's only legal option (the engine applies
    those itself; the opening is left out because a required opening tile is always one)."""
    deals = iter(record.deals)
    hands = [set(h) for h in next(deals).hands]
    line = Line()
    for event in record.events:
        if isinstance(event, RedealChoice) and event.redeal:
            hands = [set(h) for h in next(deals).hands]
        elif isinstance(event, Draw) and event.tile is not None:
            hands[event.seat].add(event.tile)
        elif isinstance(event, Play):
            if line.ends is not None and _options(hands[event.seat], line.ends) == 1:
                return True
            hands[event.seat].discard(event.tile)
        line = line.apply(event)
    return False


def _block_tied(rules: Ruleset, result: HandResult) -> bool:
    """Whether the sides tie on the block's count (``block_winner``'s own reading), however
    ``block_tie`` then broke it."""
    pips = result.pips
    if rules.block_winner is BlockWinner.LOWEST_SEAT:
        low = min(pips)
        tied = {rules.side_of(s) for s, p in enumerate(pips) if p == low}
    else:
        totals = [sum(pips[s] for s in rules.side_seats(d)) for d in range(rules.num_sides)]
        tied = {d for d, total in enumerate(totals) if total == min(totals)}
    return len(tied) > 1


def _refused_bonuses(rules: Ruleset, record: HandRecord, result: HandResult) -> set[str]:
    """A final tile that fits both open ends but whose bonus was refused by ``no_double`` or
    ``distinct_ends`` (the three strengths of capicua, docs/rules.md decision 9)."""
    plays = [e for e in record.events if isinstance(e, Play)]
    if result.end is not HandEnd.DOMINO or len(plays) < 2:
        return set()
    ends = Line.of(plays[:-1]).ends
    assert ends is not None
    tile, (left, right) = plays[-1].tile, ends
    both = {tile.low, tile.high} == {left, right} if left != right else _fits(tile, left)
    found: set[str] = set()
    for bonus in rules.finish_bonus:
        if not both or bonus.name in result.bonuses:
            continue
        if bonus.no_double and tile.is_double:
            found.add("capicua_refused_double")
        elif bonus.distinct_ends and left == right:
            found.add("capicua_refused_equal_ends")
    return found


def _result_features(rules: Ruleset, record: HandRecord, result: HandResult) -> set[str]:
    found = {"domino" if result.end is HandEnd.DOMINO else "block"}
    if result.end is HandEnd.BLOCK and _block_tied(rules, result):
        opening = rules.side_of(result.opener)
        if result.winner is None:
            found.add("block_tie_no_winner")
        elif result.winner == opening:
            found.add("block_tie_opening_side")
    found |= {b for b in result.bonuses if b in ("capicua", "key_bone")}
    plays = [e for e in record.events if isinstance(e, Play)]
    if "capicua" in result.bonuses and plays and plays[-1].tile.is_double:
        found.add("capicua_on_double")
    found |= _refused_bonuses(rules, record, result)
    if result.reset is Reset.REPLY:
        found.add("reply_reset")
    elif result.reset is Reset.ALL_SCORED:
        found.add("all_scored_reset")
    return found


def _event_features(record: HandRecord) -> set[str]:
    found: set[str] = set()
    for event in record.events:
        if isinstance(event, Pass):
            found.add("pass")
        elif isinstance(event, Draw):
            found.add("draw")
        elif isinstance(event, Defer):
            found.add("defer")
        elif isinstance(event, RedealChoice):
            found.add("redeal" if event.redeal else "redeal_declined")
    if _has_forced_move(record):
        found.add("forced_move")
    return found


def _locker_opens(rules: Ruleset, hands: Sequence[HandRecord]) -> bool:
    if rules.block_opener is not BlockOpener.LOCKER_IF_WON:
        return False
    for before, after in zip(hands, hands[1:], strict=False):
        r, nxt = before.result, after.result
        if r is None or nxt is None or r.end is not HandEnd.BLOCK or r.winner is None:
            continue
        if rules.side_of(r.seat) == r.winner and nxt.opener == r.seat:
            return True
    return False


def _match_features(replay: Replay) -> set[str]:
    found: set[str] = set()
    outcome = replay.outcome
    if outcome is not None:
        if outcome.shutout:
            found |= {"shutout", outcome.shutout}
        if outcome.termination is Termination.HAND_LIMIT:
            found.add("hand_limit")
    if _locker_opens(replay.ruleset, replay.hands):
        found.add("locker_opens")
    preset, seed, bots = README_EXAMPLE
    example = load_preset(preset)
    if (replay.ruleset, replay.seed, replay.players) == (example, seed, (bots,) * example.seats):
        found.add("readme_example")
    return found


def features(replay: Replay) -> set[str]:
    """Every feature (a name of :data:`FEATURES`) the replay exhibits, from its records."""
    found = _match_features(replay)
    for record in replay.hands:
        found |= _event_features(record)
        if record.result is not None:
            found |= _result_features(replay.ruleset, record, record.result)
    return found


# -- blessing -------------------------------------------------------------------------------


def replay_text(replay: Replay) -> str:
    """What a replay file holds (gzip aside): compared as text, so a different zlib that
    compresses the same replay to other bytes is no change."""
    return replay_to_json(replay) + "\n"


def stored_text(path: Path) -> str | None:
    """The text of an existing replay file, None when it is missing or unreadable."""
    try:
        raw = path.read_bytes()
        return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError):
        return None


def orphans(recipes: Sequence[Recipe], folder: Path = GOLDEN) -> list[Path]:
    """Replay files in ``folder`` that no recipe writes (verify would still check them)."""
    known = {r.file for r in recipes}
    return sorted(
        p
        for p in folder.rglob("*")
        if p.name.endswith(SUFFIXES) and p.relative_to(folder).as_posix() not in known
    )


@dataclass(frozen=True)
class Blessed:
    """One recipe played now: its replay, and what is wrong with it, if anything."""

    recipe: Recipe
    path: Path
    replay: Replay
    missing: tuple[str, ...]  # listed features the replay no longer shows
    changed: bool  # the file is missing or holds another replay


def bless_one(recipe: Recipe, folder: Path = GOLDEN) -> Blessed:
    path = folder / recipe.file
    replay = play(recipe)
    missing = tuple(f for f in recipe.features if f not in features(replay))
    changed = stored_text(path) != replay_text(replay)
    return Blessed(recipe, path, replay, missing, changed)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _first_divergence(old: Replay, new: Replay) -> str:
    """Where a stored replay that still verifies parts from the one its recipe plays now."""
    for name in ("ruleset", "seed", "players"):
        if getattr(old, name) != getattr(new, name):
            return f"the recipe's {name} differs from the file's"
    for before, now in zip(old.hands, new.hands, strict=False):
        for i, (a, b) in enumerate(zip(before.events, now.events, strict=False)):
            if a != b:
                where = f"hand {before.hand + 1}, event {i + 1}"
                return f"the bots decide otherwise at {where}: {a} -> {b}"
    if len(old.hands) != len(new.hands):
        return f"{len(old.hands)} hands -> {len(new.hands)}"
    return "the same match, written differently (the replay format)"


def why_changed(path: Path, replay: Replay) -> str:
    """Why the file no longer holds ``replay``: an engine change shows as a mismatch of
    the stored file itself; otherwise the recipe or the bots play another match."""
    if not path.exists():
        return "missing"
    try:
        verify(read_replay(path))
    except (ReplayError, ReplayMismatch) as e:
        return f"changed: the engine rejects the file: {e}"
    return f"changed: {_first_divergence(read_replay(path), replay)}"


def _lost_features(b: Blessed) -> str:
    finds = "".join(f" --find {f}" for f in b.recipe.features)  # the new seed needs them all
    sets = "".join(f" --set '{o}'" for o in b.recipe.overrides)
    return (
        f"{_shown(b.path)}: no longer shows {', '.join(b.missing)}; pick a new seed: "
        f"python tools/bless_golden.py{finds} --preset {b.recipe.preset}{sets} "
        f"--bots {b.recipe.bots}"
    )


def bless(
    check: bool,
    recipes: Sequence[Recipe],
    folder: Path = GOLDEN,
    out: Callable[[str], None] = print,
    err: Callable[[str], None] = _to_stderr,
) -> int:
    """Play every recipe; with ``check`` only report. Exit status: 1 when a recipe lost a
    feature, a file has no recipe, or (with ``check``) a file would change."""
    results = [bless_one(r, folder) for r in recipes]
    errors = [_lost_features(b) for b in results if b.missing]
    errors += [
        f"{_shown(p)}: not in {_shown(CORPUS)}; add its recipe or delete it"
        for p in orphans(recipes, folder)
    ]
    for line in errors:
        err(f"bless_golden: {line}")
    if errors:
        return 1  # nothing is written: the corpus stays as it was, all of a piece
    changed = [b for b in results if b.changed]
    for b in changed:
        why = why_changed(b.path, b.replay)
        if not check:
            write_replay(b.path, b.replay)
        out(f"{_shown(b.path)}: {why}; {'would be written' if check else 'written'}")
    verb = "would be written" if check else "written"
    unchanged = len(results) - len(changed)
    out(f"{len(results)} golden replays: {len(changed)} {verb}, {unchanged} unchanged")
    return 1 if check and changed else 0


# -- finding seeds --------------------------------------------------------------------------


def find(
    wanted: Sequence[str],
    preset: str,
    overrides: Sequence[str],
    bots: str,
    seeds: range,
    limit: int,
    out: Callable[[str], None] = print,
) -> int:
    """Print the ``limit`` smallest replays among ``seeds`` that show every feature in
    ``wanted`` (smallest first: the corpus should stay small), with their seeds."""
    hits: list[tuple[int, int, str]] = []  # (gzipped size, seed, line)
    for seed in seeds:
        recipe = Recipe("found.json.gz", preset, tuple(overrides), seed, bots, tuple(wanted))
        replay = play(recipe)
        shown = features(replay)
        if all(f in shown for f in wanted):
            size = len(gzip.compress(replay_text(replay).encode(), mtime=0))
            names = ", ".join(sorted(shown))
            line = (
                f"seed {seed}: {len(replay.hands)} hand(s), {size} bytes gzipped; features: {names}"
            )
            hits.append((size, seed, line))
    if not hits:
        out(f"no seed in {seeds.start}..{seeds.stop - 1} shows {', '.join(wanted)}")
        return 1
    for _, _, line in sorted(hits)[:limit]:
        out(line)
    out(f"{len(hits)} of {len(seeds)} seeds show {', '.join(wanted)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    parser.add_argument("--features", action="store_true", help="list the feature names")
    parser.add_argument("--find", action="append", metavar="FEATURE", help="search seeds")
    parser.add_argument("--preset", help="the preset --find plays")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KNOB=VALUE",
        help="an override for --find (repeatable)",
    )  # fmt: skip
    parser.add_argument("--bots", default="random", help="bots for --find (default: random)")
    parser.add_argument("--from", dest="start", type=int, default=0, help="first seed")
    parser.add_argument("--seeds", type=int, default=500, help="how many seeds to try")
    parser.add_argument("--limit", type=int, default=5, help="how many seeds to print")
    args = parser.parse_args(argv)
    try:
        if args.features:
            for name, meaning in FEATURES.items():
                print(f"{name:<24} {meaning}")
            return 0
        if args.find:
            if not args.preset:
                parser.error("--find needs --preset")
            unknown = [f for f in args.find if f not in FEATURES]
            if unknown:
                parser.error(f"unknown features {unknown} (see --features)")
            seeds = range(args.start, args.start + args.seeds)
            return find(args.find, args.preset, args.overrides, args.bots, seeds, args.limit)
        return bless(args.check, load_recipes())
    except (CapicuaError, ReplayError) as e:
        _to_stderr(f"bless_golden: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
