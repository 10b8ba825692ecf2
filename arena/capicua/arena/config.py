"""Tournament files: TOML in, a validated :class:`Tournament` out.

.. code-block:: toml

    name = "club night"
    preset = "block"              # any preset of `capicua rules list`
    overrides = ["target=50"]     # knob=value, as `--set` takes them
    format = "round-robin"        # or "gauntlet" (then `candidate = "NAME"`)
    games = 4                     # duplicate sets per pairing (a new deal seed each)
    on_timeout = "forfeit"        # or "auto-play"
    max_crashes = 3               # crashes before a bot is disqualified

    [matches]                     # what every study's matches share (Matches)
    seed = 1                      # first deal seed: the same file plays the same deals
    concurrency = 4               # matches in flight
    time_limit_ms = 2000          # per decision
    # server = "127.0.0.1:50051"  # omit: an embedded server on a free loopback port

    [bots]
    hard = "builtin:hard"
    mine = "python:my_bots:Greedy"
    node = "cmd:node clients/node/examples/random_bot.js"
    perl = "stdio:perl clients/stdio/random_bot.pl"
    friend = "remote:friend-bot"
    quick = { spec = "builtin:hard", options = { iterations = 50 } }

    [bots.deep]                   # the table form: a spec, a directory, options
    spec = "python:greedy:Greedy"
    dir = "bots/deep"             # relative to this file; the bot runs (and imports) there
    options = { depth = 3 }       # keyword arguments of Greedy(...)

Commands (``cmd:``, ``stdio:``) are split like a shell would (no shell runs them) and run
in the bot's ``dir``, by default the tournament file's directory. ``options`` go to a
``builtin:`` bot's factory (checked here) and to a ``python:`` bot's constructor as keyword
arguments (checked when its process starts: the arena's one-hand check before the first
match); ``cmd:`` and ``stdio:`` bots take their arguments in the command, and ``remote:``
bots run elsewhere, so they take neither ``dir`` nor ``options``. ``concurrency`` and
``server`` do not change results, so they may differ when a tournament is resumed;
everything else is part of the digest that a resumed run must match. The file is checked
by a declared schema (:class:`TournamentFile`, :mod:`capicua.common.schema`); files written
before ``[matches]`` have its keys at the top level, still read there.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import keyword
import math
import re
import shlex
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import Field, model_validator
from pydantic.config import JsonDict

from capicua.bots import LEVELS
from capicua.common.errors import CapicuaError, unknown_name
from capicua.common.schema import ConfigModel, integer, one_of, parse, refuse, table, text, texts
from capicua.engine.rules import Ruleset, load_preset

FORMATS = ("round-robin", "gauntlet")
BOT_KINDS = ("builtin", "python", "cmd", "stdio", "remote", "openspiel", "dominoes")


@dataclass(frozen=True)
class LibraryBots:
    """``KIND:NAME`` bots: another library's players run as capicua bots (``capicua bot run
    CLASS``), each deciding from the seat's view alone."""

    what: str  # for messages: "unknown {what} bot ..."
    library: str  # "... bots need {library}: pip install 'capicua[{extra}]'"
    module: str  # importable when the library is installed
    extra: str
    classes: Mapping[str, str]  # NAME -> MODULE:CLASS
    #: MODULE:FUNCTION that raises ValueError with one line for a ruleset its bots cannot
    #: play (None: they play every ruleset)
    rules_check: str | None = None
    #: the library's players that are not offered, and why
    withheld: Mapping[str, str] = field(default_factory=dict)


