"""The CRDs of the projects the chart renders resources for, from their published Go modules at
pinned versions (fetched through the Go module proxy and checked against the checksum database by
`go mod download`):

* KEDA's `ScaledObject`: github.com/kedacore/keda/v2, config/crd/bases;
* the Prometheus Operator's `PodMonitor`: github.com/prometheus-operator/prometheus-operator,
  example/prometheus-operator-crd.

Strimzi publishes no package here that carries its CRDs (its Maven artifact io.strimzi:api holds
the Java model only): the KafkaUser and KafkaTopic fields are checked against Strimzi's documented
v1 API in test_strimzi_resources.py instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import yaml

KEDA = "github.com/kedacore/keda/v2@v2.18.0"
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
# (module, path inside it) per kind the chart renders
CRDS = {
    "ScaledObject": (KEDA, "config/crd/bases/keda.sh_scaledobjects.yaml"),
    "PodMonitor": (
        PROMETHEUS_OPERATOR,
        "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
    ),
}


@cache
def module_dir(module: str) -> Path:
    """The module's source, downloaded once into Go's module cache."""
    with tempfile.TemporaryDirectory() as outside_any_module:
        done = subprocess.run(
            ["go", "mod", "download", "-json", module],
            cwd=outside_any_module,
            env={**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    info = json.loads(done.stdout or "{}")
    if done.returncode != 0 or "Dir" not in info:
        raise RuntimeError(f"go mod download {module}: {info.get('Error') or done.stderr.strip()}")
    return Path(info["Dir"])


def crd_path(kind: str) -> Path:
    module, path = CRDS[kind]
    return module_dir(module) / path


def crd(kind: str) -> dict[str, Any]:
    return yaml.safe_load(crd_path(kind).read_text())  # type: ignore[no-any-return]


def schema(kind: str, version: str) -> dict[str, Any]:
    """The openAPIV3Schema the CRD serves for `version`."""
    (served,) = (v for v in crd(kind)["spec"]["versions"] if v["name"] == version and v["served"])
    return served["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]
