"""The ErrorInfo reasons have one home, the enum capicua.v1.ErrorReason (errors.proto):
the server sends no other, its constants are the enum's names, the clients branch on the
enum rather than on retyped strings, and docs/protocol.md lists exactly the enum."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import grpc

from capicua.server import errors
from capicua.v1 import errors_pb2

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "server" / "capicua" / "server"
ENUM = {v.name: v.number for v in errors_pb2.ErrorReason.DESCRIPTOR.values}
CODES = {c.name for c in grpc.StatusCode}

#: The functions of capicua.server.errors that take a reason, and its position among their
#: arguments (``self`` left out).
TAKES_REASON = {
    name: list(inspect.signature(fn).parameters).index("reason")
    for name, fn in vars(errors).items()
    if callable(fn) and "reason" in getattr(inspect.signature(fn), "parameters", {})
    and getattr(fn, "__module__", "") == errors.__name__
}  # fmt: skip


def _constants() -> dict[str, str]:
    return {
        k: v
        for k, v in vars(errors).items()
        if k.isupper() and isinstance(v, str) and k != "DOMAIN"
    }


def test_the_enum_starts_unspecified_and_names_each_reason_once() -> None:
    assert ENUM["ERROR_REASON_UNSPECIFIED"] == 0
    assert len(set(ENUM.values())) == len(ENUM)
    assert set(ENUM) - {"ERROR_REASON_UNSPECIFIED"} == errors.REASONS


def test_the_server_constants_are_the_enum_names() -> None:
    constants = _constants()
    assert {k: v for k, v in constants.items() if k != v} == {}
    assert set(constants.values()) == errors.REASONS


def _calls(path: Path) -> Iterator[tuple[str, ast.Call]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "errors"
        ):
            yield func.attr, node
        elif isinstance(func, ast.Name) and path.name == "errors.py":
            yield func.id, node


def _reason_argument(name: str, call: ast.Call) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "reason":
            return keyword.value
    position = TAKES_REASON[name]
    return call.args[position] if position < len(call.args) else None


def test_every_reason_the_server_sends_is_in_the_enum() -> None:
    """Every call of an errors function that takes a reason, and every `errors.NAME`, in the
    server: a literal or a constant must be an enum value; anything else is passed on from
    a value that is (a Need's reason, a parameter)."""
    assert {"ApiError", "invalid", "precondition", "denied", "internal"} <= TAKES_REASON.keys()
    problems, passed_on = [], set()
    for path in sorted(SERVER.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "errors"
                and node.attr.isupper()
                and node.attr not in errors.REASONS | {"DOMAIN"}
            ):
                problems.append(f"{path.name}:{node.lineno}: errors.{node.attr}")
        for name, call in _calls(path):
            if name not in TAKES_REASON:
                continue
            arg = _reason_argument(name, call)
            where = f"{path.name}:{call.lineno}: {name}(...)"
            if arg is None:
                continue  # the function's default (a constant of the enum, checked above)
            if isinstance(arg, ast.Constant):
                if arg.value not in errors.REASONS:
                    problems.append(f"{where} sends the reason {arg.value!r}")
            elif isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
                if arg.value.id != "errors":
                    passed_on.add(ast.unparse(arg))
            elif isinstance(arg, ast.Name):
                if arg.id.isupper() and arg.id not in errors.REASONS:
                    problems.append(f"{where} sends {arg.id}")
                elif not arg.id.isupper():
                    passed_on.add(arg.id)
            else:
                problems.append(f"{where}: a reason computed as {ast.unparse(arg)}")
    assert problems == []
    # the values passed on: a function's own parameter, an ApiError's, and auth.Need.reason
    # (whose values are errors.BAD_TOKEN and errors.NOT_ADMIN, checked as attributes above)
    assert passed_on <= {"reason", "self.reason", "need.reason"}


def test_the_defaults_of_the_errors_functions_are_in_the_enum() -> None:
    for name in TAKES_REASON:
        default = inspect.signature(getattr(errors, name)).parameters["reason"].default
        assert default is inspect.Parameter.empty or default in errors.REASONS, name


def _string_comparisons(path: Path) -> Iterator[str]:
    """The reason-like string literals ``path`` compares something with."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Constant) and operand.value in errors.REASONS:
                    yield f"{path.relative_to(ROOT)}:{node.lineno}: {operand.value!r}"


def test_the_python_clients_branch_on_the_enum() -> None:
    """The SDK, the arena and the command line compare reasons with the enum's names
    (``PlayError.error_reason == errors_pb2.ILLEGAL_ACTION``), not retyped strings."""
    folders = [
        ROOT / "clients" / "python" / "capicua" / "client",
        ROOT / "arena" / "capicua" / "arena",
        ROOT / "server" / "capicua" / "cli",
    ]
    found = [
        hit
        for folder in folders
        for p in sorted(folder.rglob("*.py"))
        for hit in _string_comparisons(p)
    ]
    assert found == []


def test_the_node_client_branches_on_the_enum() -> None:
    """clients/node/src compares reasons with ErrorReason (loaded from errors.proto): no
    reason is written as a string literal in its code (comments may name them)."""
    literal = re.compile(r"""['"]([A-Z][A-Z_]+)['"]""")
    found = []
    for path in sorted((ROOT / "clients" / "node" / "src").glob("*.js")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.strip()
            if code.startswith(("//", "*", "/*")):
                continue
            if any(m in errors.REASONS for m in literal.findall(code.split(" // ")[0])):
                found.append(f"{path.relative_to(ROOT)}:{n}: {code}")
    assert found == []


def _proto_comments() -> dict[str, str]:
    """Each ErrorReason value's comment in errors.proto."""
    text = (ROOT / "proto" / "capicua" / "v1" / "errors.proto").read_text(encoding="utf-8")
    body = text[text.index("enum ErrorReason {") :]
    out, comment = {}, []
    for line in body.splitlines()[1:]:
        line = line.strip()
        if line.startswith("//"):
            comment.append(line.removeprefix("//").strip())
        elif m := re.fullmatch(r"([A-Z_]+) = \d+;", line):
            out[m.group(1)] = " ".join(comment)
            comment = []
        elif line == "}":
            break
    return out


def _comment_codes(comment: str) -> list[str]:
    """The status codes a value's comment says it travels with ("CODE:" or "CODE, in ...:")."""
    return [c for c in re.findall(r"\b([A-Z_]+)(?=:|, in the Play stream:)", comment) if c in CODES]


def test_each_value_says_its_status_code() -> None:
    comments = _proto_comments()
    assert set(comments) == set(ENUM)
    for name in errors.REASONS:
        assert _comment_codes(comments[name]), f"{name}: its comment names no status code"


def test_the_protocol_docs_list_the_enum() -> None:
    """docs/protocol.md's table has a row per reason and status code, in the enum's order,
    with the status codes that errors.proto gives the reason."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    table = text[text.index("## Errors") : text.index("### When the server fails")]
    rows = re.findall(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \| [^|]+ \|$", table, re.M)
    codes: dict[str, list[str]] = {}
    for code, reason in rows:
        codes.setdefault(reason, []).append(code)
    assert list(codes) == sorted(errors.REASONS, key=ENUM.__getitem__)
    assert [reason for _, reason in rows] == [r for r, c in codes.items() for _ in c]
    comments = _proto_comments()
    assert {r: c for r, c in codes.items() if c != _comment_codes(comments[r])} == {}
