"""What a hostile bot under ``capicua bot check`` can try, for rawbot.py's ``--snoop DIR``:
hunt for secrets wherever a process of the user can look, then try every string that could
be a token to forge something, and write down what it found and did (JSON, in
``DIR/PID.json``).

It reads ``/proc/PID/environ`` and ``/proc/PID/cmdline`` of every process it may read (all
of the user's), the files under the check's temporary directory (found in its servers'
``--data``), and what is left in the pipe each server read its admin token from. Every
token-like string it finds, its own token and no token at all are then tried:
``RegisterBot`` and ``CreateMatch`` through the check's proxy (``$CAPICUA_SERVER``), and
``RegisterBot`` straight at each of the check's servers (their listening sockets, from
``/proc``). The check's process tree is the parent's: this bot is a child of the check.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

from capicua.v1 import match_pb2, match_pb2_grpc, play_pb2, play_pb2_grpc

#: A token as capicua makes them: an optional kind prefix, then token_urlsafe(32).
TOKEN = re.compile(r"(?<![A-Za-z0-9_-])(?:bot_|seat_|host_)?[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")
#: At most this many candidates are tried (each is a few calls).
MAX_CANDIDATES = 300
#: Files larger than this are not read.
MAX_FILE = 4 << 20

Metadata = tuple[tuple[str, str], ...]


def snoop(address: str, own_token: str, report: str) -> None:
    """Hunt, try, and write the report to ``report``."""
    check = os.getppid()
    tree = _tree(check)
    found: dict[str, str] = {}  # candidate -> where it was first seen
    readable = _scan_processes(found)
    servers = [pid for pid in tree if b"serve" in _read(f"/proc/{pid}/cmdline")]
    for pid in servers:
        _scan_token_file(pid, found)
        for root in _data_roots(pid):
            _scan_files(root, found)
    addresses = sorted({a for pid in servers for a in _listening(pid)})
    candidates = [own_token, "", *[c for c in found if c != own_token][:MAX_CANDIDATES]]
    forged, refusals = _try_all(address, addresses, candidates, found)
    result = {
        "processes_read": len(readable),
        "read_check": check in readable,
        "check_servers_read": sorted(set(servers) & readable),
        "server_addresses": addresses,
        "candidates": len(candidates),
        "forged": forged,
        "refused_by_the_proxy": sorted(refusals),
    }
    Path(report).write_text(json.dumps(result), encoding="utf-8")


# -- hunting ---------------------------------------------------------------------------------


def _read(path: str | Path, limit: int = MAX_FILE) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _tree(root: int) -> set[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _read(f"/proc/{pid}/stat").decode("utf-8", "replace")
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo += children.get(pid, [])
    return out


def _note(text: bytes, where: str, found: dict[str, str]) -> None:
    for match in TOKEN.finditer(text.decode("utf-8", "replace")):
        found.setdefault(match.group(0), where)


def _scan_processes(found: dict[str, str]) -> set[int]:
    """Every process's environment and command line; the pids whose environment it read."""
    readable = set()
    for pid in _pids():
        if pid == os.getpid():
            continue
        environ = _read(f"/proc/{pid}/environ")
        if environ:
            readable.add(pid)
        _note(environ.replace(b"\0", b"\n"), f"/proc/{pid}/environ", found)
        _note(_read(f"/proc/{pid}/cmdline").replace(b"\0", b" "), f"/proc/{pid}/cmdline", found)
    return readable


def _scan_token_file(pid: int, found: dict[str, str]) -> None:
    """What is left of the file a server read its admin token from (``--admin-token-file``:
    a pipe, ``/dev/fd/N``, is read through ``/proc/PID/fd/N``). Only that one: reading the
    server's other pipes would take messages meant for its CPU workers."""
    argv = _read(f"/proc/{pid}/cmdline").decode("utf-8", "replace").split("\0")
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag != "--admin-token-file":
            continue
        path = value.replace("/dev/fd/", f"/proc/{pid}/fd/", 1)
        try:
            handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            _note(os.read(handle, 65536), f"{path} (--admin-token-file)", found)
        except OSError:
            pass  # an empty pipe
        finally:
            os.close(handle)


def _data_roots(pid: int) -> list[Path]:
    """The directory around a server's ``--data`` (the check's temporary directory)."""
    argv = _read(f"/proc/{pid}/cmdline").split(b"\0")
    return [
        Path(argv[i + 1].decode()).parent for i, arg in enumerate(argv[:-1]) if arg == b"--data"
    ]


def _scan_files(root: Path, found: dict[str, str]) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            _note(_read(path), str(path), found)


def _listening(pid: int) -> list[str]:
    """The loopback addresses a process listens on (its sockets in /proc/net/tcp)."""
    inodes = set()
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds) if os.path.isdir(fds) else ():
        try:
            link = os.readlink(f"{fds}/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for table in ("tcp", "tcp6"):  # gRPC listens on 127.0.0.1 as an IPv4-mapped IPv6 socket
        for line in _read(f"/proc/{pid}/net/{table}").decode().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                out.append(f"127.0.0.1:{int(cols[1].rsplit(':', 1)[1], 16)}")
    return out


# -- forging ---------------------------------------------------------------------------------


def _try_all(
    proxy: str, servers: list[str], candidates: list[str], found: dict[str, str]
) -> tuple[list[str], set[str]]:
    """Every call that worked: what, where and with which token (where it was found); and
    how the proxy refused the others (``CODE: details``)."""
    forged, refusals = [], set()
    for target in [proxy, *servers]:
        with grpc.insecure_channel(target) as channel:
            play = play_pb2_grpc.PlayServiceStub(channel)
            lobby = match_pb2_grpc.MatchServiceStub(channel)
            for token in candidates:
                source = found.get(token, "its own token" if token else "no token")
                for what, call in _attempts(play, lobby, through_proxy=target == proxy):
                    try:
                        call(_metadata(token))
                    except grpc.RpcError as e:
                        if target == proxy:
                            refusals.add(f"{e.code().name}: {e.details()}")
                        continue
                    forged.append(f"{what} at {target} with a token from {source}")
    return forged, refusals


def _attempts(
    play: play_pb2_grpc.PlayServiceStub,
    lobby: match_pb2_grpc.MatchServiceStub,
    *,
    through_proxy: bool,
) -> list[tuple[str, Callable[[Metadata], object]]]:
    """The calls that forge something: a bot registered; through the proxy, a match created
    too (straight at a server anyone may create one, as an anonymous creator)."""

    def register(metadata: Metadata) -> object:
        request = play_pb2.RegisterBotRequest(bot_id=f"intruder-{uuid.uuid4().hex[:8]}")
        return play.RegisterBot(request, metadata=metadata, timeout=5)

    def create(metadata: Metadata) -> object:
        cpu = match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_CPU, cpu_level=match_pb2.CPU_LEVEL_EASY)
        request = match_pb2.CreateMatchRequest(preset="block", seats=[cpu] * 4)
        return lobby.CreateMatch(request, metadata=metadata, timeout=5)

    calls: list[tuple[str, Callable[[Metadata], object]]] = [("RegisterBot", register)]
    return [*calls, ("CreateMatch", create)] if through_proxy else calls


def _metadata(token: str) -> Metadata:
    return (("authorization", f"Bearer {token}"),) if token else ()