#: ``openspiel:NAME``: OpenSpiel's algorithms (pip install 'capicua[openspiel]');
#: ``dominoes:NAME``: the PyPI dominoes package's players (pip install 'capicua[bench]'),
#: which play block-like hands only.
LIBRARY_BOTS = {
    "openspiel": LibraryBots(
        "OpenSpiel", "OpenSpiel", "pyspiel", "openspiel",
        {"ismcts": "capicua.integrations.openspiel:ISMCTS",
         "mcts": "capicua.integrations.openspiel:MCTS"},
    ),
    "dominoes": LibraryBots(
        "dominoes", "the dominoes package", "dominoes", "bench",
        {"probabilistic_alphabeta": "capicua.integrations.dominoes_package:ProbabilisticAlphabeta",
         "bota_gorda": "capicua.integrations.dominoes_package:BotaGorda"},
        "capicua.integrations.dominoes_package:refuse_rules",
        {"omniscient": "it searches every seat's tiles, which a capicua bot never sees"},
    ),
}  # fmt: skip
TIMEOUT_POLICIES = ("forfeit", "auto-play")
BUILTIN_NAMES = LEVELS
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,48}$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")

#: The per-decision time limits the server accepts (capicua.server.lobby's turn timer;
#: tests/test_arena_run.py checks they agree), checked here so a tournament the server
#: would refuse is refused before anything starts.
MIN_TIME_LIMIT_MS = 50
MAX_TIME_LIMIT_MS = 3_600_000

# knobs that never change results (excluded from the digest)
_RUNTIME_ONLY = ("concurrency", "server")

E = TypeVar("E", bound=CapicuaError)  # a config family's error
T = TypeVar("T")


class TournamentError(CapicuaError):
    """A tournament file that cannot be run; the message names the key."""


#: The keys of a bot's table (``[bots.NAME]``).
BOT_KEYS = ("spec", "dir", "options")


@dataclass(frozen=True)
class BotSpec:
    """One entry of ``[bots]``: ``name = "kind:target"``, or a table with ``spec``, ``dir``
    (relative to the tournament file's directory, as written) and ``options``."""

    name: str
    kind: str
    target: str
    dir: str | None = None
    # a dict is unhashable: leave it out of the hash (BotSpecs are compared, not hashed)
    options: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.target}"

    @property
    def label(self) -> str:
        """The spec with its options and directory, for people (standings, report)."""
        text = self.spec
        if self.options:
            text += f" {toml_literal(self.options)}"
        if self.dir is not None:
            text += f" in {self.dir}"
        return text

    def canonical(self) -> str | dict[str, Any]:
        """Its part of the digest. A plain spec stays a string, so a tournament without
        options or directories keeps the digest it always had (its results still resume).
        ``dir`` is in: a different directory may hold different code."""
        if not self.options and self.dir is None:
            return self.spec
        out: dict[str, Any] = {"spec": self.spec}
        if self.dir is not None:
            out["dir"] = self.dir
        if self.options:
            out["options"] = self.options
        return out

    def workdir(self, base_dir: Path) -> Path:
        """Where its process runs: its ``dir`` under ``base_dir``, else ``base_dir``."""
        return base_dir / self.dir if self.dir is not None else base_dir

    def option_args(self) -> list[str]:
        """``--option KEY=VALUE`` for each option, as ``capicua bot builtin/run`` take them
        (VALUE a TOML literal, which :func:`capicua.engine.rules.parse_assignment` reads
        back to the same value)."""
        out: list[str] = []
        for key, value in self.options.items():
            out += ["--option", f"{key}={toml_literal(value)}"]
        return out

    @classmethod
    def parse(cls, name: str, text: str, where: str | None = None) -> BotSpec:
        """A bot from its ``kind:target`` string; errors name ``where`` (``bots.NAME``)."""
        _check_name(name)
        kind, target = _parse_target(where or f"bots.{name}", text)
        return cls(name, kind, target)

    @classmethod
    def from_toml(cls, name: str, value: Any, base_dir: Path) -> BotSpec:
        """A bot from its ``[bots]`` entry: a string or a table (``dir`` checked under
        ``base_dir``, ``options`` of a built-in bot checked by building it once)."""
        where = f"bots.{name}"
        if isinstance(value, str):
            return cls.parse(name, value)
        if not isinstance(value, dict):
            raise TournamentError(
                f'{where}: expected a string like "builtin:hard" or a table with '
                f"{', '.join(BOT_KEYS)}, got {value!r}"
            )
        unknown = sorted(set(value) - set(BOT_KEYS))
        if unknown:
            raise TournamentError(
                f"{where}: unknown key {', '.join(map(repr, unknown))}; a bot's table takes "
                f"{', '.join(BOT_KEYS)}"
            )
        text = value.get("spec")
        if not isinstance(text, str):
            raise TournamentError(
                f'{where}.spec: expected a string like "python:my_bots:Greedy", got {text!r}'
            )
        bot = cls.parse(name, text, f"{where}.spec")
        bot_dir = _bot_dir(where, bot.kind, value.get("dir"), base_dir)
        options = _bot_options(where, bot, value.get("options"))
        return cls(name, bot.kind, bot.target, bot_dir, options)

    def argv(self) -> list[str]:
        """The command of a ``cmd:`` or ``stdio:`` bot."""
        return shlex.split(self.target)


