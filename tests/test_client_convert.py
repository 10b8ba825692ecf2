"""``capicua.wire.views``, the reading side: the View a seat receives becomes exactly the
Observation an in-process bot gets, legal actions become engine actions and go back to
their ids, and the stdio bridge's JSON is plain."""

from __future__ import annotations

import json
import random

import pytest

from capicua.client.stdio import StdioBot
from capicua.engine.actions import Action
from capicua.engine.game import Game
from capicua.engine.observation import observe
from capicua.engine.rules import load_preset
from capicua.v1 import view_pb2
from capicua.wire import codec, views
from capicua.wire.codec import WireError
from tests.clientkit import sample_decision

PRESETS = ["cuban", "el-dominito-2p", "jamaican-six-love", "draw", "cutthroat"]


@pytest.mark.parametrize("preset", PRESETS)
def test_views_become_the_observations_they_were_built_from(preset: str) -> None:
    rules = load_preset(preset, ["max_hands=2"])
    rng = random.Random(preset)
    state = Game(rules).new_match(rng.randrange(2**32))
    builder = views.ViewBuilder(
        codec.ruleset_to_proto(rules), [f"p{i}" for i in range(rules.seats)]
    )
    checked = 0
    for _ in range(2000):
        seats: list[int | None] = [None, *range(rules.seats)]
        for seat in seats:
            obs = observe(state, seat)
            view = view_pb2.View.FromString(builder.view(obs).SerializeToString())
            assert views.observation_from_view(view) == obs
            checked += 1
        if state.is_terminal():
            break
        legal = state.legal()
        back = views.actions_from_legal(views.legal_actions(legal))
        assert back == legal
        for i, action in enumerate(legal):
            assert views.action_id(legal, action) == i
            assert views.action_id(legal, str(action)) == i
        state.apply_action(rng.choice(legal))
    assert state.is_terminal() and checked > 20


def test_answers_map_to_ids() -> None:
    legal = [Action.parse(t) for t in ("3-6:L", "3-6:R", "2-4:R", "defer")]
    assert views.parse_answer(legal, legal[2]) == 2
    assert views.parse_answer(legal, "2-4:r") == 2
    assert views.parse_answer(legal, "4-2") == 2  # one end only: the tile is enough
    assert views.parse_answer(legal, "3-6") is None  # fits both ends
    assert views.parse_answer(legal, "defer") == 3
    assert views.parse_answer(legal, "0-0:L") is None
    assert views.parse_answer(legal, "nonsense") is None
    assert views.parse_answer(legal, 7) == 7  # ids go to the server as they are
    assert views.parse_answer(legal, True) is None
    assert views.parse_answer(legal, None) is None


def test_malformed_messages_name_the_field() -> None:
    with pytest.raises(WireError, match="phase"):
        views.observation_from_view(view_pb2.View())
    bad = view_pb2.LegalAction(id=0, text="x", kind=view_pb2.ACTION_KIND_PLAY, tile="3-x")
    with pytest.raises(WireError, match=r"legal_actions\[0\]\.end"):
        views.actions_from_legal([bad])
    with pytest.raises(WireError, match=r"legal_actions\[0\]\.id"):
        views.actions_from_legal([view_pb2.LegalAction(id=3, kind=view_pb2.ACTION_KIND_DEFER)])


def test_the_stdio_request_is_plain_json() -> None:
    decision = sample_decision()
    bot = StdioBot(["true"])
    request = json.loads(json.dumps(bot.request(decision)))
    assert request["type"] == "decision" and request["match"] == "matches/m1"
    assert request["turn_id"] == 4 and request["seat"] == decision.seat
    assert request["deadline"] == "2033-05-18T03:33:20.000+00:00"
    first = request["legal_actions"][0]
    assert set(first) == {"id", "text", "kind", "tile", "end"} and first["id"] == 0
    assert first["kind"] in ("play", "defer") and first["text"] == str(decision.legal_actions[0])
    view = request["view"]
    assert view["seat"] == decision.seat and view["phase"] == "PHASE_PLAY"
    assert view["tiles"] == [str(t) for t in decision.observation.tiles]
    assert view["ruleset"]["name"] == "cuban" and view["ruleset"]["max_pip"] == 9
    assert view["chain"] == [] and view["tile_counts"]  # defaults are written out
    assert "ends" not in view  # a message field: absent until the first tile is down


def test_stdio_answers_are_checked() -> None:
    decision = sample_decision()
    text = str(decision.legal_actions[0])
    assert StdioBot.parse(decision, '{"action_id": 0}') == (0, "")
    assert StdioBot.parse(decision, json.dumps({"action": text})) == (0, "")
    assert StdioBot.parse(decision, '{"action_id": 40}') == (40, "")  # the server says no
    for line, problem in [
        ("hello", "not JSON"),
        ("[1]", "not a JSON object"),
        ('{"id": 0}', 'expected {"action_id": N}'),
        ('{"action_id": "0"}', "whole number"),
        ('{"action_id": true}', "whole number"),
        ('{"action": "9-9:L"}', "is not one of the legal actions"),
    ]:
        found, said = StdioBot.parse(decision, line)
        assert found is None and problem in said, (line, said)
