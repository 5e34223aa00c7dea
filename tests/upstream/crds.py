"""The upstream CustomResourceDefinitions for the tests: the files come from the product
(shared/upstream_crds.py, the Go modules pinned in shared/upstream/go.mod); here they are parsed.

- `upstream_crds()`: the CRD YAML files, in a fixed order (what an API server is given).
- `crd_documents()`: each CRD parsed, keyed by its `(group, kind)`.
- `openapi_schema(group, kind, version)`: the `openAPIV3Schema` of one served version.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

from fleetplace.shared.upstream_crds import (
    CLUSTER_INVENTORY_API,
    CRD_FILES,
    GO_MOD,
    OCM_API,
    CRDFile,
    UpstreamUnavailable,
    module_dir,
    pinned_version,
    upstream_crds,
)

__all__ = [
    "CLUSTER_INVENTORY_API",
    "CRD_FILES",
    "GO_MOD",
    "OCM_API",
    "CRDFile",
    "UpstreamUnavailable",
    "crd_documents",
    "module_dir",
    "openapi_schema",
    "pinned_version",
    "served_versions",
    "upstream_crds",
]


@functools.cache
def crd_documents() -> dict[tuple[str, str], dict[str, Any]]:
    """Each upstream CRD, parsed, keyed by `(spec.group, spec.names.kind)`."""
    crds: dict[tuple[str, str], dict[str, Any]] = {}
    for path in upstream_crds():
        document = yaml.safe_load(path.read_text())
        if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
            raise UpstreamUnavailable(f"{path.name}: not a CustomResourceDefinition")
        spec = document["spec"]
        crds[(spec["group"], spec["names"]["kind"])] = document
    return crds


def served_versions(group: str, kind: str) -> list[str]:
    """The versions the CRD of `group`/`kind` serves."""
    crd = crd_documents()[(group, kind)]
    return [v["name"] for v in crd["spec"]["versions"] if v.get("served", False)]


def openapi_schema(group: str, kind: str, version: str) -> dict[str, Any]:
    """The `openAPIV3Schema` of a served version; KeyError names what is missing."""
    crd = crd_documents()[(group, kind)]
    for v in crd["spec"]["versions"]:
        if v["name"] == version and v.get("served", False):
            schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"{kind}.{group} serves no version {version!r} (serves {served_versions(group, kind)})")