def _check_name(name: str) -> None:
    where = f"bots.{name}"
    if not _NAME.match(name):
        raise TournamentError(f"{where}: a bot name is 1-48 characters of [A-Za-z0-9_.-]")
    if name == "server":  # logs/server.log is the embedded server's
        raise TournamentError(f"{where}: the name 'server' is reserved; choose another")


def bot_from_text(name: str, text: str, where: str) -> BotSpec:
    """A bot given on a command line: a built-in bot's name (``hard``) or an arena spec
    (``python:mybot:Mine``...); errors begin with ``where`` (the option)."""
    text = text.strip()
    if text.lower() in BUILTIN_NAMES:
        text = f"builtin:{text.lower()}"
    elif ":" not in text:  # a name, not a spec: say which names there are
        raise TournamentError(
            f"{where}: {unknown_name('bot', text, LEVELS)}; or an arena spec KIND:TARGET with KIND "
            f"one of {', '.join(BOT_KINDS)}"
        )
    return BotSpec.parse(name, text, where)


def _parse_target(where: str, text: str) -> tuple[str, str]:
    kind, sep, target = text.partition(":")
    if not sep or kind not in BOT_KINDS:
        raise TournamentError(
            f"{where}: {text!r} is not KIND:TARGET with KIND one of {', '.join(BOT_KINDS)} "
            f"(a built-in bot: builtin:NAME, NAME one of {', '.join(BUILTIN_NAMES)})"
        )
    target = target.strip()
    if not target:
        raise TournamentError(f"{where}: {kind}: needs a target after the colon")
    if kind == "builtin" and target not in BUILTIN_NAMES:
        raise TournamentError(f"{where}: {unknown_name('built-in bot', target, LEVELS)}")
    if kind == "python" and target.count(":") != 1:
        raise TournamentError(f"{where}: python: takes MODULE:CLASS, got {target!r}")
    if kind in LIBRARY_BOTS:
        lib = LIBRARY_BOTS[kind]
        if target in lib.withheld:
            why = lib.withheld[target]
            raise TournamentError(f"{where}: {kind}:{target} is not offered: {why}")
        if target not in lib.classes:
            known = tuple(lib.classes)
            raise TournamentError(f"{where}: {unknown_name(f'{lib.what} bot', target, known)}")
        if importlib.util.find_spec(lib.module) is None:
            raise TournamentError(
                f"{where}: {kind}: bots need {lib.library}: pip install 'capicua[{lib.extra}]'"
            )
    if kind in ("cmd", "stdio"):
        try:
            argv = shlex.split(target)
        except ValueError as e:
            raise TournamentError(f"{where}: cannot split the command: {e}") from None
        if not argv:
            raise TournamentError(f"{where}: empty command")
    return kind, target


def _bot_dir(where: str, kind: str, value: Any, base_dir: Path) -> str | None:
    """A bot's ``dir`` as written (normalised, for the digest), checked to exist now so a
    typo is one line and not a bot that cannot start."""
    if value is None:
        return None
    if kind == "remote":
        raise TournamentError(f"{where}.dir: a remote: bot runs elsewhere; it takes no dir")
    if not isinstance(value, str) or not value.strip():
        raise TournamentError(f"{where}.dir: expected a directory name, got {value!r}")
    path = Path(value)
    if not (base_dir / path).is_dir():
        raise TournamentError(
            f"{where}.dir: no directory {value!r} (relative to the tournament file's "
            f"directory, {base_dir})"
        )
    return path.as_posix()


