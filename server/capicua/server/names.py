"""The forms of the server's identifiers, in one place: what a request may name and what
the store may hold (the store checks rows it reads back against the same patterns)."""

from __future__ import annotations

import re

#: A bot's id (``bots/{bot_id}``): chosen by whoever registers it.
BOT_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: A match's id (``matches/{match_id}``): the server makes 16 hex digits; names of this
#: form are accepted (and refused as unknown) so that a bad id is told from a bad name.
MATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MATCH_NAME = re.compile(rf"matches/({MATCH_ID.pattern})")
#: The SHA-256 hex digest under which a token is kept.
DIGEST = re.compile(r"[0-9a-f]{64}")
#: The longest display name a seat may have (``JoinMatch.display_name``).
PLAYER_CHARS = 64
#: The largest count a ``uint32`` field carries (a seat's timeouts, auto-played turns).
UINT32_MAX = 2**32 - 1
#: The longest ``match_json`` the store reads back (live or finished): a real one (64 seats,
#: names of 64 characters, a reason of 300) is a few kilobytes. A longer one is damage, and
#: would make every answer showing the match (a page of ``ListMatches``) too large for
#: clients.
MAX_MATCH_JSON = 64 * 1024
