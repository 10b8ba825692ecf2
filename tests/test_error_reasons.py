"""The ErrorInfo reasons have one home, the enum capicua.v1.ErrorReason (errors.proto):
the server sends no other, its constants are the enum's names, the clients branch on the
enum rather than on retyped strings, and docs/protocol.md lists exactly the enum.

The ErrorInfo metadata of each reason is written down once, in :data:`METADATA`: errors.proto
and docs/protocol.md must document the same keys, and every refusal this file provokes over
a real server on loopback (every reason there is) must carry them."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import re
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from capicua.server import errors
from capicua.server.faults import Faults
from capicua.server.ladders import LadderDef
from capicua.v1 import errors_pb2, ladder_pb2, match_pb2, play_pb2, play_pb2_grpc
from tests.compliance.client import (
    CALL_TIMEOUT,
    OPEN,
    OPTIONS,
    Bot,
    Chooser,
    auth,
    bot_seat,
    reasons,
    until,
)
from tests.serverkit import running
from tests.test_server_refusals import ADMIN, CASES, World, built_world, status_of

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


def _docs_rows() -> list[tuple[str, str, str]]:
    """(code, reason, metadata cell) of each row of docs/protocol.md's table of errors."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    table = text[text.index("## Errors") : text.index("### When the server fails")]
    rows = re.findall(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \| [^|]+ \| ([^|]+) \|$", table, re.M)
    return [(code, reason, metadata.strip()) for code, reason, metadata in rows]


def test_the_protocol_docs_list_the_enum() -> None:
    """docs/protocol.md's table has a row per reason and status code, in the enum's order,
    with the status codes that errors.proto gives the reason."""
    rows = _docs_rows()
    codes: dict[str, list[str]] = {}
    for code, reason, _ in rows:
        codes.setdefault(reason, []).append(code)
    assert list(codes) == sorted(errors.REASONS, key=ENUM.__getitem__)
    assert [reason for _, reason, _ in rows] == [r for r, c in codes.items() for _ in c]
    comments = _proto_comments()
    assert {r: c for r, c in codes.items() if c != _comment_codes(comments[r])} == {}


# -- the metadata of each reason ----------------------------------------------------------


class Keys(NamedTuple):
    """The ErrorInfo metadata keys of a reason: those it always carries, and those it
    carries when they apply (a match named by JoinMatch, a CreateMatch's request_id...)."""

    always: frozenset[str]
    also: frozenset[str]


def keys(always: str = "", also: str = "") -> Keys:
    return Keys(frozenset(always.split()), frozenset(also.split()))


#: The one table of the metadata keys per reason. errors.proto (each value's "Metadata:"
#: line) and docs/protocol.md (the table's last column) must say the same, and every refusal
#: provoked below must carry them; a reason added to the enum fails until it is written here.
METADATA: dict[str, Keys] = {
    "INVALID_ARGUMENT": keys("field", also="match request_id"),
    "UNKNOWN_TURN": keys("field match turn_id"),
    "ILLEGAL_ACTION": keys("match turn_id seat"),
    "STALE_TURN": keys("match turn_id seat"),
    "MATCH_STARTED": keys("match"),
    "MATCH_FINISHED": keys("match"),
    "MATCH_NOT_FINISHED": keys("match"),
    "SEAT_TAKEN": keys("match seat"),
    "NO_OPEN_SEAT": keys("match"),
    "MISSING_TOKEN": keys(),
    "BAD_TOKEN": keys(),
    "NOT_HOST": keys("match"),
    "NOT_ADMIN": keys(),
    "NOT_YOUR_SEAT": keys("match turn_id"),
    "MATCH_NOT_FOUND": keys("match"),
    "REPLAY_NOT_FOUND": keys("match"),
    "UNKNOWN_MATCH": keys("match turn_id"),
    "BOT_EXISTS": keys("bot"),
    "REQUEST_ID_REUSED": keys("field request_id"),
    "TOO_MANY_MATCHES": keys("limit", also="bot request_id"),
    "SLOW_CONSUMER": keys("limit", also="match"),
    "STREAM_REPLACED": keys(),
    "SHUTTING_DOWN": keys(also="match"),
    "INTERNAL": keys(also="match"),
    "REPLAY_FAILED": keys("match"),
    "NOT_RESERVABLE": keys("field bot", also="request_id"),
    "TOO_MANY_REGISTRATIONS": keys("limit"),
    "SEED_NOT_ALLOWED": keys("field bot", also="request_id"),
    "SEED_CHOSEN": keys("match"),
    "LADDER_NOT_FOUND": keys("field"),
    "NOT_ON_LADDER": keys("ladder"),
    "TOO_MANY_ENTRIES": keys("ladder limit"),
}

#: The form of each key's values (errors.proto's header says the same in words).
FORMS: dict[str, re.Pattern[str]] = {
    "match": re.compile(r"matches/[A-Za-z0-9_-]{1,64}"),
    "turn_id": re.compile(r"[0-9]+"),
    "seat": re.compile(r"[0-9]+"),
    "field": re.compile(r"[a-z_]+(\[[0-9]+\])?(\.[a-z_]+(\[[0-9]+\])?)*"),  # seats[2].bot_id
    "bot": re.compile(r"bots/[A-Za-z0-9_.-]{1,64}"),
    "request_id": re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"),
    "limit": re.compile(r"[0-9]+"),
    "ladder": re.compile(r"ladders/[a-z0-9][a-z0-9-]{0,62}"),
}

#: Documented keys no test here provokes, and why.
UNPROVOKED = {
    # CancelMatch while a server stopping with --on-stop suspend hands its matches to the
    # journal: a window of a stopping server's shutdown (tests/test_server_durability.py)
    ("SHUTTING_DOWN", "match"),
}


def _parse_keys(text: str) -> Keys:
    """The keys of a "Metadata" text: ``none`` or `` `a`, `b` ``, then optionally
    ``; also `c` (when), `d` (when)``."""
    always, _, also = text.strip().removesuffix(".").partition("; also ")
    always = always.strip()
    assert always == "none" or re.fullmatch(r"`[a-z_]+`(, `[a-z_]+`)*", always), text
    also = re.sub(r"\([^()]*\)", "", also)  # the whens may name calls: `CreateMatch`
    assert re.fullmatch(r"(\s*`[a-z_]+`\s*(,|$))*", also), text
    found = re.compile(r"`([a-z_]+)`")
    return Keys(frozenset(found.findall(always)), frozenset(found.findall(also)))


def test_every_reason_has_its_metadata_keys_written_down() -> None:
    assert set(METADATA) == errors.REASONS
    for reason, (always, also) in METADATA.items():
        assert not always & also, reason
        assert always | also <= FORMS.keys(), reason


def test_errors_proto_documents_each_reasons_metadata_keys() -> None:
    comments = _proto_comments()
    documented = {}
    for reason in errors.REASONS:
        assert "Metadata: " in comments[reason], f"{reason}: its comment lists no metadata"
        documented[reason] = _parse_keys(comments[reason].rsplit("Metadata: ", 1)[1])
    assert documented == METADATA


def test_the_protocol_docs_document_each_reasons_metadata_keys() -> None:
    documented: dict[str, set[Keys]] = {}
    for _, reason, cell in _docs_rows():
        documented.setdefault(reason, set()).add(_parse_keys(cell))
    assert documented == {reason: {k} for reason, k in METADATA.items()}


Seen = dict[str, list[dict[str, str]]]


def _info(status: status_pb2.Status) -> error_details_pb2.ErrorInfo:
    [detail] = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info) and info.domain == errors.DOMAIN
    return info


