"""The layers hold: import-linter checks the contracts of pyproject.toml.

import-linter reads a package from one directory, while this repository spreads the
``capicua`` package over three (``server/capicua``, ``arena/capicua/arena``,
``clients/python/capicua/client``, joined by pyproject's package-dir). So the check runs on
a copy laid out as an installed wheel is, with the editable install's path hook out of the
way (``python -S``, site-packages put back by hand without its .pth files).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def _installed_layout(into: Path) -> Path:
    package = into / "capicua"
    shutil.copytree(ROOT / "server" / "capicua", package, ignore=SKIP)
    shutil.copytree(ROOT / "arena" / "capicua" / "arena", package / "arena", ignore=SKIP)
    shutil.copytree(
        ROOT / "clients" / "python" / "capicua" / "client", package / "client", ignore=SKIP
    )
    return package


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(tree), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    code = "import sys; from importlinter.cli import lint_imports_command as c; c()"
    return subprocess.run(
        [sys.executable, "-S", "-c", code, str(ROOT / "pyproject.toml")],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_layer_contract_holds(tmp_path: Path) -> None:
    _installed_layout(tmp_path)
    done = _lint(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 7 kept, 0 broken." in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("module", "text", "contract"),
    [
        ("engine/_leak.py", "import grpc\n", "the engine is pure rules"),
        ("client/_leak.py", "from capicua.server import auth\n", "the SDK and the arena"),
        ("arena/_leak.py", "import capicua.cli\n", "the SDK and the arena"),
        ("bots/_leak.py", "from capicua.wire import codec\n", "bots play on the engine alone"),
        ("server/_leak.py", "from capicua.bench import load\n", "imports the benchmarks"),
        ("arena/_leak.py", "import capicua.bench.arena\n", "imports the benchmarks"),
    ],
)
def test_a_forbidden_import_is_caught(
    tmp_path: Path, module: str, text: str, contract: str
) -> None:
    """The check can fail: one import across a layer breaks the contract that names it."""
    package = _installed_layout(tmp_path)
    (package / module).write_text(text)
    done = _lint(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{contract}" in done.stdout and "BROKEN" in done.stdout, done.stdout
