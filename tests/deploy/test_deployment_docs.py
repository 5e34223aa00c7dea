"""docs/deployment.md's Kubernetes walkthrough names only files and values that exist, and its
example values render."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetplace.services import kafka_access
from tests.deploy import chart
from tests.deploy.chart import CHART, ROOT, of_kind

DOC = ROOT / "docs" / "deployment.md"
SECTION = "## Kubernetes beside Strimzi"
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
WORKERS = sorted(VALUES["workers"])
# `kafka.strimzi.cluster`, `workers.<name>.replicas`, `topics.mode: strimzi` (the key before ": ")
VALUE_NAME = re.compile(r"`([a-zA-Z][\w<>]*(?:\.[\w<>]+)*)(?::[^`]*)?`")
COMPOSE_PATH = re.compile(r"compose/[\w./-]*[\w/]")


def _section() -> str:
    text = DOC.read_text()
    assert SECTION in text
    return text[text.index(SECTION) :]


def _has(values: Mapping[str, Any], dotted: str) -> bool:
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _value_names(text: str) -> set[str]:
    """Backticked names whose first part is a top-level value (`keda.enabled`, `topicPrefix`)."""
    names = set()
    for name in VALUE_NAME.findall(text):
        if name.split(".")[0] in VALUES:
            names.update(name.replace("<name>", w) for w in WORKERS) if "<name>" in name else names.add(name)
    return names


def test_every_value_the_walkthrough_names_exists() -> None:
    names = _value_names(_section())
    assert {
        "kafka.strimzi.enabled",
        "topics.workPartitions",
        "workers.hub.mode",
    } <= names  # the pattern works
    assert sorted(n for n in names if not _has(VALUES, n)) == []


def test_every_file_the_walkthrough_names_exists() -> None:
    paths = set(COMPOSE_PATH.findall(_section()))
    assert "compose/helm/fleetplace" in paths
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_the_walkthroughs_values_render_beside_strimzi(tmp_path: Path) -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", _section(), flags=re.S)
    assert len(blocks) == 1
    chart.build_helm()
    (tmp_path / "my-values.yaml").write_text(blocks[0])
    objects = chart.render([str(tmp_path / "my-values.yaml")])
    assert {chart.component(u) for u in of_kind(objects, "KafkaUser")} == {"scheduler", "queues", "rollout"}
    assert len(of_kind(objects, "KafkaTopic")) == len(kafka_access.topics_json())


@pytest.mark.parametrize("command", ["helm install", "helm upgrade"])
def test_the_documented_helm_commands_point_at_the_chart(command: str) -> None:
    lines = [line for line in _section().split("`") if line.startswith(command)]
    assert lines
    for line in lines:
        assert " compose/helm/fleetplace " in line