def _note(seen: Seen, status: status_pb2.Status) -> dict[str, str]:
    info = _info(status)
    metadata = dict(info.metadata)
    seen.setdefault(info.reason, []).append(metadata)
    return metadata


async def _refused(seen: Seen, call: Awaitable[Any]) -> dict[str, str]:
    """The metadata of the refusal ``call`` ends with (noted in ``seen``)."""
    try:
        await asyncio.wait_for(call, CALL_TIMEOUT)
    except grpc.aio.AioRpcError as e:
        return _note(seen, status_of(e))
    raise AssertionError("the call succeeded")


async def _drain(call: Any) -> list[Any]:
    return [message async for message in call]


@contextlib.asynccontextmanager
async def _stream(
    world: World, token: str, chooser: Chooser = lambda bot, decision: None
) -> AsyncIterator[Bot]:
    """A Play stream of ``token`` (silent unless ``chooser`` answers), once welcomed."""
    bot = Bot(world.lobby.address, token, chooser=chooser)
    run = asyncio.create_task(bot.run(timeout=120))
    try:
        await until(lambda: bot.welcome is not None or run.done(), what="the welcome")
        yield bot
    finally:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run


def _action(match: str, turn_id: int = 1, action_id: int = 0) -> dict[str, Any]:
    return {"action": play_pb2.ActionReply(match=match, turn_id=turn_id, action_id=action_id)}


