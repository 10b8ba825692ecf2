"""MatchService: rulesets, creating, listing, joining, starting, cancelling and watching.

Every refusal is an :class:`~capicua.server.errors.ApiError` whose message names the field
(``seats[2].bot_id: ...``), turned into a rich status by :func:`~capicua.server.errors.rpc`
on each handler; the tokens each RPC takes are declared in :mod:`~capicua.server.auth`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import structlog

from capicua.engine.rules import RulesError, Ruleset, UnknownPresetError, load_preset, preset_names
from capicua.server import auth, errors
from capicua.server.admission import Admission
from capicua.server.auth import Principal, Tokens
from capicua.server.fanout import Watcher
from capicua.server.faults import Faults
from capicua.server.matches import FINISHED, RUNNING, Match, Registry
from capicua.server.names import PLAYER_CHARS
from capicua.server.outbox import MAX_UNREAD_BYTES
from capicua.server.play import Bots, match_id_of
from capicua.server.request_ids import RequestIds
from capicua.server.store import DamagedRecord, Store
from capicua.v1 import match_pb2, match_pb2_grpc, play_pb2, replay_pb2
from capicua.wire import codec

log = structlog.get_logger("capicua.server.lobby")

DEFAULT_PAGE = 50
MAX_PAGE = 500


class Lobby(match_pb2_grpc.MatchServiceServicer):
    def __init__(
        self,
        *,
        tokens: Tokens,
        bots: Bots,
        registry: Registry,
        store: Store,
        default_timer_ms: int,
        max_matches: int,
        max_matches_per_bot: int,
        max_matches_per_creator: int,
        max_matches_per_address: int,
        max_matches_from_address: int = 1_000,
        max_unread_bytes: int = MAX_UNREAD_BYTES,
        faults: Faults | None = None,
    ) -> None:
        self.tokens = tokens
        self.faults = faults  # a test's bugs (capicua.server.faults); None in use
        self.registry = registry
        self.store = store
        self.admission = Admission(
            bots=bots,
            registry=registry,
            default_timer_ms=default_timer_ms,
            max_matches=max_matches,
            max_matches_per_bot=max_matches_per_bot,
            max_matches_per_creator=max_matches_per_creator,
            max_matches_per_address=max_matches_per_address,
            max_matches_from_address=max_matches_from_address,
        )
        self.max_unread_bytes = max_unread_bytes  # each spectator's bound
        self.closing = False
        self._rulesets: list[Any] | None = None
        self.request_ids = RequestIds()  # CreateMatch's request_id: retries

    def _check_open(self) -> None:
        if self.closing:
            raise errors.shutting_down()

    # -- rulesets -------------------------------------------------------------------------

    @errors.rpc
    async def ListRulesets(
        self, request: match_pb2.ListRulesetsRequest, context: Any
    ) -> match_pb2.ListRulesetsResponse:
        if self._rulesets is None:
            self._rulesets = [codec.ruleset_to_proto(load_preset(n)) for n in preset_names()]
        return match_pb2.ListRulesetsResponse(rulesets=self._rulesets)

    @errors.rpc
    async def GetRuleset(
        self, request: match_pb2.GetRulesetRequest, context: Any
    ) -> match_pb2.GetRulesetResponse:
        ruleset = _preset(request.preset, list(request.overrides))
        return match_pb2.GetRulesetResponse(ruleset=codec.ruleset_to_proto(ruleset))

    # -- matches --------------------------------------------------------------------------

    @errors.rpc
    async def CreateMatch(
        self, request: match_pb2.CreateMatchRequest, context: Any
    ) -> match_pb2.CreateMatchResponse:
        self._check_open()
        # A retry (same request_id, request and caller) is answered before anything counts
        # it: no second match, no limit. From here to remember(), nothing awaits.
        caller = auth.caller()
        attempt = self.request_ids.attempt(request, caller.name if caller else "")
        if attempt.earlier is not None:
            match_id = attempt.earlier.match.name.removeprefix("matches/")
            log.info("match_create_retried", match=match_id)
            if attempt.stored is not None:  # the first call is still writing it
                await asyncio.shield(attempt.stored)
            return attempt.earlier
        try:
            if request.preset:
                ruleset = _preset(request.preset, list(request.overrides))
            elif request.HasField("ruleset"):
                ruleset = _custom(request.ruleset, list(request.overrides))
            else:
                raise errors.invalid("preset", "required: a preset name, or a full ruleset")
            admission = self.admission
            seats = admission.seats(request.seats, ruleset)
            settings = admission.settings(request.settings)
            admission.check_consent(seats, caller)
            if request.HasField("seed"):
                admission.check_seed_consent(seats, caller)
            creator = auth.creator_of(caller, context.peer() or "")
            admission.check_limits(creator, caller, seats)
        except errors.ApiError as e:
            # A client that retries with request_ids tells its refused requests apart by
            # them (a well-formed one, as sent; a malformed one was refused above, unnamed).
            if attempt.request_id is not None:
                e.naming(request_id=request.request_id)
            raise
        match = self.registry.create(
            ruleset, seats, settings, request.seed if request.HasField("seed") else None, creator
        )
        host_token = self.tokens.issue(Principal.host(match.id))
        match.journal(auth.digest(host_token))
        match.log.info(
            "match_created", rules=ruleset.name, seats=[s.kind for s in seats], public=match.public
        )
        response = match_pb2.CreateMatchResponse(match=match.to_proto(), host_token=host_token)
        # Remembered now, before the await: a retry arriving meanwhile waits for the same
        # write instead of creating a second match.
        stored = self.store.sync()
        self.request_ids.remember(attempt, response, stored)
        try:
            await asyncio.shield(stored)  # on disk before the reply: a crash loses no match
        except Exception:  # never acknowledged: as if it had not been created
            self.request_ids.forget(attempt)
            self.registry.forget(match)
            self.tokens.revoke(Principal.host(match.id))
            raise
        return response

    @errors.rpc
    async def ListMatches(
        self, request: match_pb2.ListMatchesRequest, context: Any
    ) -> match_pb2.ListMatchesResponse:
        size = request.page_size or DEFAULT_PAGE
        if size < 0:
            raise errors.invalid("page_size", "must not be negative")
        size = min(size, MAX_PAGE)
        if request.state not in match_pb2.MatchState.values():
            raise errors.invalid("state", f"unknown state {request.state}")
        cursor = _cursor(request)
        state, tag = request.state, request.tag
        found: dict[str, tuple[int, match_pb2.Match]] = {}
        if state in (match_pb2.MATCH_STATE_UNSPECIFIED, FINISHED):
            for ns, stored in await self.store.list_matches(tag=tag, before=cursor, limit=size + 1):
                found[stored.name] = (ns, stored)
        for m in list(self.registry.matches.values()):
            if (
                not m.public
                or (state and m.status != state)
                or (tag and tag not in m.settings.tags)
            ):
                continue
            if cursor is not None and (m.create_ns, m.id) >= cursor:
                continue
            found[m.name] = (m.create_ns, m.to_proto())
        ordered = sorted(
            found.values(), key=lambda p: (p[0], p[1].name.removeprefix("matches/")), reverse=True
        )
        page = ordered[:size]
        response = match_pb2.ListMatchesResponse(matches=[m for _, m in page])
        if len(ordered) > size:
            ns, last = page[-1]
            response.next_page_token = _token(request, ns, last.name.removeprefix("matches/"))
        return response

    @errors.rpc
    async def GetMatch(
        self, request: match_pb2.GetMatchRequest, context: Any
    ) -> match_pb2.GetMatchResponse:
        match_id = match_id_of("name", request.name)
        live = self.registry.get(match_id)
        if live is not None:
            return match_pb2.GetMatchResponse(match=live.to_proto())
        stored = await self._stored_match(match_id)
        if stored is None:
            raise errors.not_found(
                errors.MATCH_NOT_FOUND, f"name: no match {request.name}", match=request.name
            )
        return match_pb2.GetMatchResponse(match=stored)

    async def _stored_match(self, match_id: str) -> match_pb2.Match | None:
        """The stored record of a finished match (None: none); INTERNAL when it is damaged
        (that one record is unreadable: every other call goes on)."""
        try:
            return await self.store.get_match(match_id)
        except DamagedRecord:
            log.error("record_unreadable", match=match_id)
            raise errors.internal(
                f"name: the stored record of matches/{match_id} is damaged; the server log "
                "has the details",
                match=f"matches/{match_id}",
            ) from None

    def _live(self, name: str) -> Match:
        match_id = match_id_of("name", name)
        match = self.registry.get(match_id)
        if match is None:
            raise errors.not_found(
                errors.MATCH_NOT_FOUND, f"name: no match {name} is open", match=name
            )
        return match

    @errors.rpc
    async def JoinMatch(
        self, request: match_pb2.JoinMatchRequest, context: Any
    ) -> match_pb2.JoinMatchResponse:
        self._check_open()
        principal = auth.caller()
        match = self._live(request.name)
        if len(request.display_name) > PLAYER_CHARS:
            raise errors.invalid(
                "display_name", f"at most {PLAYER_CHARS} characters", match=match.name
            )
        wanted = request.seat if request.HasField("seat") else None
        if principal is not None:
            if not any(s.principal == principal.name for s in match.seats):
                self.admission.check_bot_limit(principal.bot_id)
            seat = match.join(
                principal.name,
                bot_id=principal.bot_id,
                player=principal.bot_id,
                seat=wanted,
                accept_chosen_seed=request.accept_chosen_seed,
            )
            seat_token = ""
        else:
            seat = match.join(
                None,
                bot_id="",
                player=request.display_name,
                seat=wanted,
                accept_chosen_seed=request.accept_chosen_seed,
            )
            seat_token = self.tokens.issue(Principal.seat_of(match.id, seat.index))
            match.record.token(auth.digest(seat_token), seat.index)
        response = match_pb2.JoinMatchResponse(
            match=match.to_proto(), seat=seat.index, seat_token=seat_token
        )
        await self._stored(match, "the join")
        return response

    async def _stored(self, match: Match, what: str) -> None:
        """Wait until the journal holds what this call changed in ``match``: an OK reply
        promises that a crash loses none of it. A store that fails cancels the match (it
        could not survive a restart) and the call answers INTERNAL."""
        try:
            await self.store.sync()
        except Exception as e:
            match.log.error("journal_failed", what=what, exc_info=e)
            with contextlib.suppress(errors.ApiError):
                await match.cancel(f"the server could not store {what}")
            raise errors.internal(
                f"name: the server could not store {what} of {match.name}, and cancelled "
                "it; the server log has the details",
                match=match.name,
            ) from e

    def _host_check(self, match: Match) -> None:
        """The caller (its token is checked already) hosts ``match``, or is the admin."""
        principal = auth.required_caller()
        if not auth.hosts(principal, match.id):
            raise errors.denied(
                errors.NOT_HOST,
                f"authorization: not the host token of {match.name}",
                match=match.name,
            )

    @errors.rpc
    async def StartMatch(
        self, request: match_pb2.StartMatchRequest, context: Any
    ) -> match_pb2.StartMatchResponse:
        self._check_open()
        match = self._live(request.name)
        self._host_check(match)
        match.start()
        response = match_pb2.StartMatchResponse(match=match.to_proto())
        await self._stored(match, "the start")
        return response

    @errors.rpc
    async def CancelMatch(
        self, request: match_pb2.CancelMatchRequest, context: Any
    ) -> match_pb2.CancelMatchResponse:
        match = self._live(request.name)
        self._host_check(match)
        if len(request.reason) > 200:
            raise errors.invalid("reason", "at most 200 characters", match=match.name)
        await match.cancel(request.reason or "cancelled by the host")
        if not match.record.stored:  # logged (persist_failed); OK would promise a record
            raise errors.internal(
                f"name: {match.name} is cancelled, but the server could not store its "
                "record; the server log has the details",
                match=match.name,
            )
        return match_pb2.CancelMatchResponse(match=match.to_proto())

    @errors.rpc
    async def GetReplay(
        self, request: match_pb2.GetReplayRequest, context: Any
    ) -> match_pb2.GetReplayResponse:
        match_id = match_id_of("name", request.name)
        live = self.registry.get(match_id)
        if live is not None and live.status != FINISHED:
            raise errors.precondition(
                errors.MATCH_NOT_FINISHED, f"name: {request.name} is not over yet", match=live.name
            )
        replay = await self._replay(request.name, match_id, live)
        if replay is None:
            failure = (
                live.record.replay_error
                if live is not None
                else await self.store.get_replay_failure(match_id)
            )
            if failure is not None:
                raise errors.internal(
                    f"name: the replay of {request.name} could not be built "
                    f"({failure}); the server log has the details",
                    errors.REPLAY_FAILED,
                    match=request.name,
                )
            if live is not None or await self._stored_match(match_id) is not None:
                raise errors.not_found(
                    errors.REPLAY_NOT_FOUND,
                    f"name: {request.name} never started",
                    match=request.name,
                )
            raise errors.not_found(
                errors.MATCH_NOT_FOUND, f"name: no match {request.name}", match=request.name
            )
        return match_pb2.GetReplayResponse(replay=replay)

    async def _replay(
        self, name: str, match_id: str, live: Match | None
    ) -> replay_pb2.Replay | None:
        """A finished match's replay: from memory (just finished), else from the store."""
        if live is not None and live.record.replay is not None:
            return replay_pb2.Replay.FromString(live.record.replay)
        try:
            return await self.store.get_replay(match_id)
        except DamagedRecord:  # a damaged row: that replay is lost, nothing else
            log.error("replay_unreadable", match=match_id)
            raise errors.internal(
                f"name: the stored replay of {name} is damaged; the server log has the details",
                errors.REPLAY_FAILED,
                match=name,
            ) from None

    @errors.rpc
    async def WatchMatch(  # type: ignore[override]  # sends bytes: registered without a serializer
        self, request: match_pb2.WatchMatchRequest, context: Any
    ) -> AsyncIterator[bytes]:
        """A spectator's messages, serialized here: a live match's through the spectator's
        outbox, bounded in bytes (:mod:`capicua.server.outbox`)."""
        match_id = match_id_of("name", request.name)
        match = self.registry.get(match_id)
        stored = None if match is not None else await self._stored_match(match_id)
        if match is None and stored is None:
            raise errors.not_found(
                errors.MATCH_NOT_FOUND, f"name: no match {request.name}", match=request.name
            )
        if match is None or match.status == FINISHED:
            if request.match_updates:
                record = match.to_proto() if match is not None else stored
                yield match_pb2.WatchMatchResponse(match=record).SerializeToString()
            if match is not None:
                view = match.public_view()
                if view is not None:
                    yield match_pb2.WatchMatchResponse(view=view).SerializeToString()
            outcome = stored.outcome if stored is not None else match.outcome_pb  # type: ignore[union-attr]
            ended = play_pb2.MatchEnded(match=request.name, outcome=outcome)
            yield match_pb2.WatchMatchResponse(match_ended=ended).SerializeToString()
            return
        watcher = Watcher(request.match_updates, self.max_unread_bytes)
        # Followed before the record is taken, and the record queued first: a change that
        # comes while the record is on its way (a seat's stream connecting) is then sent
        # after it, not missed (yielding the record first left a gap in which it was lost).
        match.watch(watcher)
        if request.match_updates:
            watcher.put(match_pb2.WatchMatchResponse(match=match.to_proto()).SerializeToString())
        if match.status == RUNNING:
            now = match_pb2.WatchMatchResponse(view=match.public_view())
            watcher.put(now.SerializeToString())
        try:
            async for data in watcher.outbox.drain():
                yield data
        finally:
            match.unwatch(watcher)
        if watcher.dropped:
            bound = watcher.outbox.bound
            raise errors.exhausted(
                errors.SLOW_CONSUMER,
                f"the spectator left more than {bound} bytes unread",
                limit=bound,
                match=match.name,
            )


