"""A match's settings checked, in one place: the lobby checks them when a match is created,
and a restart checks the journaled ones again (a damaged journal could hold any value)."""

from __future__ import annotations

import re
from typing import Any

from capicua.v1 import match_pb2

TAG = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
MAX_TAGS = 16
MIN_TIMER_MS = 50
MAX_TIMER_MS = 3_600_000

POLICIES = (match_pb2.TIMEOUT_POLICY_AUTO_PLAY, match_pb2.TIMEOUT_POLICY_FORFEIT)
VISIBILITIES = (match_pb2.VISIBILITY_PUBLIC, match_pb2.VISIBILITY_PRIVATE)


class SettingsError(ValueError):
    """A setting out of range: ``field`` names it, the text says what is allowed."""

    def __init__(self, field: str, text: str) -> None:
        super().__init__(f"{field}: {text}")
        self.field = field
        self.text = text


def names(enum: Any, values: tuple[int, ...]) -> str:
    """``values`` of a protobuf ``enum`` by name, for an error."""
    return ", ".join(enum.Name(v) for v in values)


def settled(given: match_pb2.MatchSettings, default_timer_ms: int) -> match_pb2.MatchSettings:
    """``given`` with its defaults filled in, every value checked (raises SettingsError)."""
    settings = match_pb2.MatchSettings()
    settings.CopyFrom(given)
    timer = settings.turn_timer_ms or default_timer_ms
    if not MIN_TIMER_MS <= timer <= MAX_TIMER_MS:
        raise SettingsError(
            "settings.turn_timer_ms", f"{timer} is not in {MIN_TIMER_MS}..{MAX_TIMER_MS}"
        )
    settings.turn_timer_ms = timer
    _choice(settings, "on_timeout", match_pb2.TimeoutPolicy, POLICIES)
    _choice(settings, "visibility", match_pb2.Visibility, VISIBILITIES)
    if len(settings.tags) > MAX_TAGS:
        raise SettingsError("settings.tags", f"at most {MAX_TAGS} tags")
    for i, tag in enumerate(settings.tags):
        if not TAG.fullmatch(tag):
            raise SettingsError(
                f"settings.tags[{i}]", "expected 1-64 characters of [A-Za-z0-9_.:-]"
            )
    return settings


def _choice(
    settings: match_pb2.MatchSettings, name: str, enum: Any, allowed: tuple[int, ...]
) -> None:
    """Fill in an enum setting left unspecified with its first allowed value; refuse any
    other value not allowed."""
    value = getattr(settings, name) or allowed[0]
    if value not in allowed:
        raise SettingsError(f"settings.{name}", f"{value} is not one of {names(enum, allowed)}")
    setattr(settings, name, value)
