"""compose/ without a Docker engine: the compose file parses, has the services a deployment needs,
and every fleetplace command, setting and path it relies on exists."""

from __future__ import annotations

import base64
import fnmatch
import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.shared.settings import KafkaSettings, Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose" / "docker-compose.yaml"
DOCKERFILE = ROOT / "compose" / "Dockerfile"

# service -> the fleetplace command it must run
WORKLOADS = {
    "topics": ["topics", "create"],
    "scheduler": ["worker", "scheduler"],
    "queues": ["worker", "queues"],
    "rollout": ["worker", "rollout"],
    "scores": ["worker", "scores"],
}


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _services() -> dict[str, dict[str, Any]]:
    services = _compose()["services"]
    assert isinstance(services, dict)
    return services


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    assert isinstance(env, dict), "environment as a mapping, so shared settings merge with <<"
    return {str(k): str(v) for k, v in env.items()}


def _resolve(tokens: list[str]) -> tuple[Any, list[str], list[str]]:
    """The CLI command a token list names: (command, its path, the remaining arguments)."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    rest = list(tokens)
    while hasattr(command, "get_command") and rest and not rest[0].startswith("-"):
        name = rest.pop(0)
        context = command.make_context("fleetplace", [], resilient_parsing=True)
        sub = command.get_command(context, name)
        if sub is None:
            raise AssertionError(f"`fleetplace {' '.join([*path, name])}` is not a command of the CLI")
        command, path = sub, [*path, name]
    assert not hasattr(command, "get_command"), f"`fleetplace {' '.join(path)}` is a group, not a command"
    return command, path, rest


def test_compose_runs_kafka_in_kraft_mode_the_topic_setup_and_both_workers() -> None:
    services = _services()
    assert {"kafka", *WORKLOADS} <= set(services)
    kafka = services["kafka"]
    assert str(kafka["image"]).startswith("apache/kafka:")
    env = _env(kafka)
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{env['KAFKA_NODE_ID']}@")
    assert "CONTROLLER://" in env["KAFKA_LISTENERS"]
    assert not any("zookeeper" in name.lower() for name in services)
    assert not any("ZOOKEEPER" in key for key in env)
    # KRaft's cluster id is a 16-byte UUID in unpadded base64url
    cluster_id = env["CLUSTER_ID"]
    raw = base64.urlsafe_b64decode(cluster_id + "==")
    assert len(raw) == 16 and base64.urlsafe_b64encode(raw).decode().rstrip("=") == cluster_id
    # topics are created by `fleetplace topics create`, never by the broker on first use
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    # ports are published on the host's loopback only
    for service in services.values():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), port


@pytest.mark.parametrize("service", sorted(WORKLOADS))
def test_each_fleetplace_service_runs_an_existing_cli_command(service: str) -> None:
    spec = _services()[service]
    command = spec["command"]
    assert isinstance(command, list), "exec form: no shell between compose and fleetplace"
    leaf, path, rest = _resolve(command)
    assert path == WORKLOADS[service]
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    # the options the service passes parse as that command's options
    leaf.make_context(" ".join(path), list(rest))


def test_the_workers_find_kafka_and_use_only_settings_fleetplace_knows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = _services()
    advertised = {
        listener.split("://", 1)[1]
        for listener in _env(services["kafka"])["KAFKA_ADVERTISED_LISTENERS"].split(",")
    }
    for name in WORKLOADS:
        env = _env(services[name])
        assert env["KAFKA_BOOTSTRAP_SERVERS"] in advertised, name
        for key in env:
            if key.startswith("FLEETPLACE_"):
                assert key.removeprefix("FLEETPLACE_").lower() in Settings.model_fields, key
            else:
                assert key.startswith("KAFKA_"), key
                assert key.removeprefix("KAFKA_").lower() in KafkaSettings.model_fields, key
        with monkeypatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            settings = Settings()  # every value validates
        assert settings.kafka.bootstrap_servers == env["KAFKA_BOOTSTRAP_SERVERS"]
    # the one-shot setup waits for a healthy broker; the workers wait for the topics
    assert services["topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert services["topics"]["restart"] == "no"
    for worker in ("scheduler", "queues"):
        assert services[worker]["depends_on"]["topics"]["condition"] == "service_completed_successfully"


def test_the_image_is_built_from_the_repository_and_runs_fleetplace() -> None:
    for name in WORKLOADS:
        build = _services()[name]["build"]
        context = (COMPOSE.parent / build["context"]).resolve()
        assert context == ROOT
        assert (context / build["dockerfile"]).resolve() == DOCKERFILE
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r'^ENTRYPOINT \["fleetplace"\]$', text, re.MULTILINE)
    ignored = [
        line.strip()
        for line in (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        source
        for line in text.splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
        if not source.startswith("--")
    ]
    assert {"pyproject.toml", "shared", "services"} <= set(copied)
    for source in copied:
        assert (ROOT / source).exists(), source
        assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source
