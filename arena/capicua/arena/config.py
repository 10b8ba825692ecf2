"""Tournament files: TOML in, a validated :class:`Tournament` out.

.. code-block:: toml

    name = "club night"
    preset = "block"              # any preset of `capicua rules list`
    overrides = ["target=50"]     # knob=value, as `--set` takes them
    format = "round-robin"        # or "gauntlet" (then `candidate = "NAME"`)
    games = 4                     # duplicate sets per pairing (a new deal seed each)
    seed = 1                      # first deal seed: the same file plays the same deals
    concurrency = 4               # matches in flight
    time_limit_ms = 2000          # per decision
    on_timeout = "forfeit"        # or "auto-play"
    max_crashes = 3               # crashes before a bot is disqualified
    # server = "127.0.0.1:50051"  # omit: an embedded server on a free loopback port

    [bots]
    hard = "builtin:hard"
    mine = "python:my_bots:Greedy"
    node = "cmd:node clients/node/examples/random_bot.js"
    perl = "stdio:perl clients/stdio/random_bot.pl"
    friend = "remote:friend-bot"

Commands (``cmd:``, ``stdio:``) are split like a shell would (no shell runs them) and run
in the tournament file's directory. ``concurrency`` and ``server`` do not change results, so
they may differ when a tournament is resumed; everything else is part of the digest that a
resumed run must match.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capicua.engine.errors import CapicuaError
from capicua.engine.rules import Ruleset, load_preset

FORMATS = ("round-robin", "gauntlet")
BOT_KINDS = ("builtin", "python", "cmd", "stdio", "remote")
TIMEOUT_POLICIES = ("forfeit", "auto-play")
BUILTIN_NAMES = ("random", "easy", "medium", "hard")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,48}$")

#: The per-decision time limits the server accepts (capicua.server.lobby's turn timer;
#: tests/test_arena_run.py checks they agree), checked here so a tournament the server
#: would refuse is refused before anything starts.
MIN_TIME_LIMIT_MS = 50
MAX_TIME_LIMIT_MS = 3_600_000

# knobs that never change results (excluded from the digest)
_RUNTIME_ONLY = ("concurrency", "server")


class TournamentError(CapicuaError):
    """A tournament file that cannot be run; the message names the key."""


@dataclass(frozen=True)
class BotSpec:
    """One entry of ``[bots]``: ``name = "kind:target"``."""

    name: str
    kind: str
    target: str

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.target}"

    @classmethod
    def parse(cls, name: str, text: str) -> BotSpec:
        where = f"bots.{name}"
        if not _NAME.match(name):
            raise TournamentError(f"{where}: a bot name is 1-48 characters of [A-Za-z0-9_.-]")
        if name == "server":  # logs/server.log is the embedded server's
            raise TournamentError(f"{where}: the name 'server' is reserved; choose another")
        kind, sep, target = text.partition(":")
        if not sep or kind not in BOT_KINDS:
            raise TournamentError(
                f"{where}: {text!r} is not KIND:TARGET with KIND one of {', '.join(BOT_KINDS)}"
            )
        target = target.strip()
        if not target:
            raise TournamentError(f"{where}: {kind}: needs a target after the colon")
        if kind == "builtin" and target not in BUILTIN_NAMES:
            raise TournamentError(
                f"{where}: unknown built-in bot {target!r}; known: {', '.join(BUILTIN_NAMES)}"
            )
        if kind == "python" and target.count(":") != 1:
            raise TournamentError(f"{where}: python: takes MODULE:CLASS, got {target!r}")
        if kind in ("cmd", "stdio"):
            try:
                argv = shlex.split(target)
            except ValueError as e:
                raise TournamentError(f"{where}: cannot split the command: {e}") from None
            if not argv:
                raise TournamentError(f"{where}: empty command")
        return cls(name, kind, target)

    def argv(self) -> list[str]:
        """The command of a ``cmd:`` or ``stdio:`` bot."""
        return shlex.split(self.target)


@dataclass(frozen=True)
class Tournament:
    """A validated tournament file."""

    name: str
    preset: str
    overrides: tuple[str, ...]
    ruleset: Ruleset
    format: str
    candidate: str | None
    games: int
    seed: int
    concurrency: int
    time_limit_ms: int
    on_timeout: str
    max_crashes: int
    server: str | None
    bots: tuple[BotSpec, ...]
    base_dir: Path

    def canonical(self) -> dict[str, Any]:
        """Everything that changes results, as plain JSON values (stored with the results)."""
        return {
            "name": self.name,
            "preset": self.preset,
            "overrides": list(self.overrides),
            "format": self.format,
            "candidate": self.candidate,
            "games": self.games,
            "seed": self.seed,
            "time_limit_ms": self.time_limit_ms,
            "on_timeout": self.on_timeout,
            "max_crashes": self.max_crashes,
            "bots": {b.name: b.spec for b in self.bots},
        }

    def digest(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def bot(self, name: str) -> BotSpec:
        for b in self.bots:
            if b.name == name:
                return b
        raise KeyError(name)


_KEYS = {
    "name",
    "preset",
    "overrides",
    "format",
    "candidate",
    "games",
    "seed",
    "concurrency",
    "time_limit_ms",
    "on_timeout",
    "max_crashes",
    "server",
    "bots",
}


def _int(data: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise TournamentError(f"{key}: expected an integer from {low} to {high}, got {value!r}")
    return value


def _str(data: dict[str, Any], key: str, default: str | None) -> str | None:
    value = data.get(key, default)
    if value is not None and not isinstance(value, str):
        raise TournamentError(f"{key}: expected a string, got {value!r}")
    return value


def _choice(data: dict[str, Any], key: str, default: str, choices: tuple[str, ...]) -> str:
    value = _str(data, key, default)
    if value not in choices:
        raise TournamentError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def tournament_from_mapping(data: dict[str, Any], base_dir: Path) -> Tournament:
    """Validate a parsed tournament file; every error names its key."""
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise TournamentError(f"unknown key {unknown[0]!r}; known keys: {', '.join(sorted(_KEYS))}")
    name = _str(data, "name", "tournament") or "tournament"
    preset = _str(data, "preset", None)
    if preset is None:
        raise TournamentError('preset: missing (e.g. preset = "block")')
    overrides = data.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        raise TournamentError('overrides: expected a list of "knob=value" strings')
    try:
        ruleset = load_preset(preset, overrides)
    except CapicuaError as e:
        raise TournamentError(f"preset/overrides: {e}") from None
    fmt = _choice(data, "format", "round-robin", FORMATS)
    raw_bots = data.get("bots")
    if not isinstance(raw_bots, dict) or not raw_bots:
        raise TournamentError('bots: missing; add a [bots] table, e.g. hard = "builtin:hard"')
    bots = []
    for bot_name, text in raw_bots.items():
        if not isinstance(text, str):
            raise TournamentError(f'bots.{bot_name}: expected a string like "builtin:hard"')
        bots.append(BotSpec.parse(bot_name, text))
    if len(bots) < 2:
        raise TournamentError("bots: a tournament needs at least 2 bots")
    candidate = _str(data, "candidate", None)
    if fmt == "gauntlet":
        if candidate is None:
            raise TournamentError('candidate: a gauntlet needs candidate = "BOT NAME"')
        if candidate not in raw_bots:
            raise TournamentError(f"candidate: {candidate!r} is not one of the [bots]")
    elif candidate is not None:
        raise TournamentError('candidate: only for format = "gauntlet"')
    return Tournament(
        name=name,
        preset=preset,
        overrides=tuple(overrides),
        ruleset=ruleset,
        format=fmt,
        candidate=candidate,
        games=_int(data, "games", 1, 1, 1_000_000),
        seed=_int(data, "seed", 1, 0, 2**63 - 1),
        concurrency=_int(data, "concurrency", 2, 1, 4096),
        time_limit_ms=_int(data, "time_limit_ms", 5000, MIN_TIME_LIMIT_MS, MAX_TIME_LIMIT_MS),
        on_timeout=_choice(data, "on_timeout", "forfeit", TIMEOUT_POLICIES),
        max_crashes=_int(data, "max_crashes", 3, 1, 1_000_000),
        server=_str(data, "server", None),
        bots=tuple(bots),
        base_dir=base_dir,
    )


def read_toml(path: Path, error: type[CapicuaError]) -> dict[str, Any]:
    """A TOML file's table; an unreadable or invalid file raises ``error`` naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise error(f"{path}: {e.strerror or e}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{path}: not valid TOML: {e}") from None


def load_tournament(path: Path) -> Tournament:
    """Read and validate a tournament file."""
    data = read_toml(path, TournamentError)
    try:
        return tournament_from_mapping(data, path.resolve().parent)
    except TournamentError as e:
        raise TournamentError(f"{path}: {e}") from None
