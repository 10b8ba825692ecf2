"""The committed protobuf code in server/capicua/v1/ matches what the .proto files generate.

Fix a failure with ``python tools/generate_protos.py`` (tools: ``pip install -e '.[codegen]'``).
"""

from __future__ import annotations

import difflib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from tests.tooling import missing_tool

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "server" / "capicua" / "v1"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
BUF = ROOT / "tools" / "buf" / "node_modules" / ".bin" / "buf"
FIX = "regenerate with: python tools/generate_protos.py"


def _generated(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        return {}
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(folder.iterdir())
        if p.name.endswith(GENERATED_SUFFIXES)
    }


def _diff(name: str, committed: str, fresh: str, limit: int = 40) -> str:
    lines = list(
        difflib.unified_diff(
            committed.splitlines(),
            fresh.splitlines(),
            f"committed/{name}",
            f"generated/{name}",
            lineterm="",
        )
    )
    more = f"\n... {len(lines) - limit} more diff lines" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    if importlib.util.find_spec("grpc_tools") is None:
        missing_tool("grpc_tools is not installed (pip install -e '.[codegen]')")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "generate_protos.py"), "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"tools/generate_protos.py failed:\n{done.stderr}"
    fresh = _generated(tmp_path / "capicua" / "v1")
    committed = _generated(COMMITTED)
    assert fresh, "the generator produced no files"
    problems = [f"missing from server/capicua/v1: {n}" for n in sorted(fresh.keys() - committed)]
    problems += [f"stale file in server/capicua/v1: {n}" for n in sorted(committed.keys() - fresh)]
    problems += [
        _diff(name, committed[name], fresh[name])
        for name in sorted(fresh.keys() & committed.keys())
        if fresh[name] != committed[name]
    ]
    assert not problems, (
        "generated protobuf code is out of date; " + FIX + "\n\n" + ("\n\n".join(problems))
    )


def test_every_proto_has_committed_code() -> None:
    protos = sorted(p.stem for p in (ROOT / "proto" / "capicua" / "v1").glob("*.proto"))
    assert protos, "no .proto files found"
    for stem in protos:
        for suffix in GENERATED_SUFFIXES:
            assert (COMMITTED / f"{stem}{suffix}").is_file(), f"{stem}{suffix} missing; {FIX}"
    assert (COMMITTED / "py.typed").is_file()
    assert (COMMITTED / "__init__.py").is_file()


def test_generated_modules_import() -> None:
    from capicua.v1 import game_pb2, replay_pb2, rules_pb2

    assert replay_pb2.Replay.DESCRIPTOR.full_name == "capicua.v1.Replay"
    assert game_pb2.DESCRIPTOR.package == rules_pb2.DESCRIPTOR.package == "capicua.v1"


def test_buf_lint_passes() -> None:
    """Runs only where the pinned buf is installed: npm ci --prefix tools/buf."""
    if not BUF.exists() or shutil.which("node") is None:
        missing_tool("buf is not installed (npm ci --prefix tools/buf)")
    done = subprocess.run([str(BUF), "lint"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"buf lint failed:\n{done.stdout}{done.stderr}"


def test_no_breaking_change_against_the_previous_commit() -> None:
    """capicua.v1 is frozen: `buf breaking` (FILE rules, buf.yaml) compares the .proto files
    with the previous commit's. A deliberate break belongs in a new package (capicua.v2),
    not in v1."""
    if not BUF.exists() or shutil.which("node") is None:
        missing_tool("buf is not installed (npm ci --prefix tools/buf)")
    parent = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD~1"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if parent.returncode != 0:
        missing_tool("no previous commit to compare the protos with (a git checkout with history)")
    done = subprocess.run(
        [str(BUF), "breaking", "--against", f".git#ref={parent.stdout.strip()}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"breaking changes to capicua.v1:\n{done.stdout}{done.stderr}"
