"""The upstream CustomResourceDefinitions, read from the pinned upstream Go modules: what a control
plane is given (`make hub`, the demo's hub act, the hub tests).

The versions are pinned once, in shared/upstream/go.mod (OCM's api module and SIG-Multicluster's
cluster-inventory-api). Go only fetches them: `go mod download -json <module>@<version>` puts the
module in Go's module cache (downloaded once, then read from the cache) and says where. Nothing
here is copied by hand from upstream, so a version bump in go.mod is the whole upgrade.

`upstream_crds()` gives the CRD YAML files, in a fixed order (what an API server is given);
`UpstreamUnavailable` says why they cannot be had (no Go, the proxy refused a module).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GO_MOD = Path(__file__).with_name("upstream") / "go.mod"

OCM_API = "open-cluster-management.io/api"
CLUSTER_INVENTORY_API = "sigs.k8s.io/cluster-inventory-api"


class UpstreamUnavailable(RuntimeError):
    """Go is missing, or the Go module proxy refused a pinned module."""


@dataclass(frozen=True)
class CRDFile:
    """Where one CRD lives inside an upstream module."""

    module: str
    path: str  # inside the module


# The CRDs fleetplace reads or writes objects of, in the order an API server should be given them.
CRD_FILES: tuple[CRDFile, ...] = (
    CRDFile(OCM_API, "cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml"),
    CRDFile(
        OCM_API, "cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml"
    ),
    CRDFile(
        OCM_API,
        "cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml",
    ),
    CRDFile(OCM_API, "cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml"),
    CRDFile(
        OCM_API, "cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml"
    ),
    CRDFile(
        OCM_API, "cluster/v1alpha1/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml"
    ),
    CRDFile(CLUSTER_INVENTORY_API, "config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml"),
    CRDFile(CLUSTER_INVENTORY_API, "config/crd/bases/multicluster.x-k8s.io_placementdecisions.yaml"),
)

_REQUIRE = re.compile(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)", re.MULTILINE)


def pinned_version(module: str) -> str:
    """The version go.mod requires of an upstream module."""
    for name, version in _REQUIRE.findall(GO_MOD.read_text()):
        if name == module:
            return str(version)
    raise UpstreamUnavailable(f"{GO_MOD.name}: no require line for {module}")


@functools.cache
def module_dir(module: str) -> Path:
    """The directory of the pinned version of `module` in Go's module cache, downloaded if needed."""
    go = shutil.which("go")
    if go is None:
        raise UpstreamUnavailable("the Go toolchain (`go`) is not on PATH; it fetches the upstream CRDs")
    version = pinned_version(module)
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    result = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        cwd=GO_MOD.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    try:
        info: dict[str, Any] = json.loads(result.stdout) if result.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    if result.returncode != 0 or "Error" in info or "Dir" not in info:
        reason = info.get("Error") or result.stderr.strip() or f"exit status {result.returncode}"
        raise UpstreamUnavailable(f"go mod download {module}@{version}: {reason}")
    return Path(info["Dir"])


def upstream_crds() -> list[Path]:
    """The YAML files of the upstream CRDs fleetplace's objects must validate against."""
    paths = [module_dir(f.module) / f.path for f in CRD_FILES]
    for path in paths:
        if not path.is_file():
            raise UpstreamUnavailable(f"{path.name}: not in the pinned upstream module")
    return paths
