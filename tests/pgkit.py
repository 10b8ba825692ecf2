"""A real PostgreSQL server for the tests: Debian's ``postgresql`` (``initdb``, ``pg_ctl``),
started once per test process in a temporary directory and reached over its Unix socket
there (no port to collide with another worker's). Skipped with its reason where it is not
installed (failing under CI, which installs it: .ci/run).

Run as root (containers, CI), the server runs as the ``postgres`` user Debian's package
creates, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tooling import missing_tool


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=_version)
    return found[-1] if found else shutil.which(name)


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _as_postgres(argv: list[str]) -> list[str]:
    """``argv`` run as the ``postgres`` user when we are root."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


class PostgresServer:
    """One running server; :meth:`database` makes a fresh, empty database on it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.getuid()).pw_name

    def start(self) -> None:
        initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
        if initdb is None or pg_ctl is None:
            missing_tool("PostgreSQL's initdb/pg_ctl not found (Debian package postgresql)")
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.root}' -c fsync=off"
        commands = [
            [initdb, "-D", str(self.data), "-U", self.user, "-A", "trust", "--no-sync"],
            [pg_ctl, "-D", str(self.data), "-w", "-t", "120", "-o", options, "-l",
             str(self.root / "log"), "start"],
        ]  # fmt: skip
        for argv in commands:
            subprocess.run(_as_postgres(argv), check=True, capture_output=True, timeout=180)

    def stop(self) -> None:
        pg_ctl = _bin("pg_ctl")
        if pg_ctl is not None and self.data.exists():
            subprocess.run(
                _as_postgres([pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"]),
                capture_output=True,
                timeout=60,
                check=False,
            )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@/{database}?host={self.root}"

    def database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    pytest.importorskip("psycopg")
    root = Path(tempfile.mkdtemp(prefix="capicua-pg-"))
    server = PostgresServer(root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database on the session's server."""
    return postgres_server.database()
