"""Settings from the environment, and secrets kept out of repr and logs."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
import structlog
from pydantic import ValidationError

from fleetplace.shared.bus.errors import BusConfigError
from fleetplace.shared.bus.kafka import client_options
from fleetplace.shared.logging import configure_logging, get_logger
from fleetplace.shared.settings import KafkaSettings, Settings

PASSWORD = "hunter2-sasl-password"
TOKEN = "debug-token-9f8e7d"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No FLEETPLACE_* or KAFKA_* variable of the developer's shell leaks into these tests."""
    for name in list(os.environ):
        if name.startswith(("FLEETPLACE_", "KAFKA_")):
            monkeypatch.delenv(name)


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka-1:9093,kafka-2:9093")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "fleetplace")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", PASSWORD)
    monkeypatch.setenv("FLEETPLACE_DEBUG_TOKEN", TOKEN)
    monkeypatch.setenv("FLEETPLACE_TOPIC_PREFIX", "prod.")
    monkeypatch.setenv("FLEETPLACE_CLOCK", "topic")


@pytest.fixture(autouse=True)
def _restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def test_defaults() -> None:
    settings = Settings()
    assert settings.kafka.bootstrap_servers is None
    assert settings.topic_prefix == "fleetplace."
    assert settings.http_host == "127.0.0.1"
    assert (settings.resync_interval_s, settings.addon_resync_interval_s) == (600, 300)
    assert settings.clock == "wall" and settings.max_record_bytes == 1024 * 1024


@pytest.mark.usefixtures("secret_env")
def test_reads_standard_kafka_variables_and_fleetplace_prefix() -> None:
    settings = Settings()
    assert settings.kafka.bootstrap_servers == "kafka-1:9093,kafka-2:9093"
    assert settings.kafka.sasl_mechanism == "SCRAM-SHA-512"
    assert settings.topic_prefix == "prod." and settings.clock == "topic"
    assert settings.debug_token is not None and settings.debug_token.get_secret_value() == TOKEN
    options = client_options(settings.kafka)
    assert options["sasl_plain_password"] == PASSWORD
    assert options["security_protocol"] == "SASL_PLAINTEXT"


@pytest.mark.usefixtures("secret_env")
def test_secrets_are_absent_from_repr_str_and_dumps() -> None:
    settings = Settings()
    for text in (repr(settings), str(settings), repr(settings.kafka), str(settings.model_dump())):
        assert PASSWORD not in text and TOKEN not in text
    assert PASSWORD not in settings.model_dump_json() and TOKEN not in settings.model_dump_json()


@pytest.mark.usefixtures("secret_env")
def test_secrets_are_absent_from_json_logs() -> None:
    stream = io.StringIO()
    configure_logging("debug", "json", stream=stream)
    settings = Settings()
    log = get_logger("fleetplace.test")
    log.info("starting", settings=settings.model_dump(), kafka=repr(settings.kafka), placement="ns1/demo")
    log.info("connecting", sasl_password=PASSWORD, debug_token=TOKEN, password=PASSWORD)
    logging.getLogger("aiokafka").warning("foreign log line")
    output = stream.getvalue()
    assert PASSWORD not in output and TOKEN not in output
    lines = [json.loads(line) for line in output.splitlines()]
    assert lines[0]["event"] == "starting" and lines[0]["placement"] == "ns1/demo"
    assert lines[0]["level"] == "info" and lines[0]["timestamp"].endswith("Z")
    assert lines[1]["sasl_password"] == "**********"
    assert lines[2]["event"] == "foreign log line" and lines[2]["logger"] == "aiokafka"


def test_console_format_renders() -> None:
    stream = io.StringIO()
    configure_logging("info", "console", stream=stream)
    get_logger("t").info("hello", cluster="c1")
    assert "hello" in stream.getvalue() and "cluster=c1" in stream.getvalue()


def test_sasl_without_credentials_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    with pytest.raises(ValidationError, match="KAFKA_SASL_USERNAME"):
        KafkaSettings()


def test_tls_with_an_unreadable_ca_file_is_a_config_error() -> None:
    settings = KafkaSettings(
        bootstrap_servers="k:9093", security_protocol="SSL", ssl_cafile="/nonexistent/ca.pem"
    )
    with pytest.raises(BusConfigError, match="TLS"):
        client_options(settings)


def test_missing_bootstrap_is_a_config_error() -> None:
    with pytest.raises(BusConfigError, match="KAFKA_BOOTSTRAP_SERVERS"):
        client_options(KafkaSettings(bootstrap_servers=None))


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_context_loads_ca_cert_and_key_files(tmp_path: Path) -> None:
    key, cert = tmp_path / "client.key", tmp_path / "client.pem"
    subject = ["-subj", "/CN=fleetplace-test", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", *subject],
        check=True,
        capture_output=True,
    )
    settings = KafkaSettings(
        bootstrap_servers="k:9093",
        security_protocol="SSL",
        ssl_cafile=str(cert),
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
    )
    context = client_options(settings)["ssl_context"]
    assert context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "fleetplace-test"),),)]


