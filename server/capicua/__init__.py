"""capicua: a headless dominoes game service with a bot arena.

Subpackages: ``capicua.engine`` (the authoritative rules engine), ``capicua.v1`` (generated
protobuf and gRPC code), ``capicua.bots`` (built-in players), ``capicua.cli`` (the
``capicua`` command), ``capicua.arena`` and ``capicua.client``.
"""

__version__ = "0.1.0"
