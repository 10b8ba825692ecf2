"""The authoritative gRPC match server (``capicua serve``).

- :mod:`~capicua.server.app`: assembly, ``serve()``, graceful shutdown, logging;
- :mod:`~capicua.server.play`: PlayService (RegisterBot, the Play stream) and the stream hub;
- :mod:`~capicua.server.lobby`: MatchService (rulesets, create/list/get/join/start/cancel,
  replays, watching);
- :mod:`~capicua.server.matches`: the match registry and the one task that drives each
  running match (the single authority on its engine state), tying together a match's
  - :mod:`~capicua.server.seats`: seats, reserving and joining them;
  - :mod:`~capicua.server.turns`: the open decision request and checking answers to it;
  - :mod:`~capicua.server.fanout`: the messages to seats and spectators, masked per seat;
  - :mod:`~capicua.server.record`: think times, the replay and the stored record;
- :mod:`~capicua.server.cpu`: CPU seats in a process pool;
- :mod:`~capicua.server.store`: SQLite persistence;
- :mod:`~capicua.server.auth`: tokens, and the interceptor that checks every call's;
- :mod:`~capicua.server.errors`: status codes, and the decorator on every handler.
- :mod:`~capicua.server.faults`: the hooks through which tests make the server fail.

Below it: :mod:`~capicua.wire.views` (engine values -> live-protocol messages) and
:mod:`~capicua.common.channel` (channel options shared with the clients).

docs/protocol.md describes the protocol from a bot's point of view.
"""
