"""The golden replays in tests/golden/: a corpus of real matches that guards the engine's
outcomes, described by tests/golden/corpus.toml and re-blessed by tools/bless_golden.py.

A failure here means one of three things: the engine now plays a stored match differently
(``capicua replay verify tests/golden`` names the first divergent event), a preset file
changed its knobs, or the corpus and its recipe file disagree. Re-bless only when the change
is intended: ``python tools/bless_golden.py`` (see tests/golden/README.md).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import Result

from capicua.cli import main
from capicua.cli.play import seat_names
from capicua.engine.actions import DEFER, KEEP, REDEAL, Action
from capicua.engine.game import Game
from capicua.engine.line import Line
from capicua.engine.records import (
    Defer,
    Event,
    HandRecord,
    Play,
    RedealChoice,
    Replay,
)
from capicua.engine.rules import load_preset, preset_names
from capicua.wire import codec
from tests.clirunner import cli_runner

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def _load_tool() -> ModuleType:
    """tools/ is not a package: load the bless tool from its file, as a module of its own."""
    spec = importlib.util.spec_from_file_location(
        "bless_golden", ROOT / "tools" / "bless_golden.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bless_golden"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bless = _load_tool()
RECIPES = bless.load_recipes()
BY_FILE = {r.file: r for r in RECIPES}


def run(*args: str) -> Result:
    return cli_runner().invoke(main, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


@pytest.fixture(scope="module")
def stored() -> dict[str, Replay]:
    return {r.file: codec.read_replay(GOLDEN / r.file) for r in RECIPES}


def no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output + result.stderr


# -- (a) the whole corpus verifies ------------------------------------------------------------


def test_replay_verify_accepts_the_whole_corpus() -> None:
    result = run("replay", "verify", str(GOLDEN))
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    files = sorted(GOLDEN / r.file for r in RECIPES)
    assert len(lines) == len(files) + 1
    for line, path in zip(lines, files, strict=False):
        assert line.startswith(f"{path}: OK ("), line
    assert lines[-1] == f"{len(files)} replays: {len(files)} OK, 0 failed"


def test_every_file_has_a_recipe_and_every_recipe_a_file() -> None:
    assert bless.orphans(RECIPES) == []
    assert all((GOLDEN / r.file).is_file() for r in RECIPES)


def test_the_corpus_stays_small() -> None:
    total = sum((GOLDEN / r.file).stat().st_size for r in RECIPES)
    assert total < 500_000, f"{total} bytes: pick smaller seeds or lower targets"


def test_each_file_is_the_json_writer_text_of_its_replay(stored: dict[str, Replay]) -> None:
    """The JSON writer gives, byte for byte, the text the golden replays were written with
    (json_format's mapping, keys in .proto order, think_times only when there are some)."""
    assert stored
    for name, replay in stored.items():
        assert bless.replay_text(replay) == bless.stored_text(GOLDEN / name), name


# -- (b) every preset, (c) every feature, (d) every stored ruleset ---------------------------


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_has_a_file_played_under_the_unchanged_preset(
    name: str, stored: dict[str, Replay]
) -> None:
    files = [r.file for r in RECIPES if r.preset == name and r.is_plain_preset]
    assert files, f"no golden replay of the preset {name} as shipped"
    assert all(stored[f].ruleset == load_preset(name) for f in files)


def test_every_required_feature_is_covered() -> None:
    listed = {f for r in RECIPES for f in r.features}
    assert set(bless.REQUIRED_FEATURES) - listed == set()


@pytest.mark.parametrize("r", RECIPES, ids=lambda r: r.file)
def test_each_file_exhibits_its_listed_features(r: Any, stored: dict[str, Replay]) -> None:
    assert r.features, f"{r.file}: a recipe must list what it is there for"
    found = bless.features(stored[r.file])
    assert set(r.features) - found == set(), f"{r.file} shows {sorted(found)}"


@pytest.mark.parametrize("r", RECIPES, ids=lambda r: r.file)
def test_each_file_was_played_from_its_recipe(r: Any, stored: dict[str, Replay]) -> None:
    """The stored ruleset is the preset with the recipe's overrides, knob for knob: a replay
    stores every knob, so this also catches an edited preset file."""
    replay = stored[r.file]
    assert replay.ruleset == load_preset(r.preset, r.overrides)
    assert replay.seed == r.seed
    assert list(replay.players) == seat_names(replay.ruleset, r.bots)


def _engine_forced_moves(replay: Replay) -> int:
    """How many mid-hand decisions had a single legal action, counted by the engine itself
    (recorded decisions fed to a match that asks even for single options)."""
    state = Game(replay.ruleset).new_match(replay.seed, auto_forced=False)
    count = 0
    for record in replay.hands:
        for i, event in enumerate(record.events):
            if len(state.log.record(record.hand).events) > i:
                continue  # a draw or pass: the engine made it itself
            if state.ends is not None and len(state.legal_actions()) == 1:
                count += 1
            if isinstance(event, Play):
                state.apply_action(Action.play(event.tile, event.end))
            elif isinstance(event, Defer):
                state.apply(DEFER)
            elif isinstance(event, RedealChoice):
                state.apply(REDEAL if event.redeal else KEEP)
    return count


def test_forced_move_detection_agrees_with_the_engine(stored: dict[str, Replay]) -> None:
    """The feature is read from the records alone; the engine's own legal actions agree."""
    for name, replay in stored.items():
        assert ("forced_move" in bless.features(replay)) == (_engine_forced_moves(replay) > 0), name


# -- (e) the README's worked example ---------------------------------------------------------


def _readme_example_lines() -> list[str]:
    """The lines the README shows for ``capicua play --rules dominican --seed 5``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"\$ capicua play --rules dominican --seed 5 [^\n]*\n(.*?)```", text, re.S)
    assert block is not None, "the README's worked example is gone"
    return [line for line in block.group(1).splitlines() if line.strip() != "(...)"]


def test_the_readme_example_is_what_play_plays_now(tmp_path: Path) -> None:
    (recipe,) = [r for r in RECIPES if "readme_example" in r.features]
    path = tmp_path / "match.json.gz"
    result = run("play", "--rules", "dominican", "--seed", "5", "--replay", str(path))
    assert result.exit_code == 0, result.output + result.stderr
    assert codec.read_replay(path) == codec.read_replay(GOLDEN / recipe.file)
    out = result.stdout.splitlines()
    shown = [line for line in _readme_example_lines() if not line.startswith("replay written")]
    assert [line for line in shown if line not in out] == []


# -- (f) verifying a directory ---------------------------------------------------------------


def _tampered(replay: Replay, hand: int, events: list[Event]) -> Replay:
    hands = list(replay.hands)
    hands[hand] = dataclasses.replace(hands[hand], events=tuple(events))
    return dataclasses.replace(replay, hands=tuple(hands))


def _swap_plays(replay: Replay) -> tuple[Replay, HandRecord, int]:
    """Swap two successive plays of different seats (the first with 3 events before it):
    the first divergent event is the earlier of the two."""
    for record in replay.hands:
        events = list(record.events)
        for i in range(3, len(events) - 1):
            a, b = events[i], events[i + 1]
            if isinstance(a, Play) and isinstance(b, Play) and a.seat != b.seat:
                events[i], events[i + 1] = b, a
                return _tampered(replay, record.hand, events), record, i
    raise AssertionError("no two successive plays to swap")


def _ends(events: tuple[Event, ...]) -> str:
    ends = Line.of(events).ends
    assert ends is not None
    return f"{ends[0]}|{ends[1]}"


def _last_three(events: tuple[Event, ...], i: int) -> str:
    return ", ".join(f"#{j + 1} {events[j]}" for j in range(i - 3, i))


def test_a_directory_with_a_good_and_a_tampered_replay(tmp_path: Path) -> None:
    source = GOLDEN / "readme-example.json.gz"
    good = tmp_path / "a-good.json.gz"
    bad = tmp_path / "nested" / "b-bad.json"  # found below the directory, plain JSON too
    bad.parent.mkdir()
    shutil.copy(source, good)
    tampered, record, i = _swap_plays(codec.read_replay(source))
    codec.write_replay(bad, tampered)
    (tmp_path / "notes.txt").write_text("not a replay: ignored\n")

    result = run("replay", "verify", str(tmp_path))
    assert result.exit_code == 1
    no_traceback(result)
    out = result.stdout.splitlines()
    assert out[0].startswith(f"{good}: OK (")
    assert out[-1] == "2 replays: 1 OK, 1 failed"
    (line,) = result.stderr.splitlines()
    first, second = record.events[i], record.events[i + 1]
    assert line == (
        f"{bad}: MISMATCH: hand {record.hand + 1}, event {i + 1}: replay has {second}, but seat "
        f"{first.seat} is to act; open ends {_ends(record.events[:i])}; "
        f"last events: {_last_three(record.events, i)}"
    )


def test_a_changed_result_names_the_end_of_its_hand(tmp_path: Path) -> None:
    replay = codec.read_replay(GOLDEN / "readme-example.json.gz")
    record = replay.hands[-1]
    assert record.result is not None
    result = dataclasses.replace(record.result, points=record.result.points + 1)
    hands = (*replay.hands[:-1], dataclasses.replace(record, result=result))
    path = tmp_path / "points.json"
    codec.write_replay(path, dataclasses.replace(replay, hands=hands))
    done = run("replay", "verify", str(path))
    assert done.exit_code == 1
    n = len(record.events)
    assert done.stderr.strip() == (
        f"{path}: MISMATCH: hand {record.hand + 1}: result points: replay {result.points}, engine "
        f"{record.result.points}; at the end of the hand (after {n} events), open ends "
        f"{_ends(record.events)}; last events: {_last_three(record.events, n)}"
    )


def test_a_divergence_at_the_first_event_of_a_hand(tmp_path: Path) -> None:
    replay = codec.read_replay(GOLDEN / "preset-block.json.gz")
    record = replay.hands[1]
    first = record.events[0]
    assert isinstance(first, Play)
    wrong = Play((first.seat + 1) % replay.ruleset.seats, first.tile, first.end)
    path = tmp_path / "opening.json.gz"
    codec.write_replay(path, _tampered(replay, 1, [wrong, *record.events[1:]]))
    done = run("replay", "verify", str(path))
    assert done.exit_code == 1
    assert done.stderr.strip() == (
        f"{path}: MISMATCH: hand 2, event 1: replay has {wrong}, but seat {first.seat} is to "
        "act; open ends none yet; last events: none (the hand's first event)"
    )


def test_an_unreadable_file_in_a_directory_is_a_failure(tmp_path: Path) -> None:
    shutil.copy(GOLDEN / "preset-draw.json.gz", tmp_path / "good.json.gz")
    (tmp_path / "broken.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    result = run("replay", "verify", str(tmp_path))
    assert result.exit_code == 1
    no_traceback(result)
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{tmp_path / 'broken.json.gz'}: UNREADABLE: corrupt or truncated")
    assert result.stdout.splitlines()[-1] == "2 replays: 1 OK, 1 failed"


@pytest.mark.parametrize("kind", ["missing", "empty-directory"])
def test_a_missing_path_or_an_empty_directory_exits_2(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nowhere" if kind == "missing" else tmp_path
    (tmp_path / "readme.txt").write_text("no replays here\n")
    result = run("replay", "verify", str(GOLDEN / "preset-draw.json.gz"), str(path))
    assert result.exit_code == 2
    assert result.stdout == ""  # checked before any replay is verified
    no_traceback(result)
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"capicua: error: replay {path}: ")


# -- replay verify --json ---------------------------------------------------------------------


def verify_json(*paths: Path) -> tuple[Result, Any]:
    result = run("replay", "verify", "--json", *map(str, paths))
    no_traceback(result)
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout  # one object, one line
    return result, json.loads(lines[0])


def test_json_of_the_whole_corpus(stored: dict[str, Replay]) -> None:
    result, out = verify_json(GOLDEN)
    assert result.exit_code == 0
    assert result.stderr == ""
    text = run("replay", "verify", str(GOLDEN)).stdout.splitlines()[:-1]
    assert len(out["replays"]) == len(text) == len(stored)
    for entry, line in zip(out["replays"], text, strict=True):
        assert set(entry) == {"path", "status", "message", "hands", "events"}
        replay = stored[Path(entry["path"]).name]
        assert entry["status"] == "ok"
        assert entry["hands"] == len(replay.hands)
        assert entry["events"] == sum(len(h.events) for h in replay.hands)
        noun = "hand" if entry["hands"] == 1 else "hands"
        assert line == f"{entry['path']}: OK ({entry['hands']} {noun}; {entry['message']})"
    n = len(stored)
    totals = {k: v for k, v in out.items() if k != "replays"}
    assert totals == {"total": n, "ok": n, "mismatch": 0, "unreadable": 0, "failed": 0}


def test_json_names_a_mismatch_and_an_unreadable_file_with_the_text_messages(
    tmp_path: Path,
) -> None:
    replay = codec.read_replay(GOLDEN / "readme-example.json.gz")
    record = replay.hands[-1]
    assert record.result is not None
    result = dataclasses.replace(record.result, points=record.result.points + 1)
    hands = (*replay.hands[:-1], dataclasses.replace(record, result=result))
    codec.write_replay(tmp_path / "a-changed.json", dataclasses.replace(replay, hands=hands))
    (tmp_path / "b-broken.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    shutil.copy(GOLDEN / "preset-draw.json.gz", tmp_path / "c-good.json.gz")
    done, out = verify_json(tmp_path)
    assert done.exit_code == 1  # as without --json
    assert done.stderr == ""
    changed, broken, good = out["replays"]
    text = run("replay", "verify", str(tmp_path))
    assert text.exit_code == 1
    assert text.stderr.splitlines() == [
        f"{changed['path']}: MISMATCH: {changed['message']}",
        f"{broken['path']}: UNREADABLE: {broken['message']}",
    ]
    assert (changed["status"], broken["status"], good["status"]) == ("mismatch", "unreadable", "ok")
    assert changed["hands"] == len(replay.hands)
    assert changed["events"] == sum(len(h.events) for h in replay.hands)
    assert broken["hands"] is broken["events"] is None
    assert broken["message"].startswith("corrupt or truncated")
    totals = {k: v for k, v in out.items() if k != "replays"}
    assert totals == {"total": 3, "ok": 1, "mismatch": 1, "unreadable": 1, "failed": 2}


def test_json_with_an_unreadable_file_named_still_reports_every_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    good = GOLDEN / "preset-draw.json.gz"
    done, out = verify_json(broken, good)
    assert done.exit_code == 2  # as without --json, where it stops the command
    assert [(r["path"], r["status"]) for r in out["replays"]] == [
        (str(broken), "unreadable"),
        (str(good), "ok"),
    ]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"capicua: error: replay {broken}: not valid JSON")
    assert line.endswith(out["replays"][0]["message"])


def test_json_of_a_missing_path_is_a_usage_error_without_json(tmp_path: Path) -> None:
    done = run(
        "replay", "verify", "--json", str(GOLDEN / "preset-draw.json.gz"), str(tmp_path / "x")
    )
    assert done.exit_code == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line == f"capicua: error: replay {tmp_path / 'x'}: no such file or directory"


# -- the bless tool ----------------------------------------------------------------------------

# Two small recipes: the tool's mechanics are under test here, not the corpus.
CHEAP = [BY_FILE["preset-draw.json.gz"], BY_FILE["rule-block-tie-no-winner-block.json.gz"]]


def _copy(recipes: list[Any], folder: Path) -> None:
    for r in recipes:
        shutil.copy(GOLDEN / r.file, folder / r.file)


def test_bless_check_finds_a_changed_file_and_bless_rewrites_it(tmp_path: Path) -> None:
    cheap = [BY_FILE["preset-draw.json.gz"], BY_FILE["readme-example.json.gz"]]
    _copy(cheap, tmp_path)
    lines: list[str] = []
    assert bless.bless(True, cheap, tmp_path, out=lines.append) == 0
    assert lines == ["2 golden replays: 0 would be written, 2 unchanged"]

    other = bless.play(dataclasses.replace(cheap[0], seed=cheap[0].seed + 1))
    codec.write_replay(tmp_path / cheap[0].file, other)  # a good replay, but not the recipe's
    lines.clear()
    assert bless.bless(True, cheap, tmp_path, out=lines.append) == 1
    assert lines[0] == (
        f"{tmp_path / cheap[0].file}: changed: the recipe's seed differs from the file's; "
        "would be written"
    )
    assert codec.read_replay(tmp_path / cheap[0].file) == other  # --check writes nothing

    lines.clear()
    assert bless.bless(False, cheap, tmp_path, out=lines.append) == 0
    assert codec.read_replay(tmp_path / cheap[0].file) == codec.read_replay(GOLDEN / cheap[0].file)
    assert bless.bless(True, cheap, tmp_path, out=lines.append) == 0


def test_bless_fails_naming_a_recipe_that_lost_its_feature(tmp_path: Path) -> None:
    recipe = BY_FILE["rule-block-tie-no-winner-block.json.gz"]
    lost = dataclasses.replace(recipe, seed=0)
    assert "block_tie_no_winner" not in bless.features(bless.play(lost))
    errors: list[str] = []
    assert bless.bless(False, [lost], tmp_path, out=errors.append, err=errors.append) == 1
    assert len(errors) == 1
    assert errors[0].startswith(
        f"bless_golden: {tmp_path / recipe.file}: no longer shows block_tie_no_winner; "
        "pick a new seed: python tools/bless_golden.py --find block_tie_no_winner --preset block "
        "--set 'target=1' --bots easy"
    )
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_bless_fails_on_a_replay_file_without_a_recipe(tmp_path: Path) -> None:
    _copy(CHEAP, tmp_path)
    shutil.copy(GOLDEN / "readme-example.json.gz", tmp_path / "stray.json.gz")
    errors: list[str] = []
    assert bless.bless(True, CHEAP, tmp_path, out=errors.append, err=errors.append) == 1
    assert errors[0].startswith(f"bless_golden: {tmp_path / 'stray.json.gz'}: not in ")


def test_find_prints_the_smallest_matching_seeds() -> None:
    lines: list[str] = []
    found = bless.find(
        ["hand_limit"], "block", ["max_hands=1"], "random", range(3), 2, lines.append
    )
    assert found == 0
    assert len(lines) == 3 and lines[-1] == "3 of 3 seeds show hand_limit"
    sizes = [int(line.split(" hand(s), ")[1].split(" bytes")[0]) for line in lines[:2]]
    assert sizes == sorted(sizes)  # smallest first
    lines.clear()
    assert bless.find(["redeal"], "block", [], "random", range(2), 2, lines.append) == 1
    assert lines == ["no seed in 0..1 shows redeal"]
