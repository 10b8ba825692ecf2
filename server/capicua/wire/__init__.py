"""The one converter between engine values and the ``capicua.v1`` protobuf messages.

``capicua.wire.codec``: rulesets, events, deals, hand results, outcomes and replays (both
ways, and the replay file format); ``capicua.wire.views``: what the server sends a seat
(its ``View`` and its legal actions with ids). The engine knows nothing of protobuf; the
server, the SDK, the arena and the command line convert through here.
"""