def _bot_options(where: str, bot: BotSpec, value: Any) -> dict[str, Any]:
    """A bot's ``options``: a table of keyword arguments, only for the kinds they reach."""
    where = f"{where}.options"
    if value is None:
        return {}
    if bot.kind in ("cmd", "stdio"):
        raise TournamentError(
            f"{where}: a {bot.kind}: bot takes no options; put its arguments in the command"
        )
    if bot.kind == "remote":
        raise TournamentError(f"{where}: a remote: bot runs elsewhere; it takes no options")
    if not isinstance(value, dict):
        raise TournamentError(f"{where}: expected a table, e.g. {{ depth = 3 }}, got {value!r}")
    for key, item in value.items():
        # they become keyword arguments, on the command line as KEY=VALUE
        if not key.isidentifier() or keyword.iskeyword(key):
            raise TournamentError(f"{where}.{key}: an option's name must be a Python identifier")
        if not _plain(item):
            raise TournamentError(
                f"{where}.{key}: expected a string, number, boolean, array or table (not a "
                f"date or time), got {item!r}"
            )
    if bot.kind == "builtin":
        _check_builtin(where, bot.target, value)
    if bot.kind in LIBRARY_BOTS:
        try:
            check_library_options(bot, value)
        except (TypeError, ValueError) as e:
            raise TournamentError(f"{where}: {bot.spec} refuses them: {e}") from None
    return dict(value)


def _check_builtin(where: str, target: str, options: dict[str, Any]) -> None:
    """Check the built-in bot's options, so a wrong one fails at load time, named."""
    from capicua.bots import check_options  # the engine's bots: only when a file has options

    try:
        check_options(target, options)
    except (TypeError, ValueError) as e:
        raise TournamentError(f"{where}: builtin:{target} refuses them: {e}") from None


def _library_object(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def check_library_options(bot: BotSpec, options: Mapping[str, Any]) -> None:
    """Build the library bot ``bot`` (an ``openspiel:`` or ``dominoes:`` one) once with
    ``options``, so a wrong one fails before anything is played (TypeError or ValueError,
    as its class raises it)."""
    _library_object(LIBRARY_BOTS[bot.kind].classes[bot.target])(**options)


def check_library_rules(bots: Sequence[BotSpec], rules: Ruleset) -> None:
    """Refuse, with the bot's own one line, rules one of ``bots`` cannot play (a library's
    bots that play some rulesets only): ValueError, before anything is played."""
    for bot in bots:
        lib = LIBRARY_BOTS.get(bot.kind)
        if lib is not None and lib.rules_check is not None:
            _library_object(lib.rules_check)(rules)


def _plain(value: Any) -> bool:
    """Whether ``value`` is a TOML value but a date or time: JSON (hence the digest) has
    no dates, and an option must cross the command line as a TOML literal."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, str | int | float)  # bool is an int


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else toml_literal(key)


def toml_literal(value: Any) -> str:
    """``value`` (a TOML value without dates) written as a TOML literal, on one line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # JSON's escapes are TOML's; DEL must be escaped in TOML but not in JSON
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(str(k))} = {toml_literal(v)}" for k, v in value.items())
        return f"{{ {items} }}" if items else "{}"
    raise TypeError(f"not a TOML value: {value!r}")


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
            "bots": {b.name: b.canonical() for b in self.bots},
        }

    def digest(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def bot(self, name: str) -> BotSpec:
        for b in self.bots:
            if b.name == name:
                return b
        raise KeyError(name)


#: What an editor is told a ``[bots]`` entry may be (the arena checks it, naming the key).
BOT_JSON: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": f"^({'|'.join(BOT_KINDS)}):"},
        {
            "type": "object",
            "properties": {
                "spec": {"type": "string", "pattern": f"^({'|'.join(BOT_KINDS)}):"},
                "dir": {"type": "string"},
                "options": {"type": "object"},
            },
            "required": ["spec"],
            "additionalProperties": False,
        },
    ]
}

