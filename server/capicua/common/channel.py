"""Channel and server options shared by the server and its clients (CLI, SDKs, tests).

Keepalive must agree on both sides: a client that pings more often than the server's
``grpc.http2.min_ping_interval_without_data_ms`` gets GOAWAY ``too_many_pings``. Clients
here ping every 20 s; the server accepts pings every 10 s and pings idle clients every 30 s.
There is no ``max_connection_age``: it would cut long-lived Play streams.

TLS (docs/tls.md): :class:`ClientTLS` and :class:`ServerTLS` name the PEM files;
:func:`aio_channel` is the one place every client (the SDK, the CLI through the lobby's
sync façade, the arena) makes a channel, secure when given a :class:`ClientTLS`, else
plaintext.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from capicua.common.errors import CapicuaError

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


class TLSError(CapicuaError):
    """A TLS setting that cannot work (a missing file, a key without its certificate)."""


# What each file must hold: grpc's own refusal of a bad PEM is only "Failed to bind".
_PEM = {
    "--tls-ca": b"CERTIFICATE",
    "--tls-client-ca": b"CERTIFICATE",
    "--tls-cert": b"CERTIFICATE",
    "--tls-key": b"PRIVATE KEY",
}


def _read(what: str, path: Path | str | None) -> bytes | None:
    if path is None:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TLSError(f"{what} {path}: cannot read it ({e.strerror or e})") from None
    kind = _PEM[what]
    if b"-----BEGIN " not in data or kind not in data:
        raise TLSError(f"{what} {path}: not a PEM file with a {kind.decode().lower()}")
    return data


@dataclass(frozen=True)
class ClientTLS:
    """A client's TLS settings: trust ``ca`` (PEM; None: the system roots), and show the
    certificate ``cert`` with its key ``key`` when the server asks for one (mutual TLS)."""

    ca: Path | str | None = None
    cert: Path | str | None = None
    key: Path | str | None = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise TLSError("a client certificate needs both --tls-cert and --tls-key")

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=_read("--tls-ca", self.ca),
            private_key=_read("--tls-key", self.key),
            certificate_chain=_read("--tls-cert", self.cert),
        )


@dataclass(frozen=True)
class ServerTLS:
    """The server's certificate chain and key (PEM); with ``client_ca``, clients must show
    a certificate that CA signed (mutual TLS)."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        key, chain = _read("--tls-key", self.key), _read("--tls-cert", self.cert)
        assert key is not None and chain is not None
        return grpc.ssl_server_credentials(
            [(key, chain)],
            root_certificates=_read("--tls-client-ca", self.client_ca),
            require_client_auth=self.client_ca is not None,
        )


def server_tls(
    cert: Path | None, key: Path | None, client_ca: Path | None = None
) -> ServerTLS | None:
    """The settings of ``capicua serve --tls-cert/--tls-key/--tls-client-ca``; None
    (plaintext) without any."""
    if cert is None and key is None:
        if client_ca is not None:
            raise TLSError("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if cert is None or key is None:
        raise TLSError("TLS needs both --tls-cert FILE and --tls-key FILE")
    return ServerTLS(Path(cert), Path(key), Path(client_ca) if client_ca else None)


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value) if value else None


def client_tls(
    tls: bool = False,
    ca: Path | str | None = None,
    cert: Path | str | None = None,
    key: Path | str | None = None,
) -> ClientTLS | None:
    """The settings of the ``--tls``/``--tls-ca``/``--tls-cert``/``--tls-key`` options
    (``--tls-ca`` or a certificate implies ``--tls``); None: plaintext."""
    if not (tls or ca or cert or key):
        return None
    return ClientTLS(
        ca=Path(ca) if ca else None,
        cert=Path(cert) if cert else None,
        key=Path(key) if key else None,
    )


def env_tls() -> ClientTLS | None:
    """The settings of $CAPICUA_TLS (``1``: the system roots), $CAPICUA_TLS_CA,
    $CAPICUA_TLS_CERT and $CAPICUA_TLS_KEY; None (plaintext) when none is set."""
    flag = os.environ.get("CAPICUA_TLS", "").strip().lower() not in ("", "0", "false", "no")
    return client_tls(
        flag,
        _env_path("CAPICUA_TLS_CA"),
        _env_path("CAPICUA_TLS_CERT"),
        _env_path("CAPICUA_TLS_KEY"),
    )


def tls_hint(details: str | None, tls: ClientTLS | None) -> str:
    """A sentence to add to a failed connection's message when TLS is the likely cause
    ('' otherwise)."""
    text = details or ""
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return "; the server's TLS certificate is not trusted: pass --tls-ca FILE (its CA)"
    closed = "Socket closed" in text or "Connection reset" in text
    if tls is None:
        return "; if the server uses TLS, pass --tls (or --tls-ca FILE)" if closed else ""
    if "WRONG_VERSION_NUMBER" in text or "ssl handshake" in text.lower():
        return "; the TLS handshake failed: is the server using TLS?"
    if closed and tls.cert is None:
        return (
            "; the server closed the connection during the TLS handshake: does it want a "
            "client certificate (--tls-cert FILE --tls-key FILE)?"
        )
    return ""


def aio_channel(address: str, tls: ClientTLS | None = None) -> Any:
    """A grpc.aio channel with the client options: over TLS with ``tls``, else plaintext
    (use plaintext on loopback or trusted networks only)."""
    if tls is not None:
        return grpc.aio.secure_channel(address, tls.credentials(), options=CLIENT_OPTIONS)
    return grpc.aio.insecure_channel(address, options=CLIENT_OPTIONS)


class FirstStatus:
    """The status a stream-stream call ended with as the peer sent it, for when grpc.aio
    reports another: a write that fails because the peer has just ended the call (a server
    replacing the stream, stopping, refusing) makes grpc.aio set its own status, INTERNAL
    "Internal error from Core", over the peer's (grpc/grpc#36066, fixed upstream by
    grpc/grpc#43486). The call's done callback runs when its first status is set, before
    any such overwrite, and keeps that status; :meth:`instead_of` gives it back in place
    of the INTERNAL error. It reads a private attribute of grpc's call object: where that
    is missing (another grpc), it keeps nothing and the error stays as grpc reported it."""

    def __init__(self, call: Any) -> None:
        self._first: Any = None
        call.add_done_callback(self._done)

    def _done(self, call: Any) -> None:
        if self._first is None:
            self._first = getattr(getattr(call, "_cython_call", None), "_status", None)

    def instead_of(self, error: grpc.aio.AioRpcError) -> grpc.aio.AioRpcError | None:
        """The peer's status (None: it ended OK) where ``error`` is grpc's INTERNAL over
        another status; else ``error`` itself."""
        first = self._first
        if error.code() != grpc.StatusCode.INTERNAL or first is None:
            return error
        code = next((c for c in grpc.StatusCode if c.value[0] == first.code()), None)
        if code is None or code is grpc.StatusCode.INTERNAL:
            return error
        if code is grpc.StatusCode.OK:
            return None
        return grpc.aio.AioRpcError(
            code,
            grpc.aio.Metadata(),
            grpc.aio.Metadata.from_tuple(first.trailing_metadata() or ()),
            first.details(),
            first.debug_error_string(),
        )
