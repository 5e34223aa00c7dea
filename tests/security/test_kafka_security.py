"""SASL and TLS settings from the environment reach every Kafka client, and TLS really is mutual.

tests/bus/test_settings.py covers reading the variables and a self-signed context; here: every
mechanism × protocol, the options as the producer, consumer and admin client hold them, and a real
handshake against a TLS server that requires the client certificate signed by our CA.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleetplace.shared.bus.errors import BusConnectionError
from fleetplace.shared.bus.kafka import client_options, make_admin, make_consumer, make_producer, start_client
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.security.certs import Pki, make_pki

PASSWORD = "sasl-pa55word-7c1e"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("FLEETPLACE_", "KAFKA_")):
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _environment(monkeypatch: pytest.MonkeyPatch, pki: Pki, protocol: str, mechanism: str = "PLAIN") -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9093")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", protocol)
    if protocol.startswith("SASL_"):
        monkeypatch.setenv("KAFKA_SASL_MECHANISM", mechanism)
        monkeypatch.setenv("KAFKA_SASL_USERNAME", "fleetplace")
        monkeypatch.setenv("KAFKA_SASL_PASSWORD", PASSWORD)
    if protocol.endswith("SSL"):
        monkeypatch.setenv("KAFKA_SSL_CAFILE", str(pki.ca))
        monkeypatch.setenv("KAFKA_SSL_CERTFILE", str(pki.client_cert))
        monkeypatch.setenv("KAFKA_SSL_KEYFILE", str(pki.client_key))


def _ca_names(context: ssl.SSLContext) -> list[str]:
    return [dict(rdn[0] for rdn in cert["subject"])["commonName"] for cert in context.get_ca_certs()]


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_sasl_mechanism_from_the_environment_becomes_client_options(
    monkeypatch: pytest.MonkeyPatch, pki: Pki, protocol: str, mechanism: str
) -> None:
    _environment(monkeypatch, pki, protocol, mechanism)
    options = client_options(Settings().kafka)
    assert options["security_protocol"] == protocol
    assert options["sasl_mechanism"] == mechanism
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == ("fleetplace", PASSWORD)
    if protocol == "SASL_SSL":
        context = options["ssl_context"]
        assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
        assert _ca_names(context) == ["fleetplace-test-ca"]
    else:
        assert "ssl_context" not in options


def test_plaintext_has_neither_credentials_nor_tls(monkeypatch: pytest.MonkeyPatch, pki: Pki) -> None:
    _environment(monkeypatch, pki, "PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", PASSWORD)  # set but not used: never handed to a client
    options = client_options(Settings().kafka)
    assert options["security_protocol"] == "PLAINTEXT"
    assert not {"sasl_mechanism", "sasl_plain_password", "ssl_context"} & set(options)


def test_ssl_without_sasl_has_a_context_and_no_credentials(monkeypatch: pytest.MonkeyPatch, pki: Pki) -> None:
    _environment(monkeypatch, pki, "SSL")
    options = client_options(Settings().kafka)
    assert options["security_protocol"] == "SSL" and _ca_names(options["ssl_context"]) == [
        "fleetplace-test-ca"
    ]
    assert "sasl_plain_password" not in options


def _inner(client: Any) -> Any:
    return getattr(client, "client", None) or client._client


@pytest.mark.parametrize(
    "factory", [make_producer, make_consumer, make_admin], ids=["producer", "consumer", "admin"]
)
async def test_producer_consumer_and_admin_all_hold_the_security_settings(
    monkeypatch: pytest.MonkeyPatch, pki: Pki, factory: Callable[..., Any]
) -> None:
    _environment(monkeypatch, pki, "SASL_SSL", "SCRAM-SHA-512")
    client = _inner(factory(Settings().kafka))
    assert client._security_protocol == "SASL_SSL"
    assert client._sasl_mechanism == "SCRAM-SHA-512"
    assert (client._sasl_plain_username, client._sasl_plain_password) == ("fleetplace", PASSWORD)
    assert _ca_names(client._ssl_context) == ["fleetplace-test-ca"]


async def _tls_server(pki: Pki, seen: list[dict[str, Any]]) -> asyncio.Server:
    """A TLS endpoint that requires a client certificate from our CA (it speaks no Kafka)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    context.load_verify_locations(pki.ca)
    context.verify_mode = ssl.CERT_REQUIRED

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(writer.get_extra_info("peercert"))
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)


def _common_name(cert: dict[str, Any]) -> str:
    return str(dict(rdn[0] for rdn in cert["subject"])["commonName"])


async def test_the_tls_context_completes_a_mutual_handshake_and_a_foreign_ca_does_not(
    tmp_path: Path, pki: Pki
) -> None:
    seen: list[dict[str, Any]] = []
    server = await _tls_server(pki, seen)
    port = server.sockets[0].getsockname()[1]
    try:
        settings = KafkaSettings(
            bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SSL",
            ssl_cafile=str(pki.ca),
            ssl_certfile=str(pki.client_cert),
            ssl_keyfile=str(pki.client_key),
        )
        context = client_options(settings)["ssl_context"]
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="127.0.0.1")
        writer.close()
        # the client may finish its handshake before the server's side has run: give the server
        # up to 10 s (the loop ends as soon as it has seen the certificate)
        for _ in range(1000):
            if seen:
                break
            await asyncio.sleep(0.01)
        assert [_common_name(c) for c in seen] == ["fleetplace-worker"]

        other = make_pki(tmp_path, ca_name="someone-elses-ca")
        foreign = client_options(settings.model_copy(update={"ssl_cafile": str(other.ca)}))["ssl_context"]
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection("127.0.0.1", port, ssl=foreign, server_hostname="127.0.0.1")
    finally:
        server.close()
        await server.wait_closed()


async def test_the_kafka_producer_connects_with_the_client_certificate(pki: Pki) -> None:
    """aiokafka itself does the mutual handshake with the context built from KAFKA_SSL_* (the server
    then hangs up, as it speaks no Kafka, so the start fails after the handshake)."""
    seen: list[dict[str, Any]] = []
    server = await _tls_server(pki, seen)
    port = server.sockets[0].getsockname()[1]
    try:
        settings = KafkaSettings(
            bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SSL",
            ssl_cafile=str(pki.ca),
            ssl_certfile=str(pki.client_cert),
            ssl_keyfile=str(pki.client_key),
        )
        producer = make_producer(settings, request_timeout_ms=2000, metadata_max_age_ms=2000)
        with pytest.raises(BusConnectionError):
            await start_client(producer)
        assert seen and _common_name(seen[0]) == "fleetplace-worker"
    finally:
        server.close()
        await server.wait_closed()
