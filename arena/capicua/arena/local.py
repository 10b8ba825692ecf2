"""Playing matches in-process, without a server.

Only built-in bots can play this way. :func:`play_spec` plays every such match: the arena's
benchmark and tests (:func:`play_in_process`), the in-process backend of every study
(:mod:`capicua.arena.inprocess`: an SPRT of built-in bots, an experiment's pairs) all call
it, so a match between the same bots from the same seed is the same match whoever plays it
(an experiment whose seats are all ``random`` asks for the engine's own random playout
instead: ``playout``). The replay is the same record a server would produce for the same
seed and decisions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from capicua.bots import check_options, make_bot
from capicua.bots.local import play_local
from capicua.common.errors import CapicuaError
from capicua.engine.game import Game, MatchState
from capicua.v1 import replay_pb2
from capicua.wire.codec import replay_to_proto

from .config import Tournament
from .schedule import MatchSpec, bot_seed

#: ``hard`` plays a fixed number of sampled worlds per decision in experiments and SPRTs,
#: so that the same deal gives the same game on any machine and at any load (a time budget
#: would not: an A/A run would show differences that are only the machine's noise).
# budget_ms 0: no time limit (0, not None, so that it can travel as an --option)
HARD_DEFAULTS: dict[str, Any] = {"budget_ms": 0, "iterations": 200}

#: A seat's built-in bot: its name (``random``, ``hard``...) and its factory options.
Player = tuple[str, Mapping[str, Any]]


def builtin_options(name: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """A built-in bot's options for reproducible play: ``hard`` at fixed iterations
    (:data:`HARD_DEFAULTS`) unless ``extra`` says otherwise."""
    return (dict(HARD_DEFAULTS) if name == "hard" else {}) | dict(extra)


def check_builtin_options(name: str, options: Mapping[str, Any]) -> None:
    """Check built-in bot ``name``'s ``options`` (with the reproducible defaults), so that
    a wrong option fails before anything is played: raises TypeError or ValueError naming
    it."""
    check_options(name, builtin_options(name, options))


def play_spec(
    game: Game, seed: int, players: Sequence[Player], *, playout: bool = False
) -> MatchState:
    """One match of ``game`` dealt from ``seed``, seat ``i`` played by ``players[i]``, a
    fresh bot seeded with ``bot_seed(seed, i)``; with ``playout``, seats all ``random`` are
    the engine's own random playout (uniform over the legal actions, one generator for the
    match seeded like seat 0's bot: thousands of hands a second)."""
    if playout and all(name == "random" for name, _ in players):
        state = game.new_match(seed)
        state.random_playout(random.Random(bot_seed(seed, 0)))
        return state
    bots = [make_bot(name, bot_seed(seed, s), **opts) for s, (name, opts) in enumerate(players)]
    return play_local(game, seed, bots)


def play_scheduled(
    game: Game, match: MatchSpec, players: Sequence[Player], tag: str
) -> replay_pb2.Replay:
    """A scheduled match played in-process (:func:`play_spec`), as the replay a server would
    record for it (tagged ``tag``, the tournament's name)."""
    return scheduled_replay(play_spec(game, match.seed, players), match, tag)


def scheduled_replay(state: MatchState, match: MatchSpec, tag: str) -> replay_pb2.Replay:
    """The replay of ``match`` played in-process, as a server records it."""
    return replay_to_proto(state.log.replay(list(match.seats), match_id=match.key, tags=[tag]))


def play_in_process(
    tournament: Tournament, match: MatchSpec, game: Game | None = None, **options: object
) -> replay_pb2.Replay:
    """Play ``match`` between the tournament's built-in bots; ``options`` go to every
    ``hard`` (e.g. ``iterations=20`` for a fast, reproducible one), and a bot's own options
    from the tournament file go to it, over ``options``: they are the file's choice."""
    players: list[Player] = []
    for name in match.seats:
        spec = tournament.bot(name)
        if spec.kind != "builtin":
            raise CapicuaError(f"bots.{name}: only builtin: bots can play in-process")
        players.append((spec.target, (options if spec.target == "hard" else {}) | spec.options))
    return play_scheduled(game or Game(tournament.ruleset), match, players, tournament.name)
