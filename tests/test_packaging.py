"""The wheel is what the checkout is: every module and data file of the three portions of
the ``capicua`` namespace package (``server/``, ``arena/``, ``clients/python/``), and no
``capicua/__init__.py`` that would stop the portions from joining."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.tooling import PORTIONS, ROOT


def _source_files() -> set[str]:
    files = set()
    for portion in PORTIONS:
        base = ROOT / portion
        for path in (base / "capicua").rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.add(path.relative_to(base).as_posix())
    return files


def test_the_wheel_holds_every_module_and_data_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("capicua-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packaged = {name for name in names if name.startswith("capicua/")}
    expected = _source_files()
    assert expected - packaged == set(), "missing from the wheel"
    assert packaged - expected == set(), "in the wheel but not in the checkout"
    assert "capicua/__init__.py" not in packaged  # a namespace package (PEP 420)
    for data in ("capicua/engine/presets/block.toml", "capicua/arena/templates/report.js"):
        assert data in packaged
