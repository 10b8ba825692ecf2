"""Playing scheduled matches in-process, without a server.

Only ``builtin:`` bots can play this way. The arena's benchmark uses it as the baseline for
the cost of the server, and tests use it to build real results quickly. The replay is the
same record a server would produce for the same seed and decisions.
"""

from __future__ import annotations

from capicua.bots import make_bot
from capicua.bots.local import play_local
from capicua.engine.errors import CapicuaError
from capicua.engine.game import Game
from capicua.v1 import replay_pb2
from capicua.wire.codec import replay_to_proto

from .config import Tournament
from .schedule import MatchSpec, bot_seed


def play_in_process(
    tournament: Tournament, match: MatchSpec, game: Game | None = None, **options: object
) -> replay_pb2.Replay:
    """Play ``match`` between the tournament's built-in bots; ``options`` go to every
    ``hard`` (e.g. ``iterations=20`` for a fast, reproducible one), and a bot's own options
    from the tournament file go to it, over ``options``: they are the file's choice."""
    game = game or Game(tournament.ruleset)
    bots = []
    for seat, name in enumerate(match.seats):
        spec = tournament.bot(name)
        if spec.kind != "builtin":
            raise CapicuaError(f"bots.{name}: only builtin: bots can play in-process")
        opts = (options if spec.target == "hard" else {}) | spec.options
        bots.append(make_bot(spec.target, bot_seed(match.seed, seat), **opts))
    state = play_local(game, match.seed, bots)
    return replay_to_proto(
        state.replay(list(match.seats), match_id=match.key, tags=[tournament.name])
    )
