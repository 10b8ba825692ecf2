"""The wheel's build hook: compile the hot modules with mypyc, or ship the pure source.

The modules listed as ``compile`` in ``[tool.hatch.build.targets.wheel.hooks.custom]``
(pyproject.toml) are compiled by mypyc in a temporary copy of ``server/`` and their
extension modules are added to the wheel beside the unchanged ``.py`` files (Python imports
an extension module before a source module of the same name; the source stays the
fallback and the reference). Nothing is ever written into the checkout, so no compiled
module can shadow an edited source there.

``CAPICUA_BUILD`` chooses: ``auto`` (the default: compile where a C compiler and the Python
headers are present, else pure, and pure with one line saying why when compiling fails),
``compiled`` (compile or fail: CI) or ``pure``. An editable install is always pure: the
sources run as they are edited.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODES = ("auto", "compiled", "pure")
# Where the wheel records what it compiled (read by capicua.common.build at run time).
RECORD = "capicua/common/compiled.json"
PORTION = "server"  # the namespace portion holding every compiled module


class CompileError(Exception):
    """mypyc or the C compiler failed; the message is its output's last lines."""


def build_mode() -> str:
    mode = os.environ.get("CAPICUA_BUILD", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"CAPICUA_BUILD={mode!r}: expected one of {', '.join(MODES)}")
    return mode


def missing_toolchain() -> str | None:
    """Why C extensions cannot be built here (None: they can)."""
    # CC first: setuptools, which drives the compiler, honours it too
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.exists():
        return f"no Python headers ({header})"
    return None


def source_modules(root: Path, patterns: list[str], exclude: list[str]) -> list[str]:
    """The ``.py`` files named by ``patterns`` (files or folders, relative to ``root``) but
    not by ``exclude`` (files), as paths relative to the portion (``capicua/engine/game.py``)."""
    skipped = {root / name for name in exclude}
    found: list[str] = []
    for pattern in patterns:
        path = root / pattern
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        found += [f.relative_to(root / PORTION).as_posix() for f in files if f not in skipped]
    return found


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compile_modules(root: Path, modules: list[str], work: Path) -> dict[str, str]:
    """Compile ``modules`` in a copy of the portion under ``work``; returns {absolute path
    of each built extension: its path in the wheel}."""
    portion = work / PORTION
    shutil.copytree(
        root / PORTION / "capicua",
        portion / "capicua",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
    )
    shutil.copy(root / "pyproject.toml", work / "pyproject.toml")  # mypy's settings
    setup = portion / "setup_compiled.py"
    setup.write_text(
        "from setuptools import setup\n"
        "from mypyc.build import mypycify\n"
        f"setup(name='capicua-compiled', ext_modules=mypycify({modules!r}, opt_level='3'))\n"
    )
    done = subprocess.run(
        [sys.executable, setup.name, "build_ext", "--inplace"],
        cwd=portion,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if done.returncode != 0:
        raise CompileError("\n".join(done.stdout.strip().splitlines()[-15:]))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = {str(p): p.relative_to(portion).as_posix() for p in portion.rglob(f"*{suffix}")}
    if not built:
        raise CompileError("mypyc built no extension module")
    return built


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Hatch's ``custom`` hook (this file's name is hatch's default for it)."""

    _work: tempfile.TemporaryDirectory[str] | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        if version == "editable":
            self._say("editable install: pure Python, the sources run as edited")
            return
        mode = build_mode()
        if mode == "pure":
            self._say("pure Python (CAPICUA_BUILD=pure)")
            return
        why_not = missing_toolchain()
        if why_not is not None:
            if mode == "compiled":
                raise CompileError(f"CAPICUA_BUILD=compiled, but {why_not}")
            self._say(f"pure Python: {why_not}")
            return
        self._compile(mode, build_data)

    def _compile(self, mode: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        modules = source_modules(
            root, list(self.config.get("compile", [])), list(self.config.get("exclude", []))
        )
        self._work = tempfile.TemporaryDirectory(prefix="capicua-mypyc-")
        work = Path(self._work.name)
        try:
            built = compile_modules(root, modules, work)
        except CompileError as e:
            if mode == "compiled":
                raise
            self._say(f"pure Python: compiling failed ({str(e).splitlines()[-1]})")
            return
        record = work / "compiled.json"
        digests = {m: source_digest(root / PORTION / m) for m in modules}
        record.write_text(json.dumps({"compiler": "mypyc", "sources": digests}, indent=1))
        build_data["force_include"].update(built)
        build_data["force_include"][str(record)] = RECORD
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        self._say(f"compiled with mypyc: {len(modules)} modules")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._work is not None:
            self._work.cleanup()
            self._work = None

    def _say(self, line: str) -> None:
        self.app.display_info(f"capicua build: {line}")
