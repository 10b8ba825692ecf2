"""What the lobby checks before a match is made or a seat is taken.

A CreateMatch names its seats and settings, each checked here with an error naming the
field (``seats[2].bot_id: ...``); reserving a bot's seat, or choosing the seed of a match
one of its seats is reserved for, takes that bot's consent; and unfinished matches are
limited per server, per creator (a bot, or an address group without a token), per
address group in all and per bot. JoinMatch checks the bot's limit too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from capicua.common.tokens import Kind
from capicua.engine.rules import Ruleset
from capicua.server import errors
from capicua.server.addresses import shown
from capicua.server.auth import Principal
from capicua.server.matches import Registry
from capicua.server.play import Bots
from capicua.server.seats import Seat
from capicua.server.settings import SettingsError, names, settled
from capicua.v1 import match_pb2

_SEAT_KINDS = (match_pb2.SEAT_KIND_OPEN, match_pb2.SEAT_KIND_BOT, match_pb2.SEAT_KIND_CPU)
_LEVELS = tuple(match_pb2.CpuLevel.values())


class Admission:
    """The lobby's checks of what a CreateMatch or JoinMatch asks for (see the module doc)."""

    def __init__(
        self,
        *,
        bots: Bots,
        registry: Registry,
        default_timer_ms: int,
        max_matches: int,
        max_matches_per_bot: int,
        max_matches_per_creator: int,
        max_matches_per_address: int,
        max_matches_from_address: int,
    ) -> None:
        self.bots = bots
        self.registry = registry
        self.default_timer_ms = default_timer_ms
        self.max_matches = max_matches
        self.max_matches_per_bot = max_matches_per_bot
        self.max_matches_per_creator = max_matches_per_creator  # with a bot token
        self.max_matches_per_address = max_matches_per_address  # without a token, per group
        self.max_matches_from_address = max_matches_from_address  # and its bots' too

    def seats(self, specs: Any, ruleset: Ruleset) -> list[Seat]:
        """The seats a CreateMatch asks for (all open when it names none), each checked."""
        n = ruleset.seats
        if not specs:
            specs = [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN)] * n
        if len(specs) != n:
            raise errors.invalid("seats", f"{ruleset.name} has {n} seats, got {len(specs)}")
        seats = []
        for i, spec in enumerate(specs):
            where = f"seats[{i}]"
            if spec.kind not in _SEAT_KINDS:
                raise errors.invalid(
                    f"{where}.kind", f"required: one of {names(match_pb2.SeatKind, _SEAT_KINDS)}"
                )
            if spec.cpu_level not in _LEVELS:
                raise errors.invalid(f"{where}.cpu_level", f"unknown level {spec.cpu_level}")
            seat = Seat(index=i, kind=spec.kind, cpu_level=spec.cpu_level)
            if spec.kind == match_pb2.SEAT_KIND_BOT:
                if not spec.bot_id:
                    raise errors.invalid(f"{where}.bot_id", "required for SEAT_KIND_BOT")
                if spec.bot_id not in self.bots:
                    raise errors.invalid(f"{where}.bot_id", f"no bot {spec.bot_id!r} is registered")
                seat.bot_id = spec.bot_id
            elif spec.bot_id:
                raise errors.invalid(f"{where}.bot_id", "only for SEAT_KIND_BOT")
            if spec.kind == match_pb2.SEAT_KIND_CPU and not spec.cpu_level:
                seat.cpu_level = match_pb2.CPU_LEVEL_EASY
            seats.append(seat)
        return seats

    def settings(self, given: match_pb2.MatchSettings) -> match_pb2.MatchSettings:
        """A CreateMatch's settings, checked, with the server's defaults filled in."""
        try:
            return settled(given, self.default_timer_ms)
        except SettingsError as e:
            raise errors.invalid(e.field, e.text) from None

    def check_consent(self, seats: Sequence[Seat], caller: Principal | None) -> None:
        """Reserving a bot's seat takes its consent: else anyone could fill a bot's match
        limit with matches that never start, and the bot could join nothing."""
        who = "a caller without a token" if caller is None else caller.name
        for seat in seats:
            if seat.kind != match_pb2.SEAT_KIND_BOT or self.bots.may_reserve(seat.bot_id, caller):
                continue
            field = f"seats[{seat.index}].bot_id"
            raise errors.denied(
                errors.NOT_RESERVABLE,
                f"{field}: bots/{seat.bot_id} does not let {who} reserve its seats; create "
                "the match with that bot's token or the admin token, or have the bot add "
                f"{'*' if caller is None else caller.name} to its reservable_by (SetBotAccess)",
                field=field,
                bot=f"bots/{seat.bot_id}",
            )

    def check_seed_consent(self, seats: Sequence[Seat], caller: Principal | None) -> None:
        """A chosen seed lets its chooser compute every deal, so each seat reserved for a
        bot must let the caller choose it (open seats agree when they join, CPUs need not)."""
        who = "a caller without a token" if caller is None else caller.name
        for seat in seats:
            if seat.kind != match_pb2.SEAT_KIND_BOT or self.bots.may_choose_seed(
                seat.bot_id, caller
            ):
                continue
            field = f"seats[{seat.index}].bot_id"
            raise errors.denied(
                errors.SEED_NOT_ALLOWED,
                f"seed: bots/{seat.bot_id} does not let {who} choose the seed of its matches "
                "(the seed tells every seat's tiles); leave the seed unset, create the match "
                "with that bot's token or the admin token, or have the bot accept chosen "
                "seeds (SetBotAccess accept_chosen_seeds)",
                field=field,
                bot=f"bots/{seat.bot_id}",
            )

    def check_limits(self, creator: str, caller: Principal | None, seats: Sequence[Seat]) -> None:
        """Room for one more unfinished match: on the server, for its creator (and the
        creator's address group) and for every bot it reserves a seat for."""
        if self.registry.active_count() >= self.max_matches:
            raise errors.exhausted(
                errors.TOO_MANY_MATCHES,
                f"the server holds {self.max_matches} unfinished matches; try later",
                limit=self.max_matches,
            )
        self._check_creator_limit(creator, caller)
        for bot_id in {s.bot_id for s in seats if s.kind == match_pb2.SEAT_KIND_BOT}:
            self.check_bot_limit(bot_id)

    def _check_creator_limit(self, creator: str, caller: Principal | None) -> None:
        """A bot creating matches, or callers without a token (by their address group), may
        hold only so many unfinished ones, and so may an address group in all (its
        anonymous callers and the bots registered from it); the admin only the server's
        limit."""
        if caller is not None and caller.kind is Kind.ADMIN:
            return
        limit, flag = (
            (self.max_matches_per_address, "--max-matches-per-address")
            if caller is None
            else (self.max_matches_per_creator, "--max-matches-per-creator")
        )
        held = self.registry.created_by(creator)
        if held >= limit:
            how = " without a token" if caller is None else ""
            raise errors.exhausted(
                errors.TOO_MANY_MATCHES,
                f"{shown(self.registry.groups.of(creator))} already created {held} unfinished "
                f"matches{how} (limit {limit}, {flag}); finish or cancel some first",
                limit=limit,
            )
        origin = self.registry.origin_of(creator)
        held = self.registry.created_from(origin) if origin else 0
        if held >= self.max_matches_from_address:
            raise errors.exhausted(
                errors.TOO_MANY_MATCHES,
                f"{shown(self.registry.groups.of(origin))} and the bots registered from it "
                f"already created {held} unfinished matches (limit "
                f"{self.max_matches_from_address}, --max-matches-from-address); finish or "
                "cancel some first",
                limit=self.max_matches_from_address,
            )

    def check_bot_limit(self, bot_id: str) -> None:
        """A bot plays so many unfinished matches at most (--max-matches-per-bot)."""
        held = self.registry.count_of(f"bots/{bot_id}")
        if held >= self.max_matches_per_bot:
            raise errors.exhausted(
                errors.TOO_MANY_MATCHES,
                f"bots/{bot_id} already plays {held} unfinished matches "
                f"(limit {self.max_matches_per_bot})",
                limit=self.max_matches_per_bot,
                bot=f"bots/{bot_id}",
            )
