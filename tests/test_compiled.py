"""The compiled build is the pure source, compiled: the installed compiled build (the wheel
``pip install .`` makes where a C compiler is; ``CAPICUA_BUILD=compiled`` fails rather than
fall back) plays every preset, with random knob overrides, exactly as the checkout's source
does, built-in bots' choices included; it says which build runs; and it refuses to run a
compiled module whose source was edited after the build.

These tests need the compiled build installed, so they run in CI's second pass of the suite
(``.ci/run``: ``CAPICUA_BUILD=compiled pip install '.[test]'`` and the suite again); in the
README's run, an editable install of the pure source, they are skipped with that reason
(building the wheel there would add minutes to every run). The pure side of each comparison
is the checkout's folders, put ahead of the installed package on ``PYTHONPATH``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from capicua.common import build
from tests.tooling import PORTIONS, ROOT

# Differential size: 2 rulesets (as is, with random overrides) x 18 presets x 60 seeded
# playouts = 2,160 matches, plus 72 matches of the built-in bots (a few seconds a build).
PLAYOUTS = 60
BOT_MATCHES = 2

pytestmark = pytest.mark.skipif(
    build.current().label != "compiled",
    reason="the compiled build is not installed here (an editable install is the pure "
    "source): CI runs the suite again on it, after CAPICUA_BUILD=compiled pip install '.[test]'",
)


def _installed() -> Path:
    """The folder holding the installed ``capicua`` package (site-packages)."""
    engine = build.current().compiled["capicua.engine.game"]
    return engine.parents[2]


def _pure_path() -> str:
    return os.pathsep.join(str(ROOT / portion) for portion in PORTIONS)


def _run(
    pythonpath: str | None, *args: str, timeout: float = 1200
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the checkout; ``pythonpath`` ahead of the installed packages
    (None: the installed build alone)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def test_each_compiled_module_sits_beside_its_source() -> None:
    site = _installed()
    record = json.loads((site / "capicua" / "common" / "compiled.json").read_text())
    sources = set(record["sources"])
    assert {"capicua/engine/game.py", "capicua/bots/hard.py", "capicua/wire/views.py"} <= sources
    assert "capicua/bots/base.py" not in sources  # its Protocol stays a Python class
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for source in sources:
        assert (site / source).is_file()  # the fallback, and what the extension was compiled from
        assert (site / (source.removesuffix(".py") + suffix)).is_file()


def test_version_says_which_build_runs() -> None:
    compiled = _run(None, "-m", "capicua", "--version")
    assert compiled.returncode == 0, compiled.stderr
    assert "build: compiled (mypyc)" in compiled.stdout
    pure = _run(_pure_path(), "-m", "capicua", "--version")
    assert pure.returncode == 0, pure.stderr
    assert "build: pure Python" in pure.stdout


def test_compiled_and_pure_play_every_match_alike() -> None:
    args = ("tools/differential.py", "--matches", str(PLAYOUTS), "--bot-matches", str(BOT_MATCHES))
    compiled = _run(None, *args)
    assert compiled.returncode == 0, compiled.stderr
    pure = _run(_pure_path(), *args)
    assert pure.returncode == 0, pure.stderr
    compiled_lines = compiled.stdout.splitlines()
    pure_lines = pure.stdout.splitlines()
    assert json.loads(compiled_lines[0]) == {"build": "compiled"}
    assert json.loads(pure_lines[0]) == {"build": "pure"}
    assert len(pure_lines) == 1 + 18 * 2 * (PLAYOUTS + BOT_MATCHES)
    for mine, theirs in zip(compiled_lines[1:], pure_lines[1:], strict=True):
        assert mine == theirs  # the first differing match, with its preset, knobs and seed


def test_a_compiled_module_older_than_its_edited_source_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(_installed() / "capicua", site / "capicua", symlinks=True)
    source = site / "capicua" / "engine" / "scoring.py"
    source.write_text(source.read_text() + "\n# edited after the build\n")
    refused = _run(str(site), "-m", "capicua", "rules", "list")
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()  # one line, no traceback
    assert line.startswith("capicua: error: 1 compiled modules do not match their sources")
    assert "scoring" in line
    assert refused.stdout == ""
    said = _run(str(site), "-m", "capicua", "--version")
    assert "stale compiled modules: capicua.engine.scoring" in said.stdout


PICKLED = """
import copy, pickle
from capicua.bots import make_bot
from capicua.bots.local import play_local
from capicua.engine.game import Game
from capicua.engine.observation import observe
from capicua.engine.rules import load_preset, preset_names
for name in preset_names():
    rules = load_preset(name)
    assert pickle.loads(pickle.dumps(rules)) == rules and copy.deepcopy(rules) == rules
game = Game(load_preset("block"))
state = play_local(game, 3, [make_bot("medium", seat) for seat in range(4)], hands=1)
seat = state.current_seat
for value in (observe(state, seat), state.legal(), state.log.replay()):
    assert pickle.loads(pickle.dumps(value)) == value
assert pickle.loads(pickle.dumps(game)).ruleset == game.ruleset
print("ok")
"""


def test_what_crosses_processes_pickles_on_both_builds() -> None:
    # rulesets, observations, actions and replays go to worker processes, CPU seats, dask
    for pythonpath in (None, _pure_path()):
        done = _run(pythonpath, "-c", PICKLED)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "ok"