def _preset(name: str, overrides: list[str]) -> Ruleset:
    if not name:
        raise errors.invalid("preset", "required")
    try:
        base = load_preset(name)
    except UnknownPresetError as e:
        raise errors.invalid("preset", str(e)) from None
    except RulesError as e:  # pragma: no cover - a broken shipped preset
        raise errors.invalid("preset", str(e)) from None
    return _override(base, overrides)


def _custom(pb: Any, overrides: list[str]) -> Ruleset:
    try:
        base = codec.ruleset_from_proto(pb)
    except RulesError as e:
        raise errors.invalid("ruleset", str(e)) from None
    return _override(base, overrides)


def _override(base: Ruleset, overrides: list[str]) -> Ruleset:
    """``base`` with the overrides applied together; an error names the override whose
    knob it is about (``overrides[1]: hand_sise: unknown knob``) when it can tell."""
    try:
        return base.with_overrides(overrides)
    except RulesError as e:
        text = str(e)
        for i, item in enumerate(overrides):
            knob = item.partition("=")[0].strip()
            if knob and (text.startswith(f"{knob}:") or f"{item!r}" in text):
                raise errors.invalid(f"overrides[{i}]", text) from None
        raise errors.invalid("overrides", text) from None


def _filters(request: match_pb2.ListMatchesRequest) -> list[object]:
    return [int(request.state), request.tag]


def _token(request: match_pb2.ListMatchesRequest, ns: int, match_id: str) -> str:
    raw = json.dumps([ns, match_id, *_filters(request)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _cursor(request: match_pb2.ListMatchesRequest) -> tuple[int, str] | None:
    if not request.page_token:
        return None
    try:
        text = request.page_token
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        ns, match_id, *filters = json.loads(raw)
        if not isinstance(ns, int) or not isinstance(match_id, str):
            raise ValueError
    except (ValueError, binascii.Error, UnicodeDecodeError, TypeError):
        raise errors.invalid("page_token", "not a token from a previous response") from None
    if filters != _filters(request):
        raise errors.invalid("page_token", "was issued for other filters (state, tag)")
    return ns, match_id
