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
