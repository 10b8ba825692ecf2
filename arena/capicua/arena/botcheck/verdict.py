"""What the bot did wrong, in words: the problems a row finds in what the proxy recorded and
in the server's record of a match. Each problem is one phrase naming the turn and the match
(``answered turn 7 of matches/x after it was withdrawn``) with the moment it happened; a
row's verdict is the earliest one, the first cause (a turn let time out before the refusals
that follow from it), with how many more there were."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from capicua.client.lobby import error_info
from capicua.engine.records import Event, Replay
from capicua.v1 import errors_pb2, match_pb2, play_pb2

from .harness import Created, RowFailed, termination
from .record import Answered, Recorder, Turn

#: Withdrawals after which nobody takes an answer: answering one is wrong. (After TIMED_OUT,
#: ILLEGAL_ACTIONS or AUTO_PLAYED a bot may send the answer it has: it ends the auto-play.)
NOBODY_WAITS = {
    play_pb2.WITHDRAWAL_REASON_MATCH_ENDED: "the match ended",
    play_pb2.WITHDRAWAL_REASON_SERVER_STOPPING: "the server is stopping",
}

#: How a match may end when the bot did nothing wrong.
GOOD_ENDINGS = ("normal", "hand_limit")

#: A problem: when it happened (``time.monotonic()``, as the proxy recorded it; ``math.inf``
#: when only the match record shows it) and what it was, in one phrase.
Problem = tuple[float, str]


def times(n: int) -> str:
    """``once``, ``2 times``."""
    return "once" if n == 1 else f"{n} times"


def plural(n: int, word: str) -> str:
    """``1 tile``, ``5 tiles``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def first(problems: Sequence[Problem]) -> str:
    """The earliest problem (and how many more), "" without any."""
    if not problems:
        return ""
    earliest = min(problems, key=lambda p: p[0])  # the first of equals: the order found
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return earliest[1] + more


def fail(problems: Sequence[Problem]) -> None:
    """RowFailed with the earliest problem (and how many more), if there are any."""
    if problems:
        raise RowFailed(first(problems))


def answer_problems(
    recorder: Recorder, *, after_withdrawal_ok: bool = False
) -> dict[Turn, Problem]:
    """Every answer that was not legal, not in time, or not wanted: for a turn it was never
    sent, an action id out of range, sent on a stream that was never asked that turn (a
    request of a stream that ended, remembered), later than the request's ``time_left_ms``
    (as the proxy measured it), or after the turn was withdrawn for good (match ended,
    server stopping) or its match ended (unless ``after_withdrawal_ok``). The first problem
    of each turn, by turn."""
    out: dict[Turn, Problem] = {}
    for a in recorder.answers:
        problem = _answer_problem(a, recorder, after_withdrawal_ok=after_withdrawal_ok)
        if problem:
            out.setdefault(a.turn, (a.at, problem))
    return out


def _answer_problem(a: Answered, recorder: Recorder, *, after_withdrawal_ok: bool) -> str:
    if a.request is None:
        return f"answered {a.where()}, which it was never sent"
    request = a.request.message.decision
    legal = len(request.legal_actions)
    if a.reply.action_id >= legal:
        return (
            f"answered {a.where()} with action id {a.reply.action_id}, not one of its "
            f"{legal} legal ids (0..{legal - 1})"
        )
    # judged on everything recorded: a request sent again on the new stream after the
    # answer (a reconnect while the turn was still open) makes the answer right
    if all(d.stream != a.stream for d in recorder.requests[a.turn]):
        return _answered_elsewhere(a)
    took = (a.at - a.request.at) * 1000
    # an answer after its withdrawal is judged below (a late one shows as the server's
    # timeout in the match record)
    if a.withdrawn is None and request.time_left_ms and took > request.time_left_ms:
        return f"answered {a.where()} after {took:.0f} ms (it had {request.time_left_ms} ms)"
    if after_withdrawal_ok:
        return ""
    if a.withdrawn is not None:
        reason = a.withdrawn.message.decision_withdrawn.reason
        if reason in NOBODY_WAITS:
            return f"answered {a.where()} after it was withdrawn ({NOBODY_WAITS[reason]})"
    if a.match_ended is not None:
        return f"answered {a.where()} after its MatchEnded"
    return ""


