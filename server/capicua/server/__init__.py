"""The authoritative gRPC match server (``capicua serve``).

- :mod:`~capicua.server.app`: assembly, ``serve()``, graceful shutdown, logging;
- :mod:`~capicua.server.play`: PlayService (RegisterBot, the Play stream) and the stream hub;
- :mod:`~capicua.server.lobby`: MatchService (rulesets, create/list/get/join/start/cancel,
  replays, watching);
- :mod:`~capicua.server.matches`: the match registry and the one task that drives each
  running match (the single authority on its engine state);
- :mod:`~capicua.wire.views`: engine values -> live-protocol messages (views, legal actions);
- :mod:`~capicua.server.cpu`: CPU seats in a process pool;
- :mod:`~capicua.server.store`: SQLite persistence;
- :mod:`~capicua.server.auth`, :mod:`~capicua.server.errors`, :mod:`~capicua.channel`:
  tokens, status codes, shared channel options.

docs/protocol.md describes the protocol from a bot's point of view.
"""
