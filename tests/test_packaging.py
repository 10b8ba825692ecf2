"""The wheel is what the checkout is: every module and data file of the three portions of
the ``capicua`` namespace package (``server/``, ``arena/``, ``clients/python/``), and no
``capicua/__init__.py`` that would stop the portions from joining."""

from __future__ import annotations

import os
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


def _build_wheel(target: Path, **env: str) -> tuple[Path, str]:
    """Build the wheel with pip into ``target`` (``env`` added to the environment); the
    wheel and pip's verbose output (the build hook's lines)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v"]
        + ["-w", str(target), str(ROOT)],
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = target.glob("capicua-*.whl")
    return wheel, done.stdout + done.stderr


def test_the_wheel_holds_every_module_and_data_file(tmp_path: Path) -> None:
    # the pure wheel: tests/test_compiled.py checks the compiled one
    wheel, _ = _build_wheel(tmp_path, CAPICUA_BUILD="pure")
    names = set(zipfile.ZipFile(wheel).namelist())
    packaged = {name for name in names if name.startswith("capicua/")}
    expected = _source_files()
    assert expected - packaged == set(), "missing from the wheel"
    assert packaged - expected == set(), "in the wheel but not in the checkout"
    assert "capicua/__init__.py" not in packaged  # a namespace package (PEP 420)
    for data in (
        "capicua/engine/presets/block.toml",
        "capicua/arena/templates/report.js",
        # the leaderboard's pages and the scripts they load from the package (no CDN)
        "capicua/arena/templates/ladder/table.html.j2",
        "capicua/arena/ladder/static/htmx.min.js",
        "capicua/arena/ladder/static/sse.js",
    ):
        assert data in packaged


def test_without_a_c_compiler_the_wheel_is_pure_and_says_so(tmp_path: Path) -> None:
    wheel, output = _build_wheel(tmp_path, CC="/nonexistent/cc", CAPICUA_BUILD="auto")
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [name for name in names if name.endswith((".so", ".pyd"))]
    assert "capicua/common/compiled.json" not in names
    assert "capicua build: pure Python: no C compiler (/nonexistent/cc)" in output


def test_an_editable_install_is_the_pure_source(tmp_path: Path) -> None:
    # the build backend itself, as `pip install -e .` calls it (PEP 660)
    done = subprocess.run(
        [sys.executable, "-c", "import sys, hatchling.build as b; b.build_editable(sys.argv[1])"]
        + [str(tmp_path)],
        cwd=ROOT,
        env=os.environ | {"CAPICUA_BUILD": "compiled"},  # and still pure
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "capicua build: editable install: pure Python" in done.stdout + done.stderr
    (wheel,) = tmp_path.glob("capicua-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [name for name in names if name.endswith((".so", ".pyd"))]
