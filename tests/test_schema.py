"""One declared schema for tournament and experiment files: the ``[matches]`` section
they share, files written before it, one-line errors naming the path over the command
line, and ``capicua schema``'s JSON Schema checking the files the documents show."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from capicua.arena.config import TournamentError, load_tournament
from capicua.arena.experiment.config import ExperimentError, build, load_experiment, make_arm
from capicua.arena.ladder.config import LadderError, ladder_from_mapping, load_ladder
from capicua.arena.sprt_runner import (
    BASE,
    CANDIDATE,
    SprtConfig,
    SprtError,
    build_run,
    parse_bot,
)
from capicua.cli import main
from capicua.engine.rules import load_preset, preset_names
from tests.clirunner import cli_runner

ROOT = Path(__file__).resolve().parent.parent
BOTS = '[bots]\na = "builtin:random"\nb = "builtin:easy"\n'
ARMS = '[base]\npreset = "block"\n[candidate]\npreset = "block"\noverrides = ["target=50"]\n'


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def _error(args: list[str], cwd: Path) -> str:
    """Run ``capicua ARGS``: it must fail with one line on stderr and write nothing."""
    before = set(cwd.iterdir())
    res = cli_runner().invoke(main, args)
    assert res.exit_code == 2, (res.output, res.stderr)
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert set(cwd.iterdir()) == before  # nothing written
    return res.stderr.strip()


# -- [matches] ------------------------------------------------------------------------------


def test_a_tournament_reads_its_matches_section_and_the_old_top_level_keys(
    tmp_path: Path,
) -> None:
    new = load_tournament(
        _write(
            tmp_path,
            'preset = "block"\n[matches]\nseed = 7\nconcurrency = 3\ntime_limit_ms = 900\n'
            f'server = "127.0.0.1:1"\n{BOTS}',
        )
    )
    assert (new.seed, new.concurrency, new.time_limit_ms, new.server) == (7, 3, 900, "127.0.0.1:1")
    old = load_tournament(
        _write(
            tmp_path,
            'preset = "block"\nseed = 7\nconcurrency = 3\ntime_limit_ms = 900\n'
            f'server = "127.0.0.1:1"\n{BOTS}',
        )
    )
    assert old == new and old.digest() == new.digest()  # the same tournament: it resumes
    default = load_tournament(_write(tmp_path, f'preset = "block"\n{BOTS}'))
    assert (default.seed, default.concurrency, default.time_limit_ms) == (1, 2, 5000)


def test_an_experiment_reads_its_matches_section_and_matches_as_a_count(tmp_path: Path) -> None:
    new = load_experiment(
        _write(
            tmp_path,
            'unit = "match"\npairs = 12\nbots = "random"\n'
            f"[matches]\nseed = 9\ntime_limit_ms = 700\n{ARMS}",
        )
    )
    # files before the table: an integer `matches` is the pairs at unit match
    old = load_experiment(
        _write(
            tmp_path,
            f'unit = "match"\nmatches = 12\nseed = 9\ntime_limit_ms = 700\nbots = "random"\n{ARMS}',
        )
    )
    assert (new.pairs, new.seed, new.time_limit_ms, new.concurrency) == (12, 9, 700, 4)
    assert new.digest() == old.digest()
    tie = ARMS.replace("target=50", "block_tie=opening_side")  # a knob a hand shows
    hands = load_experiment(_write(tmp_path, f'pairs = 30\nbots = "random"\n{tie}'))
    assert (hands.unit, hands.pairs) == ("hand", 30)


BAD_TOURNAMENTS = [
    (
        f'preset = "block"\n[matches]\ntime_limit_ms = "x"\n{BOTS}',
        "matches.time_limit_ms: expected an integer from 50 to 3600000, got 'x'",
    ),
    (
        f'preset = "block"\nseed = 1\n[matches]\nseed = 2\n{BOTS}',
        "seed: given at the top and as matches.seed; keep matches.seed",
    ),
    (
        f'preset = "block"\n[matches]\nsead = 2\n{BOTS}',
        "matches.sead: unknown key 'sead' (did you mean 'seed'?); known: concurrency, "
        "seed, server, time_limit_ms",
    ),
    (
        f'preset = "block"\nmatches = 3\n{BOTS}',
        "matches: expected a table, got 3",
    ),
    (
        f'preset = "block"\nformat = "swiss"\n{BOTS}',
        "format: expected one of round-robin, gauntlet, got 'swiss'",
    ),
    (
        f'preset = "block"\noverrides = "target=50"\n{BOTS}',
        "overrides: expected a list of strings, e.g. [\"target=50\"], got 'target=50'",
    ),
    (
        f'preset = "block"\ngamez = 2\n{BOTS}',
        "gamez: unknown key 'gamez' (did you mean 'games'?); known: bots, candidate, "
        "concurrency, format, games, matches, max_crashes, name, on_timeout, overrides, "
        "preset, seed, server, time_limit_ms",
    ),
    (
        f'preset = "block"\noverrides = ["target=50", "hand_sise=3"]\n{BOTS}',
        "overrides[1]: hand_sise: unknown knob",
    ),
]
BAD_EXPERIMENTS = [
    (
        f'bots = "random"\n{ARMS.replace("target=50", "target=0")}',
        "candidate.overrides[0]: target: expected an integer of at least 1, got 0",
    ),
    (
        f'bots = "random"\n[matches]\nseed = -1\n{ARMS}',
        "matches.seed: expected an integer from 0 to 9223372036854775807, got -1",
    ),
    (
        f'bots = "random"\nmatches = "many"\n{ARMS}',
        "matches: a [matches] table, or the number of pairs: expected an integer from 1 "
        "to 10000000, got 'many'",
    ),
    (
        f'bots = "random"\nhands = 0\n{ARMS}',
        "hands: expected an integer from 1 to 10000000, got 0",
    ),
    (
        f'bots = "random"\npairs = 10\nhands = 10\n{ARMS}',
        "pairs: give one of pairs, hands and matches = N",
    ),
    (
        'bots = "random"\n[sweep]\npreset = "block"\nknob = "target"\nvalues = 50\n',
        "sweep.values: expected a list of values, got 50",
    ),
    (
        f'bots = "random"\n{ARMS}label = "a b"\n',
        "candidate.label: expected 1-40 characters without spaces or commas, got 'a b'",
    ),
    (
        f"bots = [1]\n{ARMS}",
        'bots: expected a list of strings, e.g. ["hard"], got [1]',
    ),
    (
        f'bots = "random"\nskill = 3\n{ARMS}',
        'skill: expected a list of strings, e.g. ["hard:random"], got 3',
    ),
    (
        f'bots = "random"\n{ARMS}prest = "block"\n',
        "candidate.prest: unknown key 'prest' (did you mean 'preset'?); known: label, "
        "overrides, preset",
    ),
]


@pytest.mark.parametrize(
    ("command", "text", "message"),
    [("arena", t, m) for t, m in BAD_TOURNAMENTS]
    + [("experiment", t, m) for t, m in BAD_EXPERIMENTS],
)
def test_a_bad_file_is_one_line_naming_the_path(
    tmp_path: Path, command: str, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    err = _error([command, "run", str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert err == f"capicua: error: {path}: {message}"


# -- capicua schema -------------------------------------------------------------------------


def _schema(kind: str) -> dict[str, Any]:
    res = cli_runner().invoke(main, ["schema", kind])
    assert res.exit_code == 0, (res.output, res.stderr)
    data: dict[str, Any] = json.loads(res.stdout)
    jsonschema.Draft202012Validator.check_schema(data)
    return data


def _documented_files() -> list[tuple[str, str]]:
    """Every TOML file the documents show, with the kind of study it is: an experiment has
    arms, a tournament a preset; a lone [bots] table is part of a tournament file."""
    out = []
    for doc in ["README.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))]:
        path = ROOT / doc if doc == "README.md" else ROOT / "docs" / doc
        for block in re.findall(r"^```toml\n(.*?)^```", path.read_text(), re.M | re.S):
            if re.search(r"^\[(base|sweep|measure)\]", block, re.M):
                out.append(("experiment", block))
            elif re.search(r"^preset = ", block, re.M):
                out.append(("tournament", block))
            else:
                out.append(("tournament", f'preset = "block"\n{block}'))
    return out


def test_the_schema_checks_every_documented_file_and_rejects_bad_ones() -> None:
    import tomllib

    schemas = {kind: _schema(kind) for kind in ("tournament", "experiment")}
    files = _documented_files()
    assert {kind for kind, _ in files} == {"tournament", "experiment"}
    for kind, text in files:
        jsonschema.validate(tomllib.loads(text), schemas[kind])
    bad_tournaments = [
        {"preset": "block", "matches": {"time_limit_ms": "x"}, "bots": {"a": "builtin:hard"}},
        {"preset": "block", "gamez": 1},
        {"preset": "block", "bots": {"a": "robot:x"}},
        {"bots": {"a": "builtin:hard"}},
    ]
    for data in bad_tournaments:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schemas["tournament"])
    good = {"base": {"preset": "block"}, "candidate": {"preset": "block"}, "matches": 5}
    jsonschema.validate(good, schemas["experiment"])  # matches = N, as files always had it
    for bad in ({**good, "matches": {"seed": -1}}, {**good, "base": {"preset": "block", "x": 1}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schemas["experiment"])


def test_a_ladder_reads_its_matches_section_and_the_schema_checks_its_example(
    tmp_path: Path,
) -> None:
    import tomllib

    example = ROOT / "docs" / "examples" / "ladder.toml"
    data = tomllib.loads(example.read_text())
    assert "matches" in data  # the documented form
    schema = _schema("ladder")
    jsonschema.validate(data, schema)
    old_form = {k: v for k, v in data.items() if k != "matches"} | data["matches"]
    jsonschema.validate(old_form, schema)  # a file written before [matches]
    ladder = load_ladder(example)
    assert ladder.tournament.time_limit_ms == data["matches"]["time_limit_ms"]
    assert ladder_from_mapping(old_form, example.parent).digest() == ladder.digest()
    for bad in (
        {**data, "games": 3},
        {**data, "matchmaking": {"pair_cap": 0}},
        {**data, "matches": {"concurrency": 0}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    with pytest.raises(LadderError, match=r"^matches\.concurrency: expected an integer from 1"):
        ladder_from_mapping({**data, "matches": {"concurrency": 0}}, example.parent)


def test_the_rules_schema_checks_every_preset_file_and_rejects_bad_ones() -> None:
    import tomllib

    schema = _schema("rules")
    folder = ROOT / "server" / "capicua" / "engine" / "presets"
    presets = sorted(folder.glob("*.toml"))
    assert len(presets) == len(preset_names())
    for path in presets:  # the shipped rulesets: some whole, some extending another
        jsonschema.validate(tomllib.loads(path.read_text()), schema)
    assert set(load_preset("el-dominito").knobs()) <= set(schema["properties"])
    block = load_preset("block").knobs()
    jsonschema.validate(block, schema)
    bad = [
        {**block, "hand_sise": 7},
        {**block, "seats": 5},
        {**block, "stock": "boneyard"},
        {**block, "reply_resets": 1},
        {**block, "first_opener": "youngest"},
        {**block, "finish_bonus": [{"name": "x", "effect": "times:2"}]},
        {**block, "shutout": {"name": "p", "multiplier": 0}},
        {k: v for k, v in block.items() if k != "target"},  # whole, so every knob is needed
        {"extends": "block", "target": 0},
    ]
    for data in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schema)
    jsonschema.validate({"extends": "block", "target": 50}, schema)


def test_an_unknown_schema_is_one_line() -> None:
    res = cli_runner().invoke(main, ["schema", "tournaments"])
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert "'tournaments' is not one of 'tournament', 'experiment', 'ladder', 'rules'" in res.stderr


def test_the_loaders_refuse_what_the_schema_refuses(tmp_path: Path) -> None:
    with pytest.raises(TournamentError, match=r"bots\.a: 'robot:x' is not KIND:TARGET"):
        load_tournament(_write(tmp_path, 'preset = "block"\n[bots]\na = "robot:x"\nb = "x"\n'))
    with pytest.raises(ExperimentError, match=r"base\.x: unknown key 'x'"):
        load_experiment(
            _write(tmp_path, f'bots = "random"\n{ARMS}'.replace("[base]", "[base]\nx = 1"))
        )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"seed": -1}, "seed: expected an integer from 0 to 9223372036854775807, got -1"),
        ({"time_limit_ms": 10}, "time_limit_ms: expected an integer from 50 to 3600000, got 10"),
        ({"concurrency": 0}, "concurrency: expected an integer from 1 to 4096, got 0"),
    ],
)
def test_every_study_checks_its_match_settings_as_matches_does(
    tmp_path: Path, settings: dict[str, int], message: str
) -> None:
    """An experiment and an SPRT given their settings in code (or by options) refuse them
    in the words of a [matches] table."""
    given: dict[str, Any] = {"seed": 1, "concurrency": 1, "time_limit_ms": 1000} | settings
    arms = [make_arm("a", "block", [], "base"), make_arm("b", "block", ["target=50"], "b")]
    with pytest.raises(ExperimentError) as experiment_error:
        build(kind="ab", arms=arms, bots=["random"], unit="match", hands=None, matches=5,
              **given)  # fmt: skip
    assert str(experiment_error.value) == message
    with pytest.raises(SprtError) as sprt_error:
        build_run(
            base=parse_bot("--base", "random", BASE),
            candidate=parse_bot("--candidate", "easy", CANDIDATE),
            preset="block", overrides=(), ruleset=load_preset("block"),
            test=SprtConfig(0, 5, 0.05, 0.05, "normalized"), max_pairs=10, workers=1,
            server=None, base_dir=tmp_path, options={}, **given,
        )  # fmt: skip
    assert str(sprt_error.value) == message