async def _answers(seen: Seen, world: World) -> int:
    """In-stream refusals of a seat token and a bot token; the running match's turn the bot
    answered (once illegally, then accepted, then differently: ILLEGAL_ACTION, STALE_TURN)."""
    async with _stream(world, world.seat) as guest:
        guest.send()  # an empty PlayRequest
        guest.send(**_action("x/y"))
        guest.send(**_action(world.running))  # a match this seat token has no seat in
        await until(lambda: len(guest.errors) == 3, what="three refusals")
    for status in guest.errors:
        _note(seen, status)
    assert reasons(guest) == ["INVALID_ARGUMENT", "INVALID_ARGUMENT", "NOT_YOUR_SEAT"]
    assert _info(guest.errors[2]).metadata["match"] == world.running

    asked: list[int] = []

    def chooser(bot: Bot, decision: play_pb2.DecisionRequest) -> int | None:
        if not asked:
            asked.append(decision.turn_id)
            return len(decision.legal_actions) + 7  # no such id: asked again
        if asked == [decision.turn_id]:
            asked.append(decision.turn_id)
            bot.answer(decision, 0)  # accepted
            bot.send(**_action(decision.match, decision.turn_id, 1))  # another: stale
        return None  # the next turns: silent (the timer is an hour)

    missing = f"matches/m{uuid.uuid4().hex[:8]}"
    async with _stream(world, world.bot, chooser) as bot:
        bot.send(**_action(missing))
        bot.send(**_action(world.running, 999_999))
        wanted = {"ILLEGAL_ACTION", "STALE_TURN", "UNKNOWN_MATCH", "UNKNOWN_TURN"}
        await until(lambda: wanted <= set(reasons(bot)), what=f"{wanted}")
    by_reason = {_info(s).reason: _note(seen, s) for s in bot.errors}
    turn = str(asked[0])
    assert by_reason["UNKNOWN_MATCH"] == {"match": missing, "turn_id": "1"}
    assert by_reason["ILLEGAL_ACTION"] == {"match": world.running, "turn_id": turn, "seat": "0"}
    assert by_reason["STALE_TURN"] == by_reason["ILLEGAL_ACTION"]
    return asked[0]


