"""``capicua play`` and ``capicua replay verify/show`` as a user runs them.

A few cases run the installed console script in a subprocess (the real program, exit codes
and streams as a shell sees them); the rest use click's CliRunner in-process.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from capicua.cli import main
from capicua.engine.records import Play
from capicua.engine.rules import preset_names
from capicua.wire import codec

PROGRAM = Path(sys.executable).parent / ("capicua.exe" if os.name == "nt" else "capicua")


def program(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert PROGRAM.is_file(), f"the capicua console script is not installed at {PROGRAM}"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env |= {"COLUMNS": "200", "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [str(PROGRAM), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=timeout,
        check=False,
    )


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("capicua: error: "), stderr
    return lines[0]


# -- the real program -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def played(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    path = tmp_path_factory.mktemp("play") / "match.json"
    done = program(
        "play", "--rules", "iq-2v2", "--bots", "random,random,random,random",
        "--seed", "5", "--replay", str(path),
    )  # fmt: skip
    return done, path


def test_play_prints_the_match_and_writes_the_replay(
    played: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, path = played
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    no_traceback(done.stdout)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("iq-2v2: seed 5;")
    assert "Hand 1" in lines
    assert any(line.strip().startswith("deal seat 0:") for line in lines)
    assert any("plays" in line for line in lines)
    results = [line for line in lines if line.startswith("Result: ")]
    assert len(results) == 1
    assert lines[-1] == f"replay written to {path}"
    assert lines[-2] == results[0]
    assert path.is_file()
    replay = codec.read_replay(path)
    assert replay.seed == 5 and replay.ruleset.name == "iq-2v2"
    assert replay.players == ("random",) * 4
    assert replay.outcome is not None
    hands = sum(1 for line in lines if line.startswith("Hand "))
    assert hands == len(replay.hands)


def test_replay_verify_accepts_the_written_replay(
    played: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, path = played
    done = program("replay", "verify", str(path))
    assert done.returncode == 0, done.stderr
    no_traceback(done.stdout, done.stderr)
    replay = codec.read_replay(path)
    assert done.stdout.startswith(f"{path}: OK ({len(replay.hands)} hands; ")


def test_the_same_seed_gives_the_same_output(
    played: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    first, _ = played
    again = program("play", "--rules", "iq-2v2", "--bots", "random", "--seed", "5")
    assert again.returncode == 0
    assert again.stdout.splitlines() == first.stdout.splitlines()[:-1]  # no "replay written"
    other = program("play", "--rules", "iq-2v2", "--seed", "6")
    assert other.stdout != again.stdout


def test_unknown_preset_as_a_real_program() -> None:
    done = program("play", "--rules", "iq-3v3")
    assert done.returncode == 2
    assert done.stdout == ""
    line = one_error_line(done.stderr)
    assert "unknown preset 'iq-3v3'" in line
    no_traceback(done.stderr)


def test_tampered_replay_as_a_real_program(tmp_path: Path) -> None:
    path = tmp_path / "m.json.gz"
    assert program("play", "--rules", "el-dominito-2p", "--seed", "3", "--replay", str(path),
                   "--quiet").returncode == 0  # fmt: skip
    i, tile = tamper(path)
    done = program("replay", "verify", str(path))
    assert done.returncode == 1
    assert f"{path}: MISMATCH: hand 1, event {i + 1}: " in done.stderr
    assert tile in done.stderr
    no_traceback(done.stdout, done.stderr)


def test_a_closed_stdout_does_not_lose_the_replay(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    proc = subprocess.Popen(
        [str(PROGRAM), "play", "--rules", "iq-2v2", "--set", "target=10000", "--seed", "1",
         "--replay", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`: about a megabyte of output is still to come
    stderr = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    no_traceback(stderr)
    assert path.is_file() or code != 0, f"exit {code}, no replay written, stderr {stderr!r}"


# -- in-process ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", preset_names())
def test_play_every_preset_quietly(name: str) -> None:
    result = run("play", "--rules", name, "--seed", "11", "--quiet")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Result: "), result.stdout


def test_play_with_overrides_and_a_gzip_replay(tmp_path: Path) -> None:
    path = tmp_path / "m.json.gz"
    result = run(
        "play", "--rules", "draw", "--set", "seats=2", "--set", "sides=individual",
        "--set", "max_hands=2", "--seed", "4", "--replay", str(path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert gzip.decompress(path.read_bytes()).startswith(b"{")
    replay = codec.read_replay(path)
    assert replay.ruleset.seats == 2 and replay.ruleset.overrides[-1] == "max_hands=2"
    assert "draws" in result.stdout  # 14 tiles in the stock with two seats
    assert run("replay", "verify", str(path)).exit_code == 0


def write_match(path: Path, *args: str) -> None:
    result = run(
        "play", "--rules", "iq-2v2", "--seed", "5", "--replay", str(path), "--quiet", *args
    )
    assert result.exit_code == 0, result.output


def tamper(path: Path) -> tuple[int, str]:
    """Change the tile of hand 0's second play in a replay file to one its seat does not
    hold; returns the event's index and the new tile."""
    replay = codec.read_replay(path)
    record = replay.hands[0]
    i, play = [(i, e) for i, e in enumerate(record.events) if isinstance(e, Play)][1]
    other = str(next(t for t in record.deals[0].hands[(play.seat + 1) % replay.ruleset.seats]))
    raw = path.read_bytes()
    zipped = raw[:2] == b"\x1f\x8b"
    data = json.loads(gzip.decompress(raw) if zipped else raw)
    data["hands"][0]["events"][i]["play"]["tile"] = other
    text = json.dumps(data).encode()
    path.write_bytes(gzip.compress(text) if zipped else text)
    return i, other


