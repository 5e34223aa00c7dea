"""`fleetplace worker ...` as an operator meets it: a taken port, bad settings, the help screen."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fleetplace.shared.bus.topics import Topics


def _worker(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETPLACE_", "KAFKA_"))}
    return subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", "worker", *args],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("kind", ["scheduler", "queues", "scores"])
def test_a_worker_on_a_taken_port_names_the_port_and_the_setting_and_exits_2(
    kind: str, broker: str, topics: Topics, taken_port: int
) -> None:
    done = _worker(kind, "--bootstrap", broker, "--prefix", topics.prefix, "--http-port", str(taken_port))
    assert done.returncode == 2, done.stderr
    assert f"HTTP port {taken_port} on 127.0.0.1 is already in use" in done.stderr
    assert "--http-port" in done.stderr and "FLEETPLACE_HTTP_PORT" in done.stderr
    # the port is bound before any Kafka client starts: nothing to stop, nothing left open
    assert "Traceback" not in done.stderr
    assert "Unclosed" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_taken_port_from_the_environment_is_reported_the_same_way(
    broker: str, topics: Topics, taken_port: int
) -> None:
    done = _worker(
        "scheduler",
        "--bootstrap",
        broker,
        "--prefix",
        topics.prefix,
        env={"FLEETPLACE_HTTP_PORT": str(taken_port)},
    )
    assert done.returncode == 2
    assert f"HTTP port {taken_port}" in done.stderr and "Traceback" not in done.stderr


def test_sasl_without_credentials_names_the_variables_not_an_empty_field() -> None:
    done = _worker(
        "scheduler",
        "--bootstrap",
        "127.0.0.1:9",
        env={"KAFKA_SECURITY_PROTOCOL": "SASL_SSL"},
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: invalid settings in the environment: "
        "KAFKA_SECURITY_PROTOCOL=SASL_SSL needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"
    )


def test_an_invalid_number_in_the_environment_names_the_variable_and_the_value() -> None:
    done = _worker("scheduler", "--bootstrap", "127.0.0.1:9", env={"FLEETPLACE_MAX_RECORD_BYTES": "lots"})
    assert done.returncode == 2
    assert "FLEETPLACE_MAX_RECORD_BYTES: not a valid integer: 'lots'" in done.stderr
    assert "max_record_bytes" not in done.stderr


@pytest.mark.parametrize("kind", ["scheduler", "queues", "scores"])
def test_worker_help_shows_defaults_and_variables_without_python_type_names(kind: str) -> None:
    done = _worker(kind, "--help", env={"COLUMNS": "200"})
    assert done.returncode == 0
    port_line = next(line for line in done.stdout.splitlines() if "--http-port" in line)
    assert "[default: 8080]" in port_line and "FLEETPLACE_HTTP_PORT" in port_line
    for python_type in ("<str>", "<int>", "<list[str]>", "<float>"):
        assert python_type not in done.stdout
