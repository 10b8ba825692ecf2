"""Readable text for events, hands and results (shared by play, replay and watch views)."""

from __future__ import annotations

from collections.abc import Iterator

from capicua.engine.line import Line
from capicua.engine.records import (
    Deal,
    Event,
    HandEnd,
    HandResult,
    Outcome,
    Play,
    RedealChoice,
    Replay,
)
from capicua.engine.rules import Points, Ruleset, Sides


def set_text(r: Ruleset) -> str:
    """``double-6``, ``double-6 minus 0-0``."""
    text = f"double-{r.max_pip}"
    if r.exclude:
        text += " minus " + ", ".join(str(t) for t in r.exclude)
    return text


def counts_hands(r: Ruleset) -> bool:
    """True when every won hand scores exactly one point (the target counts hands)."""
    return r.domino_points is Points.ONE and r.block_points is Points.ONE


def target_text(r: Ruleset) -> str:
    """``100 pts``, ``6 hands``."""
    return f"{r.target} hands" if counts_hands(r) else f"{r.target} pts"


def rules_text(r: Ruleset) -> str:
    """What a ruleset is, from its knobs (overrides included, unlike its preset's summary):
    ``double-6, 4 seats, teams, to 50 pts``."""
    return f"{set_text(r)}, {r.seats} seats, {r.sides.value}, to {target_text(r)}"


def side_name(rules: Ruleset, side: int) -> str:
    if rules.sides is Sides.TEAMS:
        a, b = rules.side_seats(side)
        return f"team {a}+{b}"
    return f"seat {side}"


def event_text(event: Event) -> str:
    if isinstance(event, Play):
        return f"seat {event.seat} plays {event.tile} on the {event.end.name.lower()}"
    return str(event)


def scores_text(rules: Ruleset, scores: tuple[int, ...]) -> str:
    return ", ".join(f"{side_name(rules, sd)} {sc}" for sd, sc in enumerate(scores))


def result_text(rules: Ruleset, r: HandResult) -> str:
    how = (
        f"seat {r.seat} dominoes" if r.end is HandEnd.DOMINO else f"blocked (locker seat {r.seat})"
    )
    pips = " ".join(f"s{s}:{p}" for s, p in enumerate(r.pips))
    if r.winner is None:
        won = "tie, no winner"
    else:
        won = f"{side_name(rules, r.winner)} wins {r.points}"
        labels = {b.name: b.display for b in rules.finish_bonus}
        if r.bonuses:
            won += f" (base {r.base}; {', '.join(labels.get(b, b) for b in r.bonuses)})"
        if r.awarded != r.points:
            won += f", scores {r.awarded}"
    reset = f"; {r.reset.value.replace('_', ' ')} reset" if r.reset else ""
    return f"{how}; pips left {pips}; {won}{reset}; score: {scores_text(rules, r.scores)}"


def outcome_text(rules: Ruleset, o: Outcome) -> str:
    head = "no winner" if o.winner is None else f"{side_name(rules, o.winner)} wins"
    flag = f" — {o.shutout}!" if o.shutout else ""
    final = scores_text(rules, o.scores)
    return f"{head}{flag} ({o.termination.value}: {o.reason}); final score: {final}"


def deal_lines(deal: Deal) -> Iterator[str]:
    tag = "deal" if deal.attempt == 0 else "redeal"
    for seat, tiles in enumerate(deal.hands):
        yield f"{tag} seat {seat}: {' '.join(str(t) for t in tiles)}"
    if deal.stock:
        yield f"stock ({len(deal.stock)}): {' '.join(str(t) for t in deal.stock)}"


def replay_lines(replay: Replay, hand: int | None = None) -> Iterator[str]:
    """A readable hand-by-hand log of a whole match (or one ``hand``, counted from 1)."""
    rules = replay.ruleset
    seats = ", ".join(f"seat {s} {p}" for s, p in enumerate(replay.players))
    yield f"{rules.name}: seed {replay.seed}; {seats}"
    for record in replay.hands:
        if hand is not None and record.hand + 1 != hand:
            continue
        yield ""
        yield f"Hand {record.hand + 1}"
        deals = list(record.deals)
        yield from ("  " + line for line in deal_lines(deals.pop(0)))
        line = Line()
        think = {t.event: f"  ({t.micros / 1000:.3g} ms)" for t in record.think_times}
        for i, event in enumerate(record.events):
            took = think.get(i, "")  # a client's think time, as the server measured it
            line = line.apply(event)
            if isinstance(event, Play) and line.ends is not None:
                left, right = line.ends
                yield f"  {event_text(event):<34} ends {left}|{right}{took}"
            else:
                yield "  " + event_text(event) + took
            if isinstance(event, RedealChoice) and event.redeal and deals:
                yield from ("  " + text for text in deal_lines(deals.pop(0)))
        yield f"  chain: {line}"
        if record.result is not None:
            for seat, tiles in enumerate(record.result.remaining):
                yield f"  left with seat {seat}: {' '.join(str(t) for t in tiles) or '-'}"
            yield "  => " + result_text(rules, record.result)
        else:
            yield "  => (hand not finished)"
    if replay.outcome is not None and hand is None:
        yield ""
        yield "Result: " + outcome_text(rules, replay.outcome)
