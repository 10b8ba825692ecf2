"""``capicua bot ... --ladder ladders/ID --version LABEL``: a Python bot (here the built-in
random one, through the real command) joins a ``capicua serve --ladder FILE`` with its token
before its Play stream opens, and plays the ladder's matches; flags that do not go together,
and a join the server refuses, are one line and exit 2, before anything is played."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clientkit import Proc, bot_cmd, until
from tests.compliance.client import Lobby
from tests.serverkit import ServerProcess, server_process
from tests.test_ladder_server import LADDER_FILE
from tests.test_ladder_server import _stored as stored

LADDER = "ladders/club-ladder"  # the id comes from the file's name, "Club ladder"


def one_error_line(bot: Proc) -> str:
    """The bot's only line on stderr, ``capicua: error: ...`` (Play was never opened)."""
    lines = [line for line in bot.err if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("capicua: error: "), bot.report()
    return lines[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """One ``capicua serve --ladder FILE`` for the module, and the ladder's results folder
    (each test registers bots of its own)."""
    tmp = tmp_path_factory.mktemp("ladder")
    file = tmp / "club.toml"
    file.write_text(LADDER_FILE)
    data = tmp / "data"
    with server_process(["--data", str(data), "--ladder", str(file)], tmp / "logs") as srv:
        yield srv, data / "ladders" / "club-ladder"


async def test_a_python_bot_joins_a_ladder_then_plays_its_matches(
    server: tuple[ServerProcess, Path],
) -> None:
    srv, out = server
    lobby = Lobby(srv.address)
    flags = ["--ladder", LADDER, "--version", "v1", "--max-matches-at-once", "2"]
    bots: list[Proc] = []
    try:
        bot_id, token = await lobby.register("py-ladder")
        bot = Proc(bot_cmd("builtin", srv.address, token, "random", *flags, "--matches", "3"))
        bots.append(bot)
        assert await bot.wait(120) == 0, bot.report()
        entry = f"{bot_id}@v1"
        # committed once the runner has each replay; the validation match rates nothing
        await until(lambda: stored(out, entry) >= 2, 60, "the ladder's commits")
        roster = {e.name: e for e in (await lobby.get_ladder(LADDER)).entries}
    finally:
        for started in bots:
            started.stop()
        await lobby.close()
    joined = roster[f"{LADDER}/entries/{entry}"]
    assert (joined.version, joined.max_concurrent_matches) == ("v1", 2)
    said = bot.stderr
    assert f"joined {LADDER} as {entry} (2 matches at once)" in said, bot.report()
    assert said.index("joined ") < said.index("connected to"), bot.report()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--ladder", LADDER], "--ladder and --version go together"),
        (["--version", "v1"], "--ladder and --version go together"),
        (["--ladder", LADDER, "--version", "v 1"], "INVALID_ARGUMENT: version: 'v 1' is not"),
        (["--ladder", "ladders/nope", "--version", "v1"], "NOT_FOUND: ladder: this server runs"),
        (["--ladder", LADDER, "--version", "v1", "--max-matches-at-once", "33"],
         "INVALID_ARGUMENT: max_concurrent_matches: 33 is not between 1 and 32"),
    ],
)  # fmt: skip
async def test_a_bad_ladder_join_is_one_line(
    server: tuple[ServerProcess, Path], flags: list[str], says: str
) -> None:
    srv, _ = server
    lobby = Lobby(srv.address)
    try:
        bot_id, token = await lobby.register("py-bad-join")
        bot = Proc(bot_cmd("builtin", srv.address, token, "random", *flags))
        assert await bot.wait(60) == 2, bot.report()
        entries = (await lobby.get_ladder(LADDER)).entries
    finally:
        await lobby.close()
    assert says in one_error_line(bot), bot.report()
    assert [e.name for e in entries if e.bot == f"bots/{bot_id}"] == []  # nothing joined
