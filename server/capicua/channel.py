"""Channel and server options shared by the server and its clients (CLI, SDKs, tests).

Keepalive must agree on both sides: a client that pings more often than the server's
``grpc.http2.min_ping_interval_without_data_ms`` gets GOAWAY ``too_many_pings``. Clients
here ping every 20 s; the server accepts pings every 10 s and pings idle clients every 30 s.
There is no ``max_connection_age``: it would cut long-lived Play streams.
"""

from __future__ import annotations

import os
from typing import Any

import grpc

#: Where clients connect when neither --server nor CAPICUA_SERVER says otherwise.
DEFAULT_SERVER = "127.0.0.1:50051"

#: The largest request the server accepts (replies may be larger: replays).
MAX_RECEIVE_BYTES = 1 << 20

#: Replies a client accepts (a long match's replay is a few MiB at most).
CLIENT_MAX_RECEIVE_BYTES = 64 << 20

SERVER_KEEPALIVE: list[tuple[str, int]] = [
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_ping_strikes", 2),
]

CLIENT_OPTIONS: list[tuple[str, int]] = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", CLIENT_MAX_RECEIVE_BYTES),
]


def server_address(given: str | None = None) -> str:
    """``given``, else $CAPICUA_SERVER, else 127.0.0.1:50051."""
    return given or os.environ.get("CAPICUA_SERVER") or DEFAULT_SERVER


def bearer(token: str | None) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``token`` (none for an empty token)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def aio_channel(address: str) -> Any:
    """A grpc.aio channel with the client options (plaintext: use on trusted networks)."""
    return grpc.aio.insecure_channel(address, options=CLIENT_OPTIONS)


def sync_channel(address: str) -> Any:
    return grpc.insecure_channel(address, options=CLIENT_OPTIONS)
