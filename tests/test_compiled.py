"""The compiled build is the pure source, compiled: the wheel that ``CAPICUA_BUILD=compiled``
builds (mypyc, hatch_build.py) plays every preset, with random knob overrides, exactly as
the source does, built-in bots' choices included; it says which build runs; and it refuses
to run a compiled module whose source was edited after the build.

The wheel is built once per test session (the xdist workers share it through a lock) and
installed with pip into a folder that leads ``PYTHONPATH``; the pure side runs the
checkout's folders the same way."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tooling import PORTIONS, ROOT, missing_tool

# Differential size: 2 rulesets (as is, with random overrides) x 18 presets x 60 seeded
# playouts = 2,160 matches, plus 72 matches of the built-in bots (a few seconds a build).
PLAYOUTS = 60
BOT_MATCHES = 2


def _shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this session sees (the session's base temp)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _build_compiled(target: Path) -> Path:
    if shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]) is None:
        missing_tool("no C compiler to build the compiled wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(target), str(ROOT)],
        env=os.environ | {"CAPICUA_BUILD": "compiled"},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = target.glob("capicua-*.whl")
    return wheel


@pytest.fixture(scope="module")
def compiled_wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    shared = _shared_dir(tmp_path_factory) / "compiled-wheel"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds, the others wait for it
        wheels = list(shared.glob("capicua-*.whl"))
        wheel = wheels[0] if wheels else _build_compiled(shared)
    yield wheel


@pytest.fixture(scope="module")
def compiled_site(compiled_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled wheel installed by pip into a folder of its own."""
    site = tmp_path_factory.mktemp("compiled-site")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site)]
        + [str(compiled_wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def _pure_path() -> str:
    return os.pathsep.join(str(ROOT / portion) for portion in PORTIONS)


def _run(pythonpath: str, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        env=os.environ | {"PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_the_compiled_wheel_holds_each_extension_beside_its_source(compiled_wheel: Path) -> None:
    names = set(zipfile.ZipFile(compiled_wheel).namelist())
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    record = json.loads(zipfile.ZipFile(compiled_wheel).read("capicua/common/compiled.json"))
    sources = set(record["sources"])
    assert {"capicua/engine/game.py", "capicua/bots/hard.py", "capicua/wire/views.py"} <= sources
    assert "capicua/bots/base.py" not in sources  # its Protocol stays a Python class
    for source in sources:
        assert source in names  # the fallback, and what the extension was compiled from
        assert source.removesuffix(".py") + suffix in names
    assert "-py3-none-any" not in compiled_wheel.name  # a platform wheel


def test_version_says_which_build_runs(compiled_site: Path) -> None:
    compiled = _run(str(compiled_site), "-m", "capicua", "--version")
    assert compiled.returncode == 0, compiled.stderr
    assert "build: compiled (mypyc)" in compiled.stdout
    pure = _run(_pure_path(), "-m", "capicua", "--version")
    assert pure.returncode == 0, pure.stderr
    assert "build: pure Python" in pure.stdout


def test_compiled_and_pure_play_every_match_alike(compiled_site: Path) -> None:
    args = ("tools/differential.py", "--matches", str(PLAYOUTS), "--bot-matches", str(BOT_MATCHES))
    compiled = _run(str(compiled_site), *args)
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


def test_a_compiled_module_older_than_its_edited_source_is_refused(
    compiled_site: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    shutil.copytree(compiled_site, site, symlinks=True)
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


def test_what_crosses_processes_pickles_on_both_builds(compiled_site: Path) -> None:
    # rulesets, observations, actions and replays go to worker processes, CPU seats, dask
    for pythonpath in (str(compiled_site), _pure_path()):
        done = _run(pythonpath, "-c", PICKLED)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "ok"
