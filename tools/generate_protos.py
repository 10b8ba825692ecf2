"""Regenerate the committed protobuf code in server/capicua/v1/ from proto/capicua/v1/*.proto.

Usage, from anywhere (needs the pinned tools: ``pip install -e '.[codegen]'``)::

    python tools/generate_protos.py            # into server/ (the committed code)
    python tools/generate_protos.py --out DIR  # into DIR/capicua/v1/ (tests/test_codegen.py)

It runs ``python -m grpc_tools.protoc -I proto -I <googleapis-common-protos> --python_out
--grpc_python_out --mypy_out --mypy_grpc_out`` with the output directory holding the
``capicua`` package, so the generated modules import ``capicua.v1.*`` as they are. The
googleapis include directory is there for ``google/rpc/*.proto`` imports; no code is generated
for those (their Python modules ship in the ``googleapis-common-protos`` wheel).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
PACKAGE = Path("capicua") / "v1"
DEFAULT_OUT = ROOT / "server"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


class CodegenError(Exception):
    """The tools are missing or protoc failed."""


def proto_files() -> list[Path]:
    """The .proto sources, relative to the repo root, in a stable order."""
    return sorted(p.relative_to(ROOT) for p in (PROTO_DIR / PACKAGE).glob("*.proto"))


def googleapis_include() -> Path:
    """The directory holding ``google/rpc/status.proto`` (from googleapis-common-protos)."""
    try:
        import google.rpc
    except ImportError as e:
        raise CodegenError("googleapis-common-protos is not installed") from e
    for folder in google.rpc.__path__:
        if (Path(folder) / "status.proto").is_file():
            return Path(folder).parent.parent
    raise CodegenError("google/rpc/status.proto not found in googleapis-common-protos")


def plugin(name: str) -> str:
    """Path of a protoc plugin installed beside this Python (works without an activated venv)."""
    scripts = Path(sysconfig.get_path("scripts"))
    for candidate in (scripts / name, scripts / f"{name}.exe"):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise CodegenError(
            f"{name} not found; install the codegen extra: pip install -e '.[codegen]'"
        )
    return found


def protoc_command(out: Path) -> list[str]:
    """The full protoc command line generating into ``out``."""
    return [
        sys.executable, "-m", "grpc_tools.protoc",
        f"--plugin=protoc-gen-mypy={plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={plugin('protoc-gen-mypy_grpc')}",
        "-I", "proto",
        "-I", str(googleapis_include()),
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *(str(p) for p in proto_files()),
    ]  # fmt: skip


def remove_generated(out: Path) -> None:
    """Delete previously generated modules so a removed .proto leaves nothing behind."""
    folder = out / PACKAGE
    if folder.is_dir():
        for path in folder.iterdir():
            if path.name.endswith(GENERATED_SUFFIXES):
                path.unlink()


def generate(out: Path = DEFAULT_OUT) -> list[Path]:
    """Generate the code into ``out``; returns the generated files."""
    out = out.resolve()
    (out / PACKAGE).mkdir(parents=True, exist_ok=True)
    remove_generated(out)
    done = subprocess.run(
        protoc_command(out), cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise CodegenError(f"protoc failed ({done.returncode}):\n{done.stderr.strip()}")
    return sorted(p for p in (out / PACKAGE).iterdir() if p.name.endswith(GENERATED_SUFFIXES))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="directory that holds the capicua package (default: server/)",
    )
    args = parser.parse_args(argv)
    try:
        files = generate(args.out)
    except CodegenError as e:
        print(f"generate_protos: {e}", file=sys.stderr)
        return 1
    for path in files:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"generated {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
