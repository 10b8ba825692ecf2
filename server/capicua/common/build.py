"""Which build of capicua runs here: the mypyc-compiled modules of a wheel, or the pure
Python source; and whether a compiled module no longer matches its source.

A compiled wheel (hatch_build.py) ships each compiled module's extension beside its ``.py``
and records the SHA-256 of every compiled source in ``capicua/common/compiled.json``.
Python imports an extension before a source of the same name, so a compiled module that
no longer matches its source (a source edited after the build, or an extension left in a
checkout by an in-place mypyc run) would silently run old code: :func:`check` refuses it.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from capicua.common.errors import CapicuaError

#: The packages that hold compiled modules (pyproject.toml: the build hook's ``compile``).
COMPILED_PACKAGES = ("capicua.engine", "capicua.bots", "capicua.wire")
RECORD_NAME = "compiled.json"


class StaleBuildError(CapicuaError):
    """A compiled module would run instead of a source it does not match."""


@dataclass(frozen=True)
class Build:
    """The compiled modules found (name -> extension file) and those that are stale."""

    compiled: dict[str, Path]
    stale: tuple[str, ...]

    @property
    def label(self) -> str:
        """``compiled`` or ``pure``: what ``bench --json`` reports."""
        return "compiled" if self.compiled and not self.stale else "pure"

    def describe(self) -> str:
        """One line saying which build runs (``capicua --version``)."""
        if self.stale:
            return f"stale compiled modules: {', '.join(self.stale)}"
        if self.compiled:
            return f"compiled (mypyc): {len(self.compiled)} modules, the source as fallback"
        return "pure Python (the source; `pip install .` compiles where a C compiler is)"


def _extensions() -> dict[str, Path]:
    """Every extension module in the compiled packages' folders, by module name."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found: dict[str, Path] = {}
    for package in COMPILED_PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for path in Path(folder).rglob("*"):
                if path.name.endswith(suffixes):
                    inner = path.relative_to(folder).parent.parts + (path.name.split(".")[0],)
                    found[".".join((package, *inner))] = path
    return found


def _recorded_digests() -> dict[str, str] | None:
    """{``capicua/engine/game.py``: SHA-256} from a compiled wheel (None: no record)."""
    record = Path(__file__).with_name(RECORD_NAME)
    if not record.exists():
        return None
    sources: dict[str, str] = json.loads(record.read_text(encoding="utf-8"))["sources"]
    return sources


def _stale(compiled: dict[str, Path], recorded: dict[str, str] | None) -> tuple[str, ...]:
    """The compiled modules whose source is not the one they were compiled from."""
    stale = []
    for module, extension in sorted(compiled.items()):
        source = extension.with_name(f"{module.rsplit('.', 1)[1]}.py")
        key = module.replace(".", "/") + ".py"
        if not source.exists():
            continue  # no source to shadow
        expected = (recorded or {}).get(key)
        if expected is None or hashlib.sha256(source.read_bytes()).hexdigest() != expected:
            stale.append(module)
    return tuple(stale)


def current() -> Build:
    """The build this interpreter imports (reads a few folders and the compiled sources)."""
    compiled = _extensions()
    return Build(compiled, _stale(compiled, _recorded_digests()) if compiled else ())


def check() -> Build:
    """:func:`current`, or :class:`StaleBuildError` when a compiled module does not match
    its source."""
    build = current()
    if build.stale:
        first = build.compiled[build.stale[0]]
        raise StaleBuildError(
            f"{len(build.stale)} compiled modules do not match their sources (edited after "
            f"the build?), first {first}: reinstall (`pip install .`, or `pip install -e .` "
            "for the pure source) or delete the compiled files"
        )
    return build
