"""Bots with a working directory and options: the ``[bots.NAME]`` table of a tournament
file, ``--option KEY=VALUE`` on ``capicua bot builtin/run``, and a real ``capicua arena
run`` whose bots get them (an embedded server, bot subprocesses, no mocks)."""

from __future__ import annotations

import json
import sqlite3
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from capicua.arena.config import (
    BotSpec,
    TournamentError,
    load_tournament,
    toml_literal,
    tournament_from_mapping,
)
from capicua.arena.local import play_in_process
from capicua.arena.schedule import schedule
from capicua.arena.supervisor import bot_argv
from capicua.client import ClientError
from capicua.client.commands import load_bot, parse_options
from capicua.engine.rules import parse_assignment
from tests.test_arena_run import BASE, capicua

#: The docs' tournament file with string bots only, and its digest as computed before bots
#: could have a dir or options: existing result directories must keep resuming.
CLUB: dict[str, Any] = {
    "name": "club night",
    "preset": "block",
    "overrides": ["target=50"],
    "games": 4,
    "seed": 1,
    "time_limit_ms": 2000,
    "bots": {
        "hard": "builtin:hard",
        "mine": "python:my_bots:Greedy",
        "node": "cmd:node clients/node/examples/random_bot.js",
        "perl": "stdio:perl clients/stdio/random_bot.pl",
        "friend": "remote:friend-bot",
    },
}
CLUB_DIGEST = "97cc8cadda7e0aac133fd65f4b15512f1540a9ca1091d0d8cbd3cd5244fb50cc"

HEAD = """\
name = "t"
preset = "block"
overrides = ["target=30"]
games = 1
seed = 3
concurrency = 3
"""


def _file(tmp_path: Path, body: str, head: str = HEAD) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(head + textwrap.dedent(body))
    return path


def _with(bot: Any, base_dir: Path = Path(".")) -> Any:
    """A tournament of ``random`` and ``x`` = ``bot`` (a string or a table)."""
    data = {**CLUB, "bots": {"random": "builtin:random", "x": bot}}
    return tournament_from_mapping(data, base_dir)


# -- the tournament file -------------------------------------------------------------------


def test_a_bot_table_takes_a_spec_a_dir_and_options(tmp_path: Path) -> None:
    (tmp_path / "bots" / "mine").mkdir(parents=True)
    file = _file(
        tmp_path,
        """
        [bots]
        random = "builtin:random"
        quick = { spec = "builtin:hard", options = { iterations = 5, search = "flat" } }
        plain = { spec = "builtin:easy" }

        [bots.mine]
        spec = "python:my_bots:Greedy"
        dir = "./bots/mine/"
        options = { depth = 3, weights = [0.5, 1], style = { bold = true } }
        """,
    )
    t = load_tournament(file)
    quick, plain, mine = t.bot("quick"), t.bot("plain"), t.bot("mine")
    assert (quick.kind, quick.target, quick.dir) == ("builtin", "hard", None)
    assert quick.options == {"iterations": 5, "search": "flat"}
    assert plain == BotSpec("plain", "builtin", "easy")  # a table with a spec only
    assert mine.dir == "bots/mine"  # normalised: the same directory is the same digest
    assert mine.workdir(t.base_dir) == tmp_path / "bots" / "mine"
    assert quick.workdir(t.base_dir) == tmp_path  # no dir: the tournament file's
    assert mine.options == {"depth": 3, "weights": [0.5, 1], "style": {"bold": True}}
    assert quick.label == 'builtin:hard { iterations = 5, search = "flat" }'
    assert mine.label == (
        "python:my_bots:Greedy { depth = 3, weights = [0.5, 1], style = { bold = true } } "
        "in bots/mine"
    )
    assert t.canonical()["bots"] == {
        "random": "builtin:random",
        "quick": {"spec": "builtin:hard", "options": {"iterations": 5, "search": "flat"}},
        "plain": "builtin:easy",
        "mine": {
            "spec": "python:my_bots:Greedy",
            "dir": "bots/mine",
            "options": {"depth": 3, "weights": [0.5, 1], "style": {"bold": True}},
        },
    }


def test_the_docs_example_is_a_valid_tournament_file(tmp_path: Path) -> None:
    """The tournament file of config.py's docstring (and docs/arena.md's bots) loads."""
    import capicua.arena.config as config

    doc = str(config.__doc__)
    toml = textwrap.dedent(doc.split(".. code-block:: toml\n")[1].split("\nCommands")[0])
    (tmp_path / "bots" / "deep").mkdir(parents=True)
    (tmp_path / "club.toml").write_text(toml)
    t = load_tournament(tmp_path / "club.toml")
    assert t.bot("deep").options == {"depth": 3} and t.bot("deep").dir == "bots/deep"
    assert t.bot("quick").options == {"iterations": 50}