#: The bounds of ``[matches]``' integers, which the command-line options that set them share
#: (and of an experiment's processes).
SEEDS = (0, 2**63 - 1)
CONCURRENCY = (1, 4096)
TIME_LIMITS = (MIN_TIME_LIMIT_MS, MAX_TIME_LIMIT_MS)
WORKERS = (1, 256)

Seed = Annotated[int, integer(*SEEDS)]
Concurrency = Annotated[int, integer(*CONCURRENCY)]
TimeLimitMs = Annotated[int, integer(*TIME_LIMITS)]
Server = Annotated[str, text("HOST:PORT")]


class Matches(ConfigModel):
    """``[matches]``: how every match of a study is played, whatever the study (a
    tournament, an experiment; an SPRT takes the same as options). A key left out takes
    the study's default."""

    seed: Seed | None = Field(
        default=None, description="the first deal seed: the same file plays the same deals"
    )
    concurrency: Concurrency | None = Field(
        default=None, description="matches in flight (over the protocol)"
    )
    time_limit_ms: TimeLimitMs | None = Field(
        default=None, description="per decision (the server's turn timer)"
    )
    server: Server | None = Field(
        default=None, description="HOST:PORT of a server; omit: an embedded one"
    )


_MOVED: JsonDict = {
    "deprecated": True,
    "description": "read for files written before [matches]: write it there",
}


def check_matches(error: type[CapicuaError], **settings: Any) -> Matches:
    """The match settings of a study given on a command line or in code, checked by the
    ``[matches]`` table's declaration (errors name the key, as in a file)."""
    return parse(Matches, {k: v for k, v in settings.items() if v is not None}, error)


class StudyFile(ConfigModel):
    """A study's file: its ``[matches]``, and the same keys at the top as files written
    before ``[matches]`` have them (still read; given in both places, refused)."""

    matches: Matches = Matches()
    seed: Seed | None = Field(default=None, json_schema_extra=_MOVED)
    concurrency: Concurrency | None = Field(default=None, json_schema_extra=_MOVED)
    time_limit_ms: TimeLimitMs | None = Field(default=None, json_schema_extra=_MOVED)
    server: Server | None = Field(default=None, json_schema_extra=_MOVED)

    @model_validator(mode="after")
    def _into_matches(self) -> StudyFile:
        """The old top-level keys moved into ``matches``."""
        moved: dict[str, Any] = {}
        for key in Matches.model_fields:
            value = getattr(self, key)
            if value is None:
                continue
            if getattr(self.matches, key) is not None:
                refuse(f"{key}: given at the top and as matches.{key}; keep matches.{key}")
            moved[key] = value
        if not moved:
            return self
        return self.model_copy(update={"matches": self.matches.model_copy(update=moved)})

    def setting(self, key: str, default: Any) -> Any:
        """``[matches]``'s ``key``, or ``default`` when the file leaves it out."""
        value = getattr(self.matches, key)
        return default if value is None else value


class PlayFile(StudyFile):
    """What a tournament file and a ladder file share: the rules, the time control and the
    crash policy of matches between bots (a ladder is a tournament without an end)."""

    name: Annotated[str, text()] = Field(default="tournament", description="for people")
    preset: Annotated[str, text('a preset name, e.g. "block"')] = Field(
        description="any preset of `capicua rules list`"
    )
    overrides: Annotated[tuple[str, ...], texts('"target=50"')] = Field(
        default=(), description="knob=value, as --set takes them"
    )
    on_timeout: Annotated[str, one_of(TIMEOUT_POLICIES)] = "forfeit"
    max_crashes: Annotated[int, integer(1, 1_000_000)] = Field(
        default=3, description="process failures before a bot is disqualified"
    )


