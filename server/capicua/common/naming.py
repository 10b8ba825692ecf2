"""Names made from people's titles, the same wherever they are made."""

from __future__ import annotations

import re


def ladder_id(title: str) -> str:
    """A ladder's id from its title: lowercase letters, digits and dashes, at most 63
    (``Club ladder`` is ``club-ladder``). The server names a hosted ladder
    ``ladders/ID`` with it, and the leaderboard's URLs hold it (``/ladders/ID/``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:63].strip("-")
    return slug or "ladder"