def test_string_form_bots_keep_the_digest_they_always_had() -> None:
    t = tournament_from_mapping(CLUB, Path("."))
    assert t.digest() == CLUB_DIGEST
    assert t.canonical()["bots"] == CLUB["bots"]
    # the same bots written as tables with only a spec are the same tournament
    tables = {name: {"spec": spec} for name, spec in CLUB["bots"].items()}
    assert tournament_from_mapping({**CLUB, "bots": tables}, Path(".")).digest() == CLUB_DIGEST
    empty = {**tables, "hard": {"spec": "builtin:hard", "options": {}}}
    assert tournament_from_mapping({**CLUB, "bots": empty}, Path(".")).digest() == CLUB_DIGEST


def test_a_bots_options_and_dir_are_part_of_the_digest(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    digests = [
        _with("python:m:C", tmp_path).digest(),
        _with({"spec": "python:m:C", "options": {"depth": 3}}, tmp_path).digest(),
        _with({"spec": "python:m:C", "options": {"depth": 4}}, tmp_path).digest(),
        _with({"spec": "python:m:C", "dir": "a"}, tmp_path).digest(),
        _with({"spec": "python:m:C", "dir": "b"}, tmp_path).digest(),
        _with({"spec": "python:m:C", "dir": "a", "options": {"depth": 3}}, tmp_path).digest(),
    ]
    assert len(set(digests)) == len(digests)
    # the same bot again is the same tournament; where the tournament folder is is not
    again = _with({"spec": "python:m:C", "dir": "a/", "options": {"depth": 3}}, tmp_path)
    assert again.digest() == digests[5]
    moved = tmp_path / "moved"
    (moved / "a").mkdir(parents=True)
    same = {"spec": "python:m:C", "dir": "a", "options": {"depth": 3}}
    assert _with(same, moved).digest() == digests[5]


@pytest.mark.parametrize(
    ("bot", "message"),
    [
        (3, 'bots.x: expected a string like "builtin:hard" or a table with spec, dir, options'),
        ({"spec": "builtin:hard", "opts": {}}, "bots.x: unknown key 'opts'; a bot's table takes"),
        ({"options": {"depth": 3}}, "bots.x.spec: expected a string"),
        ({"spec": "python:mod"}, "bots.x.spec: python: takes MODULE:CLASS"),
        ({"spec": "robot:x"}, "bots.x.spec: 'robot:x' is not KIND:TARGET"),
        ({"spec": "builtin:hard", "dir": "no/such/dir"}, "bots.x.dir: no directory 'no/such/dir'"),
        ({"spec": "python:m:C", "dir": 3}, "bots.x.dir: expected a directory name"),
        ({"spec": "python:m:C", "dir": ""}, "bots.x.dir: expected a directory name"),
        ({"spec": "remote:friend", "dir": "."}, "bots.x.dir: a remote: bot runs elsewhere"),
        (
            {"spec": "cmd:node bot.js", "options": {"depth": 3}},
            "bots.x.options: a cmd: bot takes no options; put its arguments in the command",
        ),
        (
            {"spec": "stdio:perl bot.pl", "options": {}},
            "bots.x.options: a stdio: bot takes no options; put its arguments in the command",
        ),
        ({"spec": "remote:friend", "options": {"a": 1}}, "bots.x.options: a remote: bot runs"),
        ({"spec": "python:m:C", "options": 3}, "bots.x.options: expected a table"),
        ({"spec": "python:m:C", "options": {"max-depth": 3}}, "bots.x.options.max-depth: an"),
        ({"spec": "python:m:C", "options": {"class": 3}}, "bots.x.options.class: an option's"),
        (
            {"spec": "python:m:C", "options": {"when": [__import__("datetime").date(2026, 1, 1)]}},
            "bots.x.options.when: expected a string, number, boolean, array or table",
        ),
        (
            {"spec": "builtin:hard", "options": {"depht": 3}},
            "bots.x.options: builtin:hard refuses them: hard: unknown option 'depht' ",
        ),
        (
            {"spec": "builtin:hard", "options": {"search": "deep"}},
            "bots.x.options: builtin:hard refuses them: hard: search must be one of tree, flat",
        ),
        (
            {"spec": "builtin:random", "options": {"iterations": 5}},
            "bots.x.options: builtin:random refuses them",
        ),
    ],
)
def test_bad_bot_tables_name_the_key_in_one_line(bot: Any, message: str) -> None:
    with pytest.raises(TournamentError, match=message) as info:
        _with(bot)
    assert "\n" not in str(info.value)


def test_a_bad_bot_table_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    file = _file(tmp_path, '[bots]\na = "builtin:random"\n[bots.b]\nspec = "python:m:C"\n'
                 'dir = "bots/b"\n')  # fmt: skip
    r = capicua("arena", "run", str(file), "--quiet", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "t.toml: bots.b.dir: no directory 'bots/b'" in r.stderr


# -- over the process boundary -------------------------------------------------------------

VALUES = [0, -7, 2**62, 0.5, -1e-300, float("inf"), True, False, "", "flat", "a \"b\" \\ c",
          "é\n\t\x01\x7f", [], [1, [2.5, "x"]], {}, {"a": {"b c": [True]}}]  # fmt: skip


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_an_option_crosses_the_command_line_unchanged(value: Any) -> None:
    assert parse_assignment(f"k={toml_literal(value)}") == ("k", value)
    bot = BotSpec("b", "python", "m:C", options={"k": value, "depth": 3})
    assert parse_options(bot.option_args()[1::2]) == {"k": value, "depth": 3}


def test_bot_argv_passes_the_options() -> None:
    hard = BotSpec("h", "builtin", "hard", options={"iterations": 5, "search": "flat"})
    argv = bot_argv(hard)
    assert argv[4:] == ["builtin", "hard", "--option", "iterations=5", "--option",
                        'search="flat"', "--log-level", "warning"]  # fmt: skip
    mine = BotSpec("m", "python", "my_bots:Greedy", "bots/mine", {"depth": 3})
    assert bot_argv(mine)[4:8] == ["run", "my_bots:Greedy", "--option", "depth=3"]
    assert "--option" not in bot_argv(BotSpec("r", "builtin", "random"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hard", "--option", "iterations"], "--option 'iterations': expected KEY=VALUE"),
        (["hard", "--option", "max-depth=3"], "--option 'max-depth=3': expected KEY=VALUE"),
        (["hard", "--option", "=3"], "--option '=3': expected KEY=VALUE"),
        (["hard", "--option", "depht=3"], "builtin:hard: cannot take these options: "),
        (["hard", "--option", "search=deep"], "hard: search must be one of tree, flat"),
        (["random", "--option", "iterations=5"], "builtin:random: cannot take these options"),
    ],
)
def test_bot_builtin_refuses_bad_options_in_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    # refused before connecting: the server address is never tried
    r = capicua("bot", "builtin", *args, "--server", "127.0.0.1:9", "--token", "t", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("capicua: error: ")
    assert message in r.stderr


PICKY = """
from capicua.client import Bot

class Picky(Bot):
    def __init__(self, depth=1):
        self.depth = depth

    def choose(self, observation, legal_actions):
        return legal_actions[0]

class Bare(Bot):
    def choose(self, observation, legal_actions):
        return legal_actions[0]

instance = Bare()
"""


def test_load_bot_passes_keyword_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "picky_bots.py").write_text(PICKY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # so load_bot leaves sys.path as it was
    monkeypatch.delitem(sys.modules, "picky_bots", raising=False)  # restored afterwards
    bot: Any = load_bot("picky_bots:Picky", depth=4)
    assert bot.depth == 4
    assert getattr(load_bot("picky_bots:Picky"), "depth") == 1  # noqa: B009
    refused = r"'picky_bots:Bare': cannot create Bare\(\) as Bare\(depth=4\): Bare\(\) takes"
    with pytest.raises(ClientError, match=refused):
        load_bot("picky_bots:Bare", depth=4)
    with pytest.raises(ClientError, match="instance is not a class, so it cannot take options"):
        load_bot("picky_bots:instance", depth=4)


def test_bot_run_refuses_options_its_class_does_not_take_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "picky_bots.py").write_text(PICKY)
    r = capicua("bot", "run", "picky_bots:Picky", "--option", "width=2", "--server",
                "127.0.0.1:9", "--token", "t", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith("capicua: error: 'picky_bots:Picky': cannot create Picky() as ")
    assert "Picky(width=2)" in r.stderr and "unexpected keyword argument 'width'" in r.stderr


# -- in-process --------------------------------------------------------------------------


def test_in_process_play_gives_a_builtin_bot_its_options() -> None:
    """play_in_process: the file's options reach the bot and win over the caller's."""
    quick = {"spec": "builtin:hard", "options": {"iterations": 3}}
    mapping = {**BASE, "bots": {"random": "builtin:random", "hard": quick}}
    table = tournament_from_mapping(mapping, Path("."))
    strings = {"random": "builtin:random", "hard": "builtin:hard"}
    plain = tournament_from_mapping({**mapping, "bots": strings}, Path("."))
    differs = False
    for m in schedule(table):
        expected = play_in_process(plain, m, iterations=3)
        assert play_in_process(table, m) == expected
        assert play_in_process(table, m, iterations=30) == expected
        differs |= play_in_process(plain, m, iterations=30) != expected
    assert differs  # (so the file's 3 iterations, not the caller's 30, played above)


# -- a real arena run ----------------------------------------------------------------------

MOODY = """
import asyncio, os
from pathlib import Path
from capicua.client import Bot, current_decision

class Moody(Bot):
    \"\"\"Plays the first legal action, or, with hang=True, lets its clock run out in every
    match after its first (the arena's one-hand check).\"\"\"

    def __init__(self, hang=False, tag="none"):
        self.hang = hang
        self.first = None
        # a relative path: the file lands in the bot's working directory
        Path(f"made-{os.environ['CAPICUA_BOT_NAME']}.txt").write_text(f"{tag} hang={hang}")

    async def choose(self, observation, legal_actions):
        match = current_decision().match
        self.first = self.first or match
        if self.hang and match != self.first:
            await asyncio.sleep(3600)
        return legal_actions[0]
"""


def _moody_dir(tmp_path: Path) -> Path:
    where = tmp_path / "bots" / "moody"
    where.mkdir(parents=True)
    (where / "moody_bot.py").write_text(MOODY)  # only there: found through its dir
    return where


def test_arena_run_gives_bots_their_dir_and_options(tmp_path: Path) -> None:
    where = _moody_dir(tmp_path)
    file = _file(
        tmp_path,
        """
        time_limit_ms = 300
        [bots]
        quick = { spec = "builtin:hard", options = { iterations = 5 } }
        [bots.steady]
        spec = "python:moody_bot:Moody"
        dir = "bots/moody"
        options = { tag = "calm" }
        [bots.sleepy]
        spec = "python:moody_bot:Moody"
        dir = "bots/moody"
        options = { tag = "tired", hang = true }
        """,
    )
    r = capicua("arena", "run", str(file), "--out", "out", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # each process ran in the bot's dir and was created with its own options
    assert (where / "made-steady.txt").read_text() == "calm hang=False"
    assert (where / "made-sleepy.txt").read_text() == "tired hang=True"
    assert not list(tmp_path.glob("made-*"))
    standings = json.loads(r.stdout.strip().splitlines()[-1])
    specs = {b["name"]: b["spec"] for b in standings["bots"]}
    assert specs == {
        "quick": "builtin:hard { iterations = 5 }",
        "steady": 'python:moody_bot:Moody { tag = "calm" } in bots/moody',
        "sleepy": 'python:moody_bot:Moody { tag = "tired", hang = true } in bots/moody',
    }
    with sqlite3.connect(tmp_path / "out" / "results.sqlite") as conn:
        rows = conn.execute("SELECT sides_json, termination FROM matches").fetchall()
    assert len(rows) == 6
    for sides, termination in rows:  # hang=true is what made sleepy lose on time
        assert termination == ("timeout" if "sleepy" in sides else "normal"), (sides, termination)
    # the same file resumes: its bots' options and dirs are the ones stored
    again = capicua("arena", "run", str(file), "--out", "out", "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


def test_options_a_bot_refuses_at_run_time_stop_the_tournament_before_it_starts(
    tmp_path: Path,
) -> None:
    """Options the file cannot check (a python: class's) fail the one-hand check before the
    first match, the bot named; a built-in's bad value is refused when the file loads."""
    _moody_dir(tmp_path)
    file = _file(
        tmp_path,
        """
        [bots]
        random = "builtin:random"
        [bots.picky]
        spec = "python:moody_bot:Moody"
        dir = "bots/moody"
        options = { depth = 3 }
        """,
    )
    r = capicua("arena", "run", str(file), "--out", "out", "--quiet", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("capicua: error: cannot start the tournament: ")
    assert "bot picky (python:moody_bot:Moody { depth = 3 } in bots/moody)" in line
    assert "'moody_bot:Moody': cannot create Moody() as Moody(depth=3)" in line
    assert "bot random" not in line
    odd = _file(
        tmp_path,
        """
        [bots]
        random = "builtin:random"
        odd = { spec = "builtin:hard", options = { iterations = "many" } }
        """,
    )
    r = capicua("arena", "run", str(odd), "--out", "out2", "--quiet", cwd=tmp_path)
    assert r.returncode == 2 and not (tmp_path / "out2").exists(), r.stderr
    assert r.stderr.strip().endswith(
        "bots.odd.options: builtin:hard refuses them: hard: iterations must be an integer, "
        "got 'many'"
    ), r.stderr
