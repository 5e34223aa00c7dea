"""A hub-sized object file: 20,000 ManagedClusters (about 6 MB of YAML, as `kubectl get -o yaml`
writes them) and one Placement, and how long `simulate` and `publish --dry-run` take to read it.

    python -m tests.bench.large_fleet            # writes the file to a temp dir and times both
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

GROUP = "cluster.open-cluster-management.io"


def hub_cluster(i: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ManagedCluster",
        "metadata": {
            "name": f"cluster-{i:05d}",
            "labels": {
                f"{GROUP}/clusterset": "global",
                "region": f"region-{i % 7}",
                "env": "prod" if i % 3 else "staging",
                "vendor": "OpenShift",
            },
            "resourceVersion": str(100_000 + i),
        },
        "spec": {"hubAcceptsClient": True, "leaseDurationSeconds": 60},
        "status": {
            "allocatable": {"cpu": f"{4 + i % 60}", "memory": f"{16 + i % 240}Gi"},
            "clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "AWS"}],
        },
    }


def fleet(clusters: int = 20_000) -> list[dict[str, Any]]:
    return [
        {"apiVersion": f"{GROUP}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "global"}},
        {
            "apiVersion": f"{GROUP}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": "apps", "name": "global"},
            "spec": {"clusterSet": "global"},
        },
        *(hub_cluster(i) for i in range(clusters)),
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": "apps", "name": "web"},
            "spec": {
                "numberOfClusters": 3,
                "predicates": [
                    {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
                ],
            },
        },
    ]


def write_fleet(path: Path, clusters: int = 20_000) -> Path:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    path.write_text(yaml.dump_all(fleet(clusters), Dumper=dumper, sort_keys=False))
    return path


def _time(args: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_fleet(Path(tmp) / "hub.yaml")
        size = path.stat().st_size / 1e6
        text = path.read_text()
        t0 = time.perf_counter()
        list(yaml.safe_load_all(text))
        pure = time.perf_counter() - t0
        from fleetplace.shared.api.objects import load_yaml

        t0 = time.perf_counter()
        load_yaml(text, str(path))
        loader = time.perf_counter() - t0
        cli = [sys.executable, "-m", "fleetplace.services.cli"]
        simulate = _time([*cli, "simulate", str(path), "--now", "2026-03-01T12:00:00Z"])
        publish = _time([*cli, "publish", str(path), "--dry-run"])
        print(f"file: {size:.1f} MB, 20,000 clusters")
        print(f"yaml.safe_load_all (pure Python): {pure:.1f} s; fleetplace's loader: {loader:.1f} s")
        print(f"simulate: {simulate:.1f} s; publish --dry-run: {publish:.1f} s")


if __name__ == "__main__":
    main()
