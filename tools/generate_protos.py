"""Regenerate the committed protobuf code in server/capicua/v1/ from proto/capicua/v1/*.proto.

Usage, from anywhere (needs the pinned tools: ``pip install -e '.[codegen]'``)::

    python tools/generate_protos.py            # into server/ (the committed code)
    python tools/generate_protos.py --out DIR  # into DIR/capicua/v1/ (tests/test_codegen.py)
    python tools/generate_protos.py --go       # the Go package in clients/go/capicuav1/
    python tools/generate_protos.py --go --out DIR  # into DIR/capicuav1/ (test_go_client.py)

It runs ``python -m grpc_tools.protoc -I proto -I <googleapis-common-protos> --python_out
--grpc_python_out --mypy_out --mypy_grpc_out`` with the output directory holding the
``capicua`` package, so the generated modules import ``capicua.v1.*`` as they are. The
googleapis include directory is there for ``google/rpc/*.proto`` imports; no code is generated
for those (their Python modules ship in the ``googleapis-common-protos`` wheel).

``--go`` runs Debian's ``protoc`` with ``protoc-gen-go`` and ``protoc-gen-go-grpc`` (``apt-get
install protobuf-compiler protoc-gen-go protoc-gen-go-grpc``; see docs/writing-a-bot.md). The
.proto files set no ``go_package``: ``M`` options give every capicua file the one import path
``capicua.dev/go/capicuav1`` and ``google/rpc/status.proto`` genproto's package, as buf.gen.yaml
does; ``module=capicua.dev/go`` puts the files in ``capicuav1/`` under the output folder.
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

# Go: the module clients/go/ is, and the one import path of the generated package.
GO_MODULE = "capicua.dev/go"
GO_PACKAGE = f"{GO_MODULE}/capicuav1"
GO_DEFAULT_OUT = ROOT / "clients" / "go"
GO_STATUS_PACKAGE = "google.golang.org/genproto/googleapis/rpc/status"  # google.rpc.Status
GO_SUFFIX = ".pb.go"  # foo.pb.go and foo_grpc.pb.go


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


def go_tool(name: str) -> str:
    """Path of a Go codegen tool (Debian's, on PATH)."""
    found = shutil.which(name)
    if found is None:
        raise CodegenError(
            f"{name} not found; install Debian's: apt-get install protobuf-compiler "
            "protoc-gen-go protoc-gen-go-grpc"
        )
    return found


def go_protoc_command(out: Path) -> list[str]:
    """The protoc command line generating the Go package into ``out/capicuav1/``."""
    mappings = [f"{p.relative_to('proto')}={GO_PACKAGE}" for p in proto_files()]
    mappings.append(f"google/rpc/status.proto={GO_STATUS_PACKAGE}")
    return [
        go_tool("protoc"),
        f"--plugin=protoc-gen-go={go_tool('protoc-gen-go')}",
        f"--plugin=protoc-gen-go-grpc={go_tool('protoc-gen-go-grpc')}",
        "-I", "proto",
        "-I", "third_party/googleapis",
        f"--go_out={out}",
        f"--go_opt=module={GO_MODULE}",
        *(f"--go_opt=M{m}" for m in mappings),
        f"--go-grpc_out={out}",
        f"--go-grpc_opt=module={GO_MODULE}",
        *(f"--go-grpc_opt=M{m}" for m in mappings),
        *(str(p) for p in proto_files()),
    ]  # fmt: skip


def generate_go(out: Path = GO_DEFAULT_OUT) -> list[Path]:
    """Generate the Go package into ``out/capicuav1/``; returns the generated files."""
    out = out.resolve()
    folder = out / GO_PACKAGE.removeprefix(f"{GO_MODULE}/")
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        if path.name.endswith(GO_SUFFIX):
            path.unlink()  # a removed .proto leaves nothing behind
    done = subprocess.run(
        go_protoc_command(out), cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise CodegenError(f"protoc failed ({done.returncode}):\n{done.stderr.strip()}")
    return sorted(p for p in folder.iterdir() if p.name.endswith(GO_SUFFIX))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory that holds the capicua package (default: server/), or with --go the "
        "capicuav1 package (default: clients/go/)",
    )
    parser.add_argument(
        "--go",
        action="store_true",
        help=f"generate the Go package {GO_PACKAGE} instead (Debian's protoc and plugins)",
    )
    args = parser.parse_args(argv)
    try:
        if args.go:
            files = generate_go(args.out or GO_DEFAULT_OUT)
        else:
            files = generate(args.out or DEFAULT_OUT)
    except CodegenError as e:
        print(f"generate_protos: {e}", file=sys.stderr)
        return 1
    for path in files:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"generated {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
