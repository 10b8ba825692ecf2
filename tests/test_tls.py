"""TLS over real loopback sockets: an SDK bot plays a match over TLS; a plaintext client,
a client that does not trust the server's CA, and (with mutual TLS) a client without a
certificate are refused, each with a message that says why; ``capicua serve`` and
``capicua match`` take the TLS options; plaintext on a non-loopback address is warned
about."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest

from capicua.client import Bot, ClientError, LaunchError, Session
from capicua.common.channel import ClientTLS, ServerTLS, TLSError, aio_channel
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Termination
from capicua.server.app import App, ServerConfig
from capicua.v1 import match_pb2, match_pb2_grpc
from tests.clientkit import Proc, capicua_args
from tests.compliance.client import Lobby, bot_seat, cpu_seat
from tests.serverkit import server_process
from tests.tlskit import Certs, make_certs

SHORT = ["target=15"]


class First(Bot):
    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        return legal_actions[0]


@pytest.fixture
def certs(tmp_path: Path) -> Certs:
    return make_certs(tmp_path / "certs")


@asynccontextmanager
async def tls_server(certs: Certs, mutual: bool = False) -> AsyncIterator[App]:
    tls = ServerTLS(certs.server_cert, certs.server_key, certs.ca if mutual else None)
    app = await App.start(ServerConfig(port=0, cpu_workers=1, tls=tls))
    try:
        yield app
    finally:
        await app.shutdown(grace=2)


async def _list(address: str, tls: ClientTLS | None) -> match_pb2.ListMatchesResponse:
    async with aio_channel(address, tls) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        response: match_pb2.ListMatchesResponse = await stub.ListMatches(
            match_pb2.ListMatchesRequest(), timeout=5
        )
        return response


async def _refused(address: str, tls: ClientTLS | None) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _list(address, tls)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE, caught.value
    return caught.value


async def _session_error(address: str, tls: ClientTLS | bool) -> str:
    session = Session(
        First(), server=address, token="bot_x", tls=tls, max_attempts=1, connect_timeout=5
    )
    with pytest.raises(ClientError) as caught:
        await asyncio.wait_for(session.run(), 30)
    return str(caught.value)


async def test_an_sdk_bot_plays_a_match_over_tls(certs: Certs) -> None:
    async with tls_server(certs) as app:
        lobby = Lobby(app.address, ClientTLS(ca=certs.ca))
        try:
            bot_id, token = await lobby.register("tls")
            seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
            match, host = await lobby.create("block", seats, overrides=SHORT, seed=5)
            await lobby.start(match.name, host)
            session = Session(
                First(), server=app.address, token=token, matches=1, tls=ClientTLS(ca=certs.ca)
            )
            summary = await asyncio.wait_for(session.run(), 60)
        finally:
            await lobby.close()
    assert summary.principal == f"bots/{bot_id}"
    assert summary.outcomes[match.name].termination is Termination.NORMAL


async def test_a_plaintext_client_is_refused_by_a_tls_server(certs: Certs) -> None:
    async with tls_server(certs) as app:
        await _refused(app.address, None)
        message = await _session_error(app.address, False)
    assert "cannot reach a capicua server" in message
    assert "pass --tls" in message, message


async def test_a_client_that_does_not_trust_the_ca_is_refused(certs: Certs) -> None:
    async with tls_server(certs) as app:
        error = await _refused(app.address, ClientTLS(ca=certs.other_ca))
        assert "CERTIFICATE_VERIFY_FAILED" in (error.details() or ""), error
        await _refused(app.address, ClientTLS())  # the system's CAs do not know it either
        # not retried until connect_timeout: it fails on the first attempt
        session = Session(
            First(), server=app.address, token="bot_x", tls=ClientTLS(ca=certs.other_ca)
        )
        with pytest.raises(ClientError) as caught:
            await asyncio.wait_for(session.run(), 10)
    message = str(caught.value)
    assert "not trusted" in message and "--tls-ca" in message and "not retrying" in message


async def test_mutual_tls_wants_a_client_certificate(certs: Certs) -> None:
    async with tls_server(certs, mutual=True) as app:
        await _refused(app.address, ClientTLS(ca=certs.ca))
        mine = ClientTLS(ca=certs.ca, cert=certs.client_cert, key=certs.client_key)
        assert list((await _list(app.address, mine)).matches) == []
        message = await _session_error(app.address, ClientTLS(ca=certs.ca))
    assert "--tls-cert" in message, message


def test_a_key_without_its_certificate_is_refused() -> None:
    with pytest.raises(TLSError, match="--tls-cert and --tls-key"):
        ClientTLS(key=Path("key.pem"))


async def _cli(*args: str) -> Proc:
    proc = Proc(capicua_args(*args))
    await proc.wait(60)
    return proc


async def test_capicua_serve_and_match_over_mutual_tls(certs: Certs, tmp_path: Path) -> None:
    tls = ["--tls-cert", str(certs.server_cert), "--tls-key", str(certs.server_key)]
    with server_process([*tls, "--tls-client-ca", str(certs.ca)], tmp_path / "logs") as server:
        where = ["--server", server.address]
        mine = ["--tls-cert", str(certs.client_cert), "--tls-key", str(certs.client_key)]
        listed = await _cli("match", "list", *where, "--tls-ca", str(certs.ca), *mine)
        assert listed.proc.returncode == 0, listed.report()
        plain = await _cli("match", "list", *where)
        assert plain.proc.returncode == 2, plain.report()
        assert "cannot reach a capicua server" in plain.stderr and "--tls" in plain.stderr
        no_cert = await _cli("match", "list", *where, "--tls-ca", str(certs.ca))
        assert no_cert.proc.returncode == 2, no_cert.report()
        assert "--tls-cert" in no_cert.stderr, no_cert.report()
    assert '"tls": true' in server.logs() and '"client_certificates": true' in server.logs()
    assert "plaintext_on_network" not in server.logs()


async def test_serve_warns_about_plaintext_off_loopback(tmp_path: Path) -> None:
    with server_process(["--host", "0.0.0.0"], tmp_path / "logs") as server:
        pass
    assert "plaintext_on_network" in server.logs()
    with server_process([], tmp_path / "logs") as server:
        pass
    assert "plaintext_on_network" not in server.logs()


def test_serve_refuses_half_a_tls_setting(tmp_path: Path) -> None:
    half = ["--tls-cert", str(tmp_path / "x.pem")]
    with pytest.raises(LaunchError, match="--tls-key"), server_process(half, tmp_path / "logs"):
        pass


@pytest.mark.parametrize("bad", ["cert", "key"])
def test_serve_refuses_a_file_that_is_not_pem(certs: Certs, tmp_path: Path, bad: str) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    cert = junk if bad == "cert" else certs.server_cert
    key = junk if bad == "key" else certs.server_key
    args = ["--tls-cert", str(cert), "--tls-key", str(key)]
    expected = "certificate" if bad == "cert" else "private key"
    refused = pytest.raises(LaunchError, match=f"not a PEM file with a {expected}")
    with refused, server_process(args, tmp_path / "logs"):
        pass
