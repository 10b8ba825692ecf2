"""A tabular policy learning a capicua ruleset through the PettingZoo environment.

Seat 0 keeps one number per tile, a preference, and plays the legal tile it prefers most.
It learns the preferences from hands it plays at random against a random seat 1 (every
episode is one hand: ``max_hands=1``, so the reward is the hand's result): after each hand,
every choice it made moves the chosen tile's preference by the reward and the options'
down by their share of it (the policy-gradient step of a softmax policy at the uniform
one). Then it plays greedily and reports its hand win rate beside a random policy's on
the same deals. Nothing heavy: a few thousand steps, seconds.

    python docs/examples/pettingzoo_tabular.py [--episodes 3000] [--preset iq-1v1]
        [--save prefs.json]   # then: capicua bot run docs/examples/policy_bot.py:PolicyBot
                              #        --option path=prefs.json
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from typing import Any

import numpy as np

from capicua.integrations.pettingzoo import env as make_env

Choice = tuple[int, list[int]]  # (the tile played, the tiles it could have played)


def play(
    env: Any, seed: int, preference: dict[int, float] | None, rng: random.Random
) -> tuple[float, list[Choice], int]:
    """One hand: seat 0 by ``preference`` (at random if None), seat 1 at random. Returns seat
    0's reward, the choices it had, and the steps taken. An action is ``2 * tile + end``
    (DEFER, REDEAL and KEEP follow the plays), so ``action // 2`` is its tile."""
    env.reset(seed=seed)
    choices: list[Choice] = []
    steps, result = 0, 0.0
    for agent in env.agent_iter():
        observation, reward, done, cut, _ = env.last()
        if done or cut:
            if agent == "seat_0":
                result = float(reward)
            env.step(None)
            continue
        legal = [int(a) for a in np.flatnonzero(observation["action_mask"])]
        if agent == "seat_0" and preference is not None:
            action = max(legal, key=lambda a: preference[a // 2])
        else:
            action = rng.choice(legal)
        if agent == "seat_0" and len(legal) > 1:
            choices.append((action // 2, [a // 2 for a in legal]))
        env.step(action)
        steps += 1
    return result, choices, steps


def win_rate(results: list[float]) -> float:
    return sum(r > 0 for r in results) / len(results)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="iq-1v1")
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--evaluate", type=int, default=1000)
    parser.add_argument("--step-size", type=float, default=0.01)
    parser.add_argument("--save", help="Write the preferences here (JSON) for policy_bot.py.")
    args = parser.parse_args()
    env = make_env(args.preset, ["max_hands=1"])
    rng = random.Random(1)
    preference: dict[int, float] = defaultdict(float)
    steps = 0
    for episode in range(args.episodes):
        reward, choices, n = play(env, episode, None, rng)
        steps += n
        for chosen, options in choices:
            preference[chosen] += args.step_size * reward
            for o in options:
                preference[o] -= args.step_size * reward / len(options)
    deals = range(10**6, 10**6 + args.evaluate)  # deals the training never saw
    learned = [play(env, d, preference, rng)[0] for d in deals]
    baseline = [play(env, d, None, rng)[0] for d in deals]
    print(f"trained on {args.episodes} hands ({steps} steps), {len(preference)} tiles")
    if args.save:
        with open(args.save, "w") as f:
            json.dump({str(k): v for k, v in sorted(preference.items())}, f)
    print(
        f"hand win rate against random over {args.evaluate} deals: "
        f"learned {win_rate(learned):.1%}, random {win_rate(baseline):.1%}"
    )


if __name__ == "__main__":
    main()
