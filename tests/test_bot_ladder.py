"""``capicua bot ... --ladder ladders/ID --version LABEL``: a Python bot (here the built-in
random one, through the real command) joins a ``capicua serve --ladder FILE`` with its token
before its Play stream opens, and plays the ladder's matches; flags that do not go together,
and a join the server refuses, are one line and exit 2, before anything is played (the
scenarios: tests/examplebots.py, shared with the Go example)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.clientkit import Proc, bot_cmd
from tests.examplebots import BAD_JOINS, joins_a_ladder_and_plays, ladder_server, refuses_a_bad_join
from tests.serverkit import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    with ladder_server(tmp_path_factory.mktemp("ladder")) as launched:
        yield launched


def capicua_bot(address: str, token: str, args: Sequence[str]) -> Proc:
    """``capicua bot builtin random ARGS`` (any ``capicua bot`` command takes them)."""
    return Proc(bot_cmd("builtin", address, token, "random", *args))


async def test_a_python_bot_joins_a_ladder_then_plays_its_matches(
    server: tuple[ServerProcess, Path],
) -> None:
    await joins_a_ladder_and_plays(capicua_bot, *server)


@pytest.mark.parametrize(("flags", "says"), BAD_JOINS)
async def test_a_bad_ladder_join_is_one_line(
    server: tuple[ServerProcess, Path], flags: list[str], says: str
) -> None:
    line = await refuses_a_bad_join(capicua_bot, server[0], flags, says)
    assert line.startswith("capicua: error: "), line