async def test_idempotent_producers_follow_kafka_enable_idempotence(monkeypatch: pytest.MonkeyPatch) -> None:
    from fleetplace.shared.bus.kafka import make_producer

    monkeypatch.delenv("KAFKA_ENABLE_IDEMPOTENCE", raising=False)
    # "auto": a worker probes the broker (tests/bus/test_delivery.py); a tool's producer stays plain
    assert KafkaSettings(bootstrap_servers="127.0.0.1:9").enable_idempotence == "auto"
    plain = make_producer(KafkaSettings(bootstrap_servers="127.0.0.1:9"))
    try:
        assert plain._txn_manager is None
    finally:
        await plain.stop()
    monkeypatch.setenv("KAFKA_ENABLE_IDEMPOTENCE", "true")
    settings = KafkaSettings(bootstrap_servers="127.0.0.1:9")
    assert settings.enable_idempotence == "true"
    producer = make_producer(settings)  # not started: nothing is sent
    try:
        assert producer._txn_manager is not None  # aiokafka keeps producer ids only when idempotent
    finally:
        await producer.stop()


def test_an_invalid_value_is_reported_by_its_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from fleetplace.shared.settings import describe

    monkeypatch.setenv("FLEETPLACE_HTTP_PORT", "abc")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL")
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert describe(raised.value) == (
        "KAFKA_SECURITY_PROTOCOL: must be 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT' or 'SASL_SSL': 'SASL'"
    )
    monkeypatch.delenv("KAFKA_SECURITY_PROTOCOL")
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert describe(raised.value) == "FLEETPLACE_HTTP_PORT: not a valid integer: 'abc'"


def test_a_rule_across_variables_is_reported_by_its_own_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    from fleetplace.shared.settings import describe

    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert describe(raised.value) == (
        "KAFKA_SECURITY_PROTOCOL=SASL_SSL needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"
    )


@pytest.mark.parametrize("port", ["-1", "65536", "8080.5", "eighty", "{}"])
def test_every_bad_port_names_the_variable_and_never_the_field(
    monkeypatch: pytest.MonkeyPatch, port: str
) -> None:
    from fleetplace.shared.settings import describe

    monkeypatch.setenv("FLEETPLACE_HTTP_PORT", port)
    with pytest.raises(ValidationError) as raised:
        Settings()
    message = describe(raised.value)
    assert message.startswith("FLEETPLACE_HTTP_PORT: ") and repr(port) in message
    assert "http_port" not in message


def test_the_group_session_sets_the_heartbeat_and_the_stall_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from fleetplace.services.lifecycle import heartbeat_interval_ms
    from fleetplace.services.scheduler.worker import stall_seconds
    from fleetplace.shared.settings import describe

    # Kafka's default broker minimum, the heartbeat every second, a standstill of 4.5 s expelled
    assert Settings().group_session_timeout_ms == 6000
    assert (heartbeat_interval_ms(6000), stall_seconds(6000)) == (1000, 4.5)
    # a short session heartbeats three times per session, and a stall is assumed sooner
    monkeypatch.setenv("FLEETPLACE_GROUP_SESSION_TIMEOUT_MS", "2400")
    session = Settings().group_session_timeout_ms
    assert (heartbeat_interval_ms(session), stall_seconds(session)) == (800, 1.1)
    monkeypatch.setenv("FLEETPLACE_GROUP_SESSION_TIMEOUT_MS", "500")
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert describe(raised.value) == (
        "FLEETPLACE_GROUP_SESSION_TIMEOUT_MS: must be greater than or equal to 1000: '500'"
    )


def test_the_instance_s_own_steps_stay_well_inside_the_stall_bound() -> None:
    from fleetplace.services.scheduler.worker import STEP_S, stall_seconds, step_seconds

    # a slice of evaluation, and the stall watcher's wait: a quarter of a second by default; under
    # a short session a quarter of its stall bound, so neither the instance's own work nor its own
    # waiting is taken for a standstill that gets it expelled from the group
    assert step_seconds(6000) == STEP_S == 0.25
    assert step_seconds(1000) == pytest.approx(stall_seconds(1000) / 4) and step_seconds(1000) > 0.04
    for session in range(1000, 60_001, 250):
        assert 0 < step_seconds(session) <= min(STEP_S, stall_seconds(session) / 4)


@pytest.mark.parametrize("url", ["x", "prometheus:9090", "ftp://prometheus", "http://", ""])
def test_a_prometheus_endpoint_that_is_no_http_url_is_refused_when_settings_load(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    from fleetplace.shared.settings import describe

    monkeypatch.setenv("FLEETPLACE_PROMETHEUS_ENDPOINTS", orjson.dumps({"main": url}).decode())
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert describe(raised.value).startswith(
        "FLEETPLACE_PROMETHEUS_ENDPOINTS: endpoint 'main' is not an http:// or https:// URL"
    )
    monkeypatch.setenv("FLEETPLACE_PROMETHEUS_ENDPOINTS", '{"main": "https://prometheus.example:9090/prom"}')
    assert Settings().prometheus_endpoints == {"main": "https://prometheus.example:9090/prom"}