def test_tampered_replay_is_a_mismatch(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    bad = tmp_path / "bad.json"
    write_match(good)
    write_match(bad)
    i, tile = tamper(bad)
    result = run("replay", "verify", str(good), str(bad))
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{good}: OK (")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{bad}: MISMATCH: hand 1, event {i + 1}: ")
    assert f"plays {tile}" in lines[0]
    no_traceback(result.output)


def test_an_extra_event_is_named_by_replay_verify(tmp_path: Path) -> None:
    path = tmp_path / "extra.json"
    write_match(path)
    data = json.loads(path.read_text())
    n = len(data["hands"][0]["events"])
    data["hands"][0]["events"].append(data["hands"][1]["events"][0])
    path.write_text(json.dumps(data))
    result = run("replay", "verify", str(path))
    assert result.exit_code == 1
    assert f"MISMATCH: hand 1, event {n + 1}:" in result.stderr


def test_replay_show_one_hand(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    write_match(path)
    replay = codec.read_replay(path)
    assert len(replay.hands) >= 2
    result = run("replay", "show", str(path), "--hand", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("iq-2v2: seed 5;")
    assert "Hand 1" in lines and "Hand 2" not in lines
    assert not any(line.startswith("Result:") for line in lines)
    record = replay.hands[0]
    hand0 = " ".join(str(t) for t in record.deals[0].hands[0])
    assert f"  deal seat 0: {hand0}" in lines
    plays = [line for line in lines if " plays " in line]
    assert len(plays) == sum(1 for e in record.events if isinstance(e, Play))
    assert sum(1 for line in lines if line.startswith("  => ")) == 1
    # the chain as laid: every played tile once, neighbours touching on equal pips
    (chain,) = [line for line in lines if line.startswith("  chain: ")]
    halves = [tuple(map(int, t.split("|"))) for t in chain.split(": ")[1][1:-1].split("][")]
    assert len(halves) == len(plays)
    assert all(a[1] == b[0] for a, b in zip(halves, halves[1:], strict=False))
    played = sorted(str(e.tile) for e in record.events if isinstance(e, Play))
    assert sorted(f"{min(a, b)}-{max(a, b)}" for a, b in halves) == played
    assert record.result is not None
    for seat, tiles in enumerate(record.result.remaining):
        assert f"  left with seat {seat}: {' '.join(map(str, tiles)) or '-'}" in lines
    whole = run("replay", "show", str(path))
    assert whole.exit_code == 0
    assert whole.stdout.splitlines()[-1].startswith("Result: ")
    assert set(lines) <= set(whole.stdout.splitlines())


def test_replay_show_a_hand_that_is_not_there(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    write_match(path)
    result = run("replay", "show", str(path), "--hand", "99")
    assert result.exit_code == 2
    assert "hands" in result.stderr
    no_traceback(result.output)


# -- bad input: exit 2, one line on stderr, never a traceback ----------------------------------


def corrupt(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.json"
    if kind == "garbage":
        path.write_text("this is not json\n")
    elif kind == "truncated-gzip":
        path = tmp_path / "t.json.gz"
        path.write_bytes(gzip.compress(b'{"format_version": 1}')[:12])
    elif kind == "empty":
        path.write_text("")
    elif kind == "wrong-schema":
        path.write_text('{"format_version": 1, "hands": [{"events": [{"play": {"tile": 7}}]}]}')
    elif kind == "bad-tile":
        write_match(path)
        data = json.loads(path.read_text())
        data["hands"][0]["events"][0]["play"]["tile"] = "3-x"
        path.write_text(json.dumps(data))
    elif kind == "bad-ruleset":
        write_match(path)
        data = json.loads(path.read_text())
        data["ruleset"]["hand_size"] = 50
        path.write_text(json.dumps(data))
    elif kind == "not-an-object":
        path.write_text("[1, 2, 3]")
    elif kind == "missing":
        path = tmp_path / "nowhere" / "missing.json"
    elif kind == "directory":
        path = tmp_path
    else:  # pragma: no cover
        raise AssertionError(kind)
    return path


CORRUPT = [
    "garbage", "truncated-gzip", "empty", "wrong-schema", "bad-tile", "bad-ruleset",
    "not-an-object", "missing", "directory",
]  # fmt: skip


@pytest.mark.parametrize("command", ["verify", "show"])
@pytest.mark.parametrize("kind", CORRUPT)
def test_unreadable_replays(tmp_path: Path, kind: str, command: str) -> None:
    path = corrupt(tmp_path, kind)
    result = run("replay", command, str(path))
    assert result.exit_code == 2, result.output
    no_traceback(result.output)
    line = one_error_line(result.stderr)
    assert f"replay {path}" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rules", "nope"], "unknown preset 'nope'"),
        (["--rules", ""], "unknown preset"),
        (["--rules", "iq-2v2", "--set", "hand_sise=3"], "hand_sise: unknown knob"),
        (
            ["--rules", "iq-2v2", "--set", "target=-5"],
            "target: expected an integer of at least 1, got -5",
        ),
        (
            ["--rules", "iq-2v2", "--set", "stock=maybe"],
            "stock: expected one of sleeping, draw, got 'maybe'",
        ),
        (["--rules", "iq-2v2", "--set", "target"], "expected knob=value"),
        (["--rules", "iq-2v2", "--set", "seats=3"], "sides: 'teams' needs 4 seats"),
        (["--rules", "iq-2v2", "--bots", "random,random"], "4 seats, got 2 bots"),
        (["--rules", "cutthroat", "--bots", "random,random,random,random"], "3 seats, got 4"),
        (["--rules", "iq-2v2", "--bots", "grandmaster"], "unknown bot 'grandmaster'"),
        (["--rules", "iq-1v1", "--bots", "random,nobody"], "unknown bot 'nobody'"),
        (["--rules", "iq-1v1", "--human", "2"], "--human '2': iq-1v1 has 2 seats: seat"),
        (["--rules", "iq-2v2", "--human", "0,x"], "--human '0,x': expected seat numbers"),
        (["--rules", "iq-2v2", "--human", "0,0"], "--human '0,0': a seat is given twice"),
        (["--rules", "iq-1v1", "--human", "0", "--bots", "random"], "CPUs play easy, medium"),
        (["--rules", "iq-1v1", "--human", "0", "--quiet"], "--quiet goes without --human"),
    ],
)
def test_bad_play_input(args: list[str], message: str) -> None:
    result = run("play", *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    line = one_error_line(result.stderr)
    assert message in line
    no_traceback(result.output)


KNOWN_BOTS = "random, easy, medium, hard"
KNOWN_CPUS = "easy, medium, hard"


@pytest.mark.parametrize(
    ("args", "known"),
    [
        (["play", "--rules", "block", "--bots", "mediun"], KNOWN_BOTS),
        (["play", "--rules", "iq-1v1", "--human", "0", "--bots", "mediun"], KNOWN_CPUS),
        (["experiment", "measure", "--rules", "block", "--bots", "mediun"], KNOWN_BOTS),
        (
            ["experiment", "ab", "--base", "block", "--skill", "--skill-bots", "hard vs mediun"],
            KNOWN_BOTS,
        ),  # fmt: skip
        (
            [
                "arena",
                "sprt",
                "--base",
                "mediun",
                "--candidate",
                "hard",
                "--rules",
                "iq-1v1",
                "--out",
                "never",
            ],
            KNOWN_BOTS,
        ),  # fmt: skip
        (["bot", "builtin", "mediun"], KNOWN_BOTS),
        (
            ["match", "create", "--rules", "block", "--seats", "cpu:mediun,open,open,open"],
            KNOWN_CPUS,
        ),  # fmt: skip
        (["bench", "bots", "--pairs", "hard:mediun"], KNOWN_BOTS),
    ],
)
def test_an_unknown_bot_name_lists_the_known_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], known: str
) -> None:
    """Wherever a command takes a bot's or a CPU level's name, a name it does not know is
    one line that names the close one and lists them all, and nothing starts."""
    monkeypatch.chdir(tmp_path)
    result = run(*args)
    assert result.exit_code == 2, result.output
    line = one_error_line(result.stderr)
    assert "'mediun' (did you mean 'medium'?)" in line and known in line, line
    assert list(tmp_path.iterdir()) == []
    no_traceback(result.output)


def test_a_tournament_file_with_an_unknown_bot_lists_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(
        'preset = "block"\n[bots]\na = "builtin:random"\nb = "builtin:mediun"\n'
    )
    result = run("arena", "run", str(tmp_path / "t.toml"), "--out", str(tmp_path / "out"))
    line = one_error_line(result.stderr)
    assert "bots.b: unknown built-in bot 'mediun' (did you mean 'medium'?)" in line
    assert KNOWN_BOTS in line and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--rules", "iq-2v2", "--seed", "-1"],
        ["--rules", "iq-2v2", "--seed", "many"],
        ["--seed", "3"],  # no --rules
        ["--rules", "iq-2v2", "--replay", "."],  # a directory
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run("play", *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("capicua: error: "), result.stderr
    assert lines[0].endswith("(see 'capicua play --help')")
    no_traceback(result.output)


def test_negative_seed_as_a_real_program() -> None:
    done = program("play", "--rules", "iq-2v2", "--seed", "-1")
    assert done.returncode == 2
    assert "--seed" in done.stderr
    no_traceback(done.stdout, done.stderr)


def test_an_unwritable_replay_path(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "m.json"
    # not --quiet: its progress lines would come first (the match is played, then written)
    result = run("play", "--rules", "iq-1v1", "--seed", "1", "--replay", str(path))
    assert result.exit_code == 2
    line = one_error_line(result.stderr)
    assert f"replay {path}: cannot write" in line
    no_traceback(result.output)


# -- progress of --quiet off a terminal -----------------------------------------------------


def test_quiet_off_a_terminal_prints_a_line_per_finished_hand_on_stderr() -> None:
    quiet = program("play", "--rules", "dominican", "--seed", "5", "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    full = program("play", "--rules", "dominican", "--seed", "5")
    assert full.stderr == ""  # without --quiet the log itself is the progress
    lines = full.stdout.splitlines()
    assert quiet.stdout.splitlines() == [lines[-1]]  # the result alone, as before
    # each hand's line is that hand's result line of the full log
    ends = [line.removeprefix("  => ") for line in lines if line.startswith("  => ")]
    assert len(ends) == sum(line.startswith("Hand ") for line in lines) > 1
    assert quiet.stderr.splitlines() == [f"hand {i}: {end}" for i, end in enumerate(ends, 1)]


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_quiet_on_a_terminal_stays_quiet() -> None:
    import pty

    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    try:
        done = subprocess.run(
            [str(PROGRAM), "play", "--rules", "dominican", "--seed", "5", "--quiet"],
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        os.close(terminal)
        terminal = -1
        written = b""
        while True:  # what reached the terminal (EIO once it is closed and drained)
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            written += chunk
    finally:
        if terminal != -1:
            os.close(terminal)
        os.close(controller)
    assert done.returncode == 0
    assert done.stdout.startswith("Result: team 1+3 wins")
    assert written == b""
