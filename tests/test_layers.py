"""The layers hold: import-linter checks the contracts of pyproject.toml.

``capicua`` is a namespace package over three folders (``server/``, ``arena/``,
``clients/python/``), so ``lint-imports`` runs as it is in a checkout. The checks that must
fail plant an import in a copy of those folders, never in the checkout (other tests run
beside this one); the copy is checked with the editable install's path entries out of the
way (``python -S``, site-packages put back by hand without its .pth files), or the
namespace would join the checkout's portions to the copy's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.tooling import PORTIONS, ROOT

SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")
LINT = "from importlinter.cli import lint_imports_command as c; c()"


def test_every_layer_contract_holds_in_the_checkout() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LINT], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout, done.stdout


def _copy(into: Path) -> None:
    """The three portions copied under ``into``, each in its folder (``into/arena/capicua``)."""
    for portion in PORTIONS:
        shutil.copytree(ROOT / portion / "capicua", into / portion / "capicua", ignore=SKIP)


def _lint_copy(into: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(into / portion) for portion in PORTIONS]
    paths += [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return subprocess.run(
        [sys.executable, "-S", "-c", LINT, str(ROOT / "pyproject.toml")],
        cwd=into,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=300,
    )


LAYERS = "the layers"
NO_GRPC = "the rules and the built-in players know nothing of protobuf or gRPC"
ARENA = "the arena speaks to servers over the protocol"


@pytest.mark.parametrize(
    ("module", "text", "contract"),  # module: its path in the copy (its portion's folder first)
    [
        ("server/capicua/engine/_leak.py", "import grpc\n", NO_GRPC),
        ("server/capicua/bots/_leak.py", "from capicua.v1 import game_pb2\n", NO_GRPC),
        ("server/capicua/common/_leak.py", "from capicua.engine import tiles\n", LAYERS),
        ("clients/python/capicua/client/_leak.py", "from capicua.server import auth\n", LAYERS),
        ("arena/capicua/arena/_leak.py", "import capicua.cli\n", LAYERS),
        ("server/capicua/bots/_leak.py", "from capicua.wire import codec\n", LAYERS),
        ("server/capicua/server/_leak.py", "from capicua.bench import load\n", LAYERS),
        ("arena/capicua/arena/_leak.py", "from capicua.server import app\n", ARENA),
    ],
)
def test_a_forbidden_import_is_caught(
    tmp_path: Path, module: str, text: str, contract: str
) -> None:
    """The check can fail: one import across a layer breaks the contract that names it."""
    _copy(tmp_path)
    (tmp_path / module).write_text(text)
    done = _lint_copy(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{contract}" in done.stdout and "BROKEN" in done.stdout, done.stdout