class TournamentFile(PlayFile):
    """A tournament file as written (:func:`tournament_from_mapping` makes it a
    :class:`Tournament`)."""

    format: Annotated[str, one_of(FORMATS)] = "round-robin"
    candidate: Annotated[str, text("a bot name")] | None = Field(
        default=None, description="a gauntlet's bot, one of [bots]"
    )
    games: Annotated[int, integer(1, 1_000_000)] = Field(
        default=1, description="duplicate sets per pairing"
    )
    bots: Annotated[
        dict[str, Any], table('a [bots] table, e.g. hard = "builtin:hard"', BOT_JSON)
    ] = {}


def tournament_from_mapping(data: dict[str, Any], base_dir: Path) -> Tournament:
    """Validate a parsed tournament file; every error names its key."""
    file = parse(TournamentFile, data, TournamentError)
    ruleset = study_rules(file.preset, file.overrides, "", TournamentError)
    if not file.bots:
        raise TournamentError('bots: missing; add a [bots] table, e.g. hard = "builtin:hard"')
    bots = [BotSpec.from_toml(name, value, base_dir) for name, value in file.bots.items()]
    if len(bots) < 2:
        raise TournamentError("bots: a tournament needs at least 2 bots")
    _check_candidate(file)
    try:
        check_library_rules(bots, ruleset)
    except ValueError as e:
        raise TournamentError(f"preset: {e}") from None
    return Tournament(
        name=file.name or "tournament",  # as an empty name always read (its digest)
        preset=file.preset,
        overrides=file.overrides,
        ruleset=ruleset,
        format=file.format,
        candidate=file.candidate,
        games=file.games,
        seed=file.setting("seed", 1),
        concurrency=file.setting("concurrency", 2),
        time_limit_ms=file.setting("time_limit_ms", 5000),
        on_timeout=file.on_timeout,
        max_crashes=file.max_crashes,
        server=file.setting("server", None),
        bots=tuple(bots),
        base_dir=base_dir,
    )


def study_rules(
    preset: str, overrides: Sequence[str], where: str, error: type[CapicuaError]
) -> Ruleset:
    """The rules of a study file's ``preset`` and ``overrides`` (in the table ``where``;
    "": the top level). An error names the key at fault: ``preset``, or the first override
    after which the rules refuse the ruleset, ``overrides[i]``."""
    at = f"{where}." if where else ""
    try:
        rules = load_preset(preset)
    except CapicuaError as e:
        raise error(f"{at}preset: {e}") from None
    try:
        return rules.with_overrides(overrides)
    except CapicuaError as e:
        raise error(f"{at}overrides[{_first_refused(rules, overrides)}]: {e}") from None


def _first_refused(rules: Ruleset, overrides: Sequence[str]) -> int:
    """The index of the first of ``overrides`` after which ``rules`` refuse them all."""
    for i in range(1, len(overrides) + 1):
        try:
            rules.with_overrides(overrides[:i])
        except CapicuaError:
            return i - 1
    return len(overrides) - 1


def _check_candidate(file: TournamentFile) -> None:
    if file.format == "gauntlet":
        if file.candidate is None:
            raise TournamentError('candidate: a gauntlet needs candidate = "BOT NAME"')
        if file.candidate not in file.bots:
            raise TournamentError(f"candidate: {file.candidate!r} is not one of the [bots]")
    elif file.candidate is not None:
        raise TournamentError('candidate: only for format = "gauntlet"')


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


def load_file(path: Path, error: type[E], build: Callable[[dict[str, Any], Path], T]) -> T:
    """Read the TOML file ``path`` and build what it declares with ``build(table, its
    folder)``: any ``error`` comes out as one line starting with the file's path."""
    data = read_toml(path, error)
    try:
        return build(data, path.resolve().parent)
    except error as e:
        raise error(f"{path}: {e}") from None


def load_tournament(path: Path) -> Tournament:
    """Read and validate a tournament file."""
    return load_file(path, TournamentError, tournament_from_mapping)
