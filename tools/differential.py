"""Play seeded matches and print what they did, one JSON line each: the differential test
(tests/test_compiled.py) runs this on the compiled build and on the pure source and
requires the same lines.

Every preset, each as it is and with random knob overrides (drawn from a seeded generator,
kept only when the ruleset accepts them): ``--matches`` random playouts per preset, whose
replays cover the match loop, legality, scoring and the deals; and ``--bot-matches``
matches per preset played by every built-in bot in turn at fixed seeds (``hard`` at a
fixed number of iterations, never a time budget), whose replays hold each bot's choices,
plus each seat's observation at every decision (what the bots and the server's views read).
Every tenth playout is also cloned at its start and the clone played on.

    python tools/differential.py --matches 100 --bot-matches 2 > out.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Iterator

from capicua.bots import LEVELS, make_bot
from capicua.common import build
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import observe
from capicua.engine.rules import (
    BlockOpener,
    BlockTie,
    BlockWinner,
    NextOpener,
    NoWinnerOpener,
    Points,
    RulesError,
    Ruleset,
    Sides,
    Stock,
    TurnOrder,
    load_preset,
    preset_names,
)
from capicua.wire import codec

# knob -> the values an override may give it (TOML literals)
CHOICES: dict[str, list[str]] = {
    "sides": [s.value for s in Sides],
    "stock": [s.value for s in Stock],
    "turn_order": [t.value for t in TurnOrder],
    "next_opener": [n.value for n in NextOpener],
    "no_winner_opener": [n.value for n in NoWinnerOpener],
    "block_opener": [b.value for b in BlockOpener],
    "block_winner": [b.value for b in BlockWinner],
    "block_tie": [b.value for b in BlockTie],
    "domino_points": [p.value for p in Points],
    "block_points": [p.value for p in Points],
    "seats": ["2", "3", "4"],
    "hand_size": ["5", "6", "7", "8"],
    "target": ["25", "100", "200"],
    "redeal_min_doubles": ["0", "4", "5"],
    "reply_resets": ["true", "false"],
    "all_scored_resets": ["true", "false"],
    "win_needs_zero_opponent": ["true", "false"],
    "shutout": ["none"],
}
STRING_KNOBS = {"sides", "stock", "turn_order", "next_opener", "no_winner_opener"}
STRING_KNOBS |= {"block_opener", "block_winner", "block_tie", "domino_points", "block_points"}


def random_overrides(name: str, rng: random.Random) -> tuple[Ruleset, list[str]]:
    """``name`` with up to four random overrides the ruleset accepts, and a hand limit so
    that every match stays short."""
    overrides = [f"max_hands={rng.randint(1, 6)}"]
    for knob in rng.sample(sorted(CHOICES), rng.randint(0, 4)):
        value = rng.choice(CHOICES[knob])
        item = f'{knob}="{value}"' if knob in STRING_KNOBS else f"{knob}={value}"
        try:
            load_preset(name, [*overrides, item])
        except RulesError:
            continue
        overrides.append(item)
    return load_preset(name, overrides), overrides


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def replay_digest(state: MatchState) -> str:
    return digest(codec.replay_to_json(state.log.replay()))


def rulesets(seed: int) -> Iterator[tuple[str, Ruleset, list[str]]]:
    """(preset, ruleset, overrides): every preset as it is, then with random overrides."""
    rng = random.Random(seed)
    for name in preset_names():
        yield name, load_preset(name, ["max_hands=4"]), ["max_hands=4"]
        rules, overrides = random_overrides(name, rng)
        yield name, rules, overrides


def playouts(rules: Ruleset, matches: int, seed: int) -> Iterator[dict[str, object]]:
    game = Game(rules)
    rng = random.Random(seed)
    for i in range(matches):
        state = game.new_match(seed + i, auto_forced=False)
        # every tenth match is also cloned at its start and the clone played on its own
        # generator (clone() is what OpenSpiel's states and the bot checker use)
        twin = state.clone() if i % 10 == 0 else None
        state.random_playout(rng)
        line: dict[str, object] = {"kind": "playout", "seed": seed + i}
        line["replay"] = replay_digest(state)
        if twin is not None:
            twin.random_playout(random.Random(seed + i))
            line["clone"] = replay_digest(twin)
        yield line


def bot_match(rules: Ruleset, seed: int, iterations: int) -> dict[str, object]:
    """One match of the built-in bots, ``LEVELS`` rotated over the seats by ``seed``; the
    digest of every decision's observation and choice, and of the replay."""
    game = Game(rules)
    levels = [LEVELS[(seed + s) % len(LEVELS)] for s in range(rules.seats)]
    bots = [
        make_bot(level, seed * 10 + s, **({"budget_ms": 0, "iterations": iterations}
                                           if level == "hard" else {}))
        for s, level in enumerate(levels)
    ]  # fmt: skip
    state = game.new_match(seed)
    choices = hashlib.sha256()
    while not state.is_terminal():
        seat = state.current_seat
        assert seat is not None
        view = observe(state, seat)
        action = bots[seat].choose(view, state.legal())
        choices.update(f"{view!r}|{action!r};".encode())
        state.apply_action(action)
    return {
        "kind": "bots",
        "bots": levels,
        "seed": seed,
        "choices": choices.hexdigest()[:16],
        "replay": replay_digest(state),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=100, help="random playouts per ruleset")
    parser.add_argument("--bot-matches", type=int, default=2, help="bot matches per ruleset")
    parser.add_argument("--iterations", type=int, default=24, help="hard's iterations")
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args(argv)
    print(json.dumps({"build": build.current().label}), flush=True)
    for name, rules, overrides in rulesets(args.seed):
        where = {"preset": name, "overrides": overrides}
        for line in playouts(rules, args.matches, args.seed * 100_000):
            print(json.dumps(where | line))
        for k in range(args.bot_matches):
            print(json.dumps(where | bot_match(rules, args.seed + k, args.iterations)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
