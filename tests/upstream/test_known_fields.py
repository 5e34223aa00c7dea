"""Admission knows every field the pinned upstream CRDs define: an object that fills every field
of its CRD's schema has no unknown field (kubectl's strict validation would accept it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from fleetplace.shared.api.fields import API_VERSIONS, unknown_fields
from tests.upstream.crds import crd_documents, openapi_schema


def every_field(schema: Mapping[str, Any]) -> Any:
    """A value filling every field `schema` defines (its types only roughly right)."""
    if schema.get("x-kubernetes-int-or-string"):
        return 1
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        out = {name: every_field(sub) for name, sub in schema.get("properties", {}).items()}
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            out["key"] = every_field(additional)
        return out
    if kind == "array":
        items = schema.get("items")
        return [every_field(items)] if isinstance(items, Mapping) else []
    if kind == "integer":
        return 1
    if kind == "boolean":
        return True
    if "enum" in schema:
        return schema["enum"][0]
    return "x"


KINDS = sorted(
    (group, kind, version["name"])
    for (group, kind), crd in crd_documents().items()
    for version in crd["spec"]["versions"]
    if version.get("served") and f"{group}/{version['name']}" in API_VERSIONS.get(kind, ())
)


def test_every_kind_fleetplace_reads_is_checked() -> None:
    # SIG-MC PlacementDecisions are only written (tests/upstream/test_written_objects.py)
    read = {(g, k) for g, k in crd_documents() if (g, k) != ("multicluster.x-k8s.io", "PlacementDecision")}
    assert {(g, k) for g, k, _ in KINDS} == read


@pytest.mark.parametrize(("group", "kind", "version"), KINDS, ids=[f"{k}.{v}" for _, k, v in KINDS])
def test_no_upstream_field_is_unknown(group: str, kind: str, version: str) -> None:
    doc = every_field(openapi_schema(group, kind, version))
    doc.update(apiVersion=f"{group}/{version}", kind=kind, metadata={"name": "n", "namespace": "ns"})
    assert unknown_fields(doc) == []