def _answered_elsewhere(a: Answered) -> str:
    """An answer on a stream that was never sent its turn: one remembered from the stream
    before, which had ended (a reconnect sends every request still open again)."""
    if a.withdrawn is not None:
        reason = a.withdrawn.message.decision_withdrawn.reason
        why = NOBODY_WAITS.get(reason, "")
        if reason == play_pb2.WITHDRAWAL_REASON_SERVER_STOPPING:
            return (
                f"answered {a.where()} on a new stream after it was withdrawn ({why}) on the "
                "old one: after the restart the server asks again under a new turn_id; answer "
                "only what the new stream sends"
            )
    return (
        f"answered {a.where()} on a new stream, a turn asked on a stream that had ended: a "
        "new stream is sent every request still open again; answer only what it sends"
    )


def error_problems(
    recorder: Recorder, allowed: Collection[str] = (), explained: Collection[Turn] = ()
) -> list[Problem]:
    """In-stream errors the server sent about the bot's own answers: not those the row
    caused on purpose (their reasons ``allowed``), nor those about a turn whose answer is a
    problem already (``explained``)."""
    out = []
    for item in recorder.errors:
        status = item.message.error
        reason, meta = error_info(status)
        turn = (meta.get("match", ""), int(meta.get("turn_id", "0") or 0))
        if reason in allowed or turn in explained:
            continue
        where = f"turn {meta.get('turn_id', '?')} of {meta.get('match', '?')}"
        out.append(
            (item.at, f"the server refused its answer to {where}: {reason} ({status.message})")
        )
    return out


_REPLACED = errors_pb2.ErrorReason.Name(errors_pb2.STREAM_REPLACED)  # as a stream's end says


def replaced_problems(recorder: Recorder) -> list[Problem]:
    """Its streams ended ``STREAM_REPLACED`` (a newer stream with its token): named, with how
    many, not left to show as what follows from them (matches that do not end, streams
    that keep opening)."""
    replaced = [s for s in recorder.streams if s.reason == _REPLACED]
    if not replaced or replaced[0].closed is None:
        return []
    since = replaced[0].closed - recorder.streams[0].opened
    return [
        (
            replaced[0].closed,
            f"its streams replaced each other: {len(replaced)} of them ended ABORTED / "
            f"STREAM_REPLACED, the first {since:.1f} s after it connected (one stream per "
            "token: a second stream with the same token ends the first)",
        )
    ]


def record_problems(
    created: Created, match: match_pb2.Match, recorder: Recorder | None
) -> list[Problem]:
    """What the server's record of a finished match says against the bot: an ending other
    than NORMAL or HAND_LIMIT (when its MatchEnded passed the proxy), and each of its seats
    whose timer ran out (the turn named, and when, from what the proxy saw, when there is a
    proxy)."""
    out = []
    ending = termination(match)
    if ending not in GOOD_ENDINGS:
        ended = recorder.match_ended.get(created.name) if recorder is not None else None
        at = ended.at if ended is not None else math.inf
        out.append((at, f"{created.name} ended {ending}: {match.outcome.reason}"))
    for seat in match.seats:
        if seat.seat in created.bot_seats and (seat.timeouts or seat.auto_played):
            out.append(_late_seat(created.name, seat, recorder))
    return out


def _late_seat(name: str, seat: match_pb2.SeatStatus, recorder: Recorder | None) -> Problem:
    if recorder is not None:
        for (match, turn), item in recorder.withdrawals.items():
            withdrawn = item.message.decision_withdrawn
            if match != name or withdrawn.seat != seat.seat:
                continue
            if withdrawn.reason == play_pb2.WITHDRAWAL_REASON_TIMED_OUT:
                return item.at, f"let turn {turn} of {name} time out (seat {seat.seat})"
            if withdrawn.reason == play_pb2.WITHDRAWAL_REASON_ILLEGAL_ACTIONS:
                return (
                    item.at,
                    f"answered turn {turn} of {name} illegally three times (seat {seat.seat})",
                )
    return math.inf, (
        f"seat {seat.seat} of {name} ran out of time {seat.timeouts} time(s); the server "
        f"played {seat.auto_played} of its turns"
    )


def seat_events(replay: Replay, seats: Collection[int], kind: type) -> list[Event]:
    """The replay's events of ``kind`` (Play, Draw, Defer, RedealChoice) by ``seats``."""
    return [
        e
        for hand in replay.hands
        for e in hand.events
        if isinstance(e, kind) and getattr(e, "seat", None) in seats
    ]


def decisions(replay: Replay, seats: Collection[int]) -> int:
    """How many decisions the server asked of ``seats`` and got answered (think times)."""
    return sum(1 for hand in replay.hands for t in hand.think_times if t.seat in seats)