async def _lobby_refusals(seen: Seen, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the pinned CASES do not provoke, or provoke without their optional keys."""
    m = world.lobby.matches
    admin = auth(ADMIN)
    start = m.StartMatch(match_pb2.StartMatchRequest(name=world.over), metadata=admin)
    assert await _refused(seen, start) == {"match": world.over}  # MATCH_FINISHED

    private, _ = await world.lobby.register("private", admin=ADMIN, reservable_by=())
    rid = str(uuid.uuid4())
    reserve = match_pb2.CreateMatchRequest(
        preset="block", seats=[bot_seat(private)] + [OPEN] * 3, request_id=rid
    )
    assert await _refused(seen, m.CreateMatch(reserve)) == {
        "field": "seats[0].bot_id",
        "bot": f"bots/{private}",
        "request_id": rid,
    }
    # a bot that lets anyone reserve it, not choose its deals
    dealt, _ = await world.lobby.register("dealt", admin=ADMIN, accept_chosen_seeds=False)
    seeded = match_pb2.CreateMatchRequest(
        preset="block", seats=[bot_seat(dealt)] + [OPEN] * 3, seed=1, request_id=rid
    )
    assert await _refused(seen, m.CreateMatch(seeded)) == {
        "field": "seats[0].bot_id",
        "bot": f"bots/{dealt}",
        "request_id": rid,
    }
    seeded.ClearField("request_id")
    seeded.seats[0].CopyFrom(OPEN)
    chosen = await m.CreateMatch(seeded, timeout=CALL_TIMEOUT)
    join = m.JoinMatch(match_pb2.JoinMatchRequest(name=chosen.match.name))
    assert await _refused(seen, join) == {"match": chosen.match.name}  # SEED_CHOSEN
    bad = match_pb2.CreateMatchRequest(preset="nope", request_id=rid)
    assert await _refused(seen, m.CreateMatch(bad)) == {"field": "preset", "request_id": rid}
    await m.CreateMatch(match_pb2.CreateMatchRequest(preset="block", request_id=rid))
    other = match_pb2.CreateMatchRequest(preset="cuban", request_id=rid)
    await _refused(seen, m.CreateMatch(other))  # REQUEST_ID_REUSED

    lobby = world.app.lobby
    monkeypatch.setattr(lobby.admission, "max_matches", 0)
    limited = match_pb2.CreateMatchRequest(preset="block", request_id=str(uuid.uuid4()))
    assert await _refused(seen, m.CreateMatch(limited)) == {
        "limit": "0",
        "request_id": limited.request_id,
    }
    monkeypatch.setattr(lobby.admission, "max_matches", 10_000)
    # the bot plays the running match
    monkeypatch.setattr(lobby.admission, "max_matches_per_bot", 1)
    join = m.JoinMatch(match_pb2.JoinMatchRequest(name=world.waiting), metadata=auth(world.bot))
    assert await _refused(seen, join) == {"limit": "1", "bot": f"bots/{world.bot_id}"}
    monkeypatch.setattr(lobby.admission, "max_matches_per_bot", 1000)

    with monkeypatch.context() as patched:  # a spectator and a stream that fall behind
        patched.setattr(lobby, "max_unread_bytes", 1)
        watch = _watch(m.WatchMatch(match_pb2.WatchMatchRequest(name=world.running)))
        assert await _refused(seen, watch) == {"limit": "1", "match": world.running}
        patched.setattr(world.app.hub, "max_unread_bytes", 1)
        async with grpc.aio.insecure_channel(world.lobby.address, options=OPTIONS) as channel:
            empty = iter([play_pb2.PlayRequest()])
            call = play_pb2_grpc.PlayServiceStub(channel).Play(empty, metadata=auth(world.seat))
            # the stream ends with SLOW_CONSUMER as its status: its opening (the Welcome...)
            # is not counted, the error answering the empty request is one byte too many
            assert await _refused(seen, _drain(call)) == {"limit": "1"}

    async with _stream(world, world.seat) as first, _stream(world, world.seat):
        await until(lambda: first.status is not None, what="the older stream's end")
    assert first.status == grpc.StatusCode.ABORTED and first.status_info is not None
    assert first.status_info.reason == "STREAM_REPLACED"
    seen.setdefault("STREAM_REPLACED", []).append(dict(first.status_info.metadata))

    monkeypatch.setattr(lobby, "closing", True)
    await _refused(seen, m.CreateMatch(match_pb2.CreateMatchRequest()))  # SHUTTING_DOWN
    monkeypatch.setattr(lobby, "closing", False)


async def _watch(call: Any) -> None:
    async for _ in call:
        raise AssertionError("a refused watch sent a message")


def _raise(error: Exception, when: str | None = None) -> Callable[..., None]:
    """A fault hook that raises ``error`` (when called with ``when``, if given)."""

    def fail(*args: object) -> None:
        if when is None or args == (when,):
            raise error

    return fail


async def _server_faults(seen: Seen, world: World, faults: Faults, turn: int) -> None:
    """INTERNAL and REPLAY_FAILED (injected faults), then answers to the running match once
    it is over: while the server keeps it, and once it is no longer held."""
    m = world.lobby.matches
    faults.rpc = _raise(RuntimeError("a bug"), "GetRuleset")
    ruleset = m.GetRuleset(match_pb2.GetRulesetRequest(preset="block"))
    assert await _refused(seen, ruleset) == {}  # INTERNAL: a bug in a call
    faults.rpc = None
    faults.store_write = _raise(sqlite3.OperationalError("database or disk is full"))
    join = m.JoinMatch(match_pb2.JoinMatchRequest(name=world.waiting))
    assert await _refused(seen, join) == {"match": world.waiting}  # INTERNAL: one match's
    faults.store_write = None

    faults.replay = _raise(RuntimeError("no replay"))
    cancel = match_pb2.CancelMatchRequest(name=world.running)
    await m.CancelMatch(cancel, metadata=auth(world.running_host), timeout=CALL_TIMEOUT)
    replay = m.GetReplay(match_pb2.GetReplayRequest(name=world.running))
    assert await _refused(seen, replay) == {"match": world.running}  # REPLAY_FAILED
    # the host token of a match that is over was revoked: MATCH_FINISHED names its match
    start = m.StartMatch(
        match_pb2.StartMatchRequest(name=world.running), metadata=auth(world.running_host)
    )
    assert await _refused(seen, start) == {"match": world.running}

    async with _stream(world, world.bot) as bot:
        bot.send(**_action(world.running, turn, 1))  # the match is over, still held
        await until(lambda: len(bot.errors) == 1, what="the refusal of a late answer")
        # held no more: the server keeps one finished match (this world's --keep-finished),
        # and finishing another drops it
        await m.CancelMatch(
            match_pb2.CancelMatchRequest(name=world.full),
            metadata=auth(ADMIN),
            timeout=CALL_TIMEOUT,
        )
        assert world.app.registry.get(world.running.removeprefix("matches/")) is None
        bot.send(**_action(world.running, turn, 1))
        await until(lambda: len(bot.errors) == 2, what="the refusal of an answer to a match gone")
    late, gone = (_note(seen, status) for status in bot.errors)
    assert reasons(bot) == ["STALE_TURN", "UNKNOWN_MATCH"]
    assert late == {"match": world.running, "turn_id": str(turn), "seat": "0"}
    assert gone == {"match": world.running, "turn_id": str(turn)}


async def _ladder_refusals(seen: Seen) -> None:
    """LADDER_NOT_FOUND, NOT_ON_LADDER and TOO_MANY_ENTRIES, on a server with one ladder
    that takes one entry."""
    club = LadderDef("club", "club", "iq-1v1", (), 1000, ("random", "easy"))
    async with running(None, ladders=(club,), max_ladder_entries=1) as (_, lobby):
        (_, first), (_, second) = [await lobby.register(name) for name in ("first", "second")]
        ladders = lobby.ladder_service
        get = ladders.GetLadder(ladder_pb2.GetLadderRequest(name="ladders/nope"))
        assert await _refused(seen, get) == {"field": "name"}
        join = ladder_pb2.JoinLadderRequest(ladder="ladders/nope", version="v1")
        assert await _refused(seen, ladders.JoinLadder(join, metadata=auth(first))) == {
            "field": "ladder"
        }
        leave = ladder_pb2.LeaveLadderRequest(ladder=club.name)
        assert await _refused(seen, ladders.LeaveLadder(leave, metadata=auth(first))) == {
            "ladder": club.name
        }
        await lobby.join_ladder(club.name, "v1", token=first)
        join = ladder_pb2.JoinLadderRequest(ladder=club.name, version="v1")
        assert await _refused(seen, ladders.JoinLadder(join, metadata=auth(second))) == {
            "ladder": club.name,
            "limit": "1",
        }


async def test_every_refusal_carries_its_documented_metadata_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every reason, provoked over real gRPC on loopback (the pinned refusals of
    tests/test_server_refusals.py and the ones above), carries the keys METADATA gives it
    always, no key it does not document, each in its form, and no token; every documented
    key is seen (UNPROVOKED aside). An answer in the Play stream is named by its match and
    turn_id, even one to a match the server does not hold (UNKNOWN_MATCH)."""
    seen: Seen = {}
    faults = Faults()
    async with built_world(faults=faults, keep_finished=1) as world:
        for _, call, _ in CASES:
            await _refused(seen, call(world))
        turn = await _answers(seen, world)
        await _lobby_refusals(seen, world, monkeypatch)
        await _server_faults(seen, world, faults, turn)
        secrets = {world.bot, world.host, world.seat, world.running_host, world.other_host, ADMIN}
    async with running(None, max_registrations_per_hour=1) as (_, open_lobby):
        await open_lobby.register("first")
        second = open_lobby.play.RegisterBot(play_pb2.RegisterBotRequest(bot_id="second"))
        assert await _refused(seen, second) == {"limit": "1"}  # TOO_MANY_REGISTRATIONS
    await _ladder_refusals(seen)

    assert set(seen) == errors.REASONS, "reasons no test provoked"
    used: set[tuple[str, str]] = set()
    for reason, found in seen.items():
        always, also = METADATA[reason]
        for metadata in found:
            assert always <= metadata.keys() <= always | also, (reason, metadata)
            for key, value in metadata.items():
                assert FORMS[key].fullmatch(value), (reason, key, value)
                assert not any(s in value for s in secrets), (reason, key)
                used.add((reason, key))
    documented = {(r, k) for r, (always, also) in METADATA.items() for k in always | also}
    assert documented - used == UNPROVOKED
