"""Every Kubernetes object fleetplace writes is accepted by a real API server and reads back equal.

The objects are those of tests/upstream/test_written_objects.py (`simulate --output sig-mc`, the
scheduler's `placement-decisions` and `sigmc-placement-decisions` records, `export` in both formats,
and the world's own inputs), over a few fixed worlds with long and odd names (placement names of 74
and 253 characters, dotted; a 63-character namespace), `sortBy: Score`, decision groups and more
than one decision page. They are applied as a real writer applies them: server-side apply with
strict field validation, the status through the status subresource where the CRD has one. Each must
be accepted and read back equal to what was written; fields the API server adds (defaults,
metadata it owns) are the only difference allowed.

The upstream objects of docs/examples are applied the same way. A negative control shows the server
refuses what the upstream CRDs refuse (a slice's `clusterProfileRef.apiVersion`, a string `score`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetplace.shared.control_plane import ApiError, ControlPlane, resource_path
from tests.upstream.test_written_objects import _written

DOCS_EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
UPSTREAM_GROUPS = ("cluster.open-cluster-management.io", "multicluster.x-k8s.io")
MANAGER = "fleetplace"
pytestmark = pytest.mark.integration
# Metadata the API server sets itself whatever a writer sends (an example's creationTimestamp stands
# for the age a hub would report); every other written field must read back as written.
SERVER_OWNED_METADATA = frozenset(
    {"creationTimestamp", "uid", "resourceVersion", "generation", "managedFields", "deletionTimestamp"}
)

LONG_74 = "a" * 30 + "." + "b" * 20 + "." + "c-d" * 7 + "e"
LONG_253 = ".".join(["p" * 63, "q" * 63, "r" * 63, "s-" * 30 + "t"])
NAMESPACE_63 = "n" + "s-" * 30 + "xy"
assert (len(LONG_74), len(LONG_253), len(NAMESPACE_63)) == (74, 253, 63)

WORLDS: dict[str, dict[str, Any]] = {
    "short names, profiles, groups": {
        "namespace": "apps",
        "profile_namespace": "fleet",
        "placement": "web",
        "clusters": ["east-1", "east-2", "west.1"],
        "profiles": {"east-2", "west.1"},
        "sort_by_score": False,
        "groups": True,
        "managed_namespaces": True,
    },
    "74-character placement, 63-character namespace, sortBy Score": {
        "namespace": NAMESPACE_63,
        "profile_namespace": "p" * 63,
        "placement": LONG_74,
        "clusters": ["c" * 63, "k." + "d" * 60, "e"],
        "profiles": {"e"},
        "sort_by_score": True,
        "groups": True,
        "managed_namespaces": False,
    },
    "253-character placement, 205 clusters (three decision pages), sortBy Score": {
        "namespace": "z",
        "profile_namespace": "fleet",
        "placement": LONG_253,
        "clusters": [f"c{i:03d}" for i in range(205)],
        "profiles": set(),
        "sort_by_score": True,
        "groups": True,
        "managed_namespaces": True,
    },
}

_subresources: dict[tuple[str, str, str], frozenset[str]] = {}


def _status_subresource(hub: ControlPlane, obj: Mapping[str, Any]) -> bool:
    """Whether the API server serves `status` of this kind as a subresource (discovery)."""
    api_version = str(obj["apiVersion"])
    key = (hub.server, api_version, str(obj["kind"]))
    if key not in _subresources:
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        resources = hub.request("GET", base)["resources"]
        plural = next(r["name"] for r in resources if r["kind"] == obj["kind"] and "/" not in r["name"])
        _subresources[key] = frozenset(
            r["name"].split("/", 1)[1] for r in resources if r["name"].startswith(plural + "/")
        )
    return "status" in _subresources[key]


def _ensure_namespace(hub: ControlPlane, name: str) -> None:
    hub.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager=MANAGER)


def write(hub: ControlPlane, obj: Mapping[str, Any]) -> Any:
    """Apply `obj` as a real writer does (server-side apply, strict field validation), its status
    through the status subresource when the kind has one; the object as the server then holds it."""
    namespace = obj["metadata"].get("namespace")
    if namespace:
        _ensure_namespace(hub, namespace)
    status = obj.get("status")
    if status is not None and _status_subresource(hub, obj):
        spec_part = {k: v for k, v in obj.items() if k != "status"}
        hub.apply(spec_part, field_manager=MANAGER)
        path = (
            resource_path(hub, obj) + "/status?fieldManager=" + MANAGER + "&force=true&fieldValidation=Strict"
        )
        meta = {k: obj["metadata"][k] for k in ("name", "namespace") if k in obj["metadata"]}
        body = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta, "status": status}
        hub.request("PATCH", path, body, content_type="application/apply-patch+yaml")
    else:
        hub.apply(obj, field_manager=MANAGER)
    return hub.request("GET", resource_path(hub, obj))


def differences(written: Any, read: Any, at: str = "") -> Iterator[str]:
    """Where `read` does not hold `written`: every written field must read back equal; fields only
    the server has (its defaults, the metadata it owns) are allowed."""
    if isinstance(written, Mapping):
        if not isinstance(read, Mapping):
            yield f"{at or '.'}: wrote an object, read {read!r}"
            return
        for key, value in written.items():
            if key not in read:
                yield f"{at}.{key}: written, not read back"
            else:
                yield from differences(value, read[key], f"{at}.{key}")
    elif isinstance(written, list):
        if not isinstance(read, list) or len(read) != len(written):
            yield f"{at}: wrote {len(written)} items, read {read!r}"[:300]
            return
        for i, (w, r) in enumerate(zip(written, read, strict=True)):
            yield from differences(w, r, f"{at}[{i}]")
    elif written != read or type(written) is not type(read):
        yield f"{at}: wrote {written!r}, read {read!r}"


def _label(source: str, obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{source}: {obj['kind']} {meta.get('namespace', '')}/{meta['name']}"


def _check(hub: ControlPlane, source: str, obj: Mapping[str, Any]) -> list[str]:
    try:
        held = write(hub, obj)
    except ApiError as error:
        return [f"{_label(source, obj)}: refused: {error}"]
    meta = {k: v for k, v in obj["metadata"].items() if k not in SERVER_OWNED_METADATA}
    return [f"{_label(source, obj)}: {d}" for d in differences({**obj, "metadata": meta}, held)]


@pytest.mark.parametrize("world", list(WORLDS.values()), ids=list(WORLDS))
def test_the_api_server_accepts_and_holds_every_object_fleetplace_writes(
    hub: ControlPlane, world: dict[str, Any]
) -> None:
    written = _written(world)
    for source in ("simulate --output sig-mc", "export --format ocm", "export --format sig-mc"):
        assert written[source], f"{source} wrote nothing for this world"
    if world["sort_by_score"]:
        scores = [d.get("score") for o in written["export --format ocm"] for d in o["status"]["decisions"]]
        assert any(isinstance(s, int) and s > 0 for s in scores), scores
    if len(world["clusters"]) > 100:
        assert len(written["export --format ocm"]) > 1, "one decision page for more than 100 clusters"
    problems = [p for source, objs in written.items() for obj in objs for p in _check(hub, source, obj)]
    assert problems == []


def test_the_upstream_objects_of_the_docs_examples_are_accepted(hub: ControlPlane) -> None:
    objects = [
        (path.name, obj)
        for path in sorted(DOCS_EXAMPLES.glob("*.yaml"))
        for obj in yaml.safe_load_all(path.read_text())
        if obj and str(obj.get("apiVersion", "")).split("/")[0] in UPSTREAM_GROUPS
    ]
    kinds = {obj["kind"] for _, obj in objects}
    assert {
        "ManagedClusterSet",
        "ManagedCluster",
        "AddOnPlacementScore",
        "Placement",
        "ClusterProfile",
    } <= kinds
    problems = [p for name, obj in objects for p in _check(hub, f"docs/examples/{name}", obj)]
    assert problems == []


def test_an_upstream_managed_cluster_set_with_managed_namespaces_is_held(hub: ControlPlane) -> None:
    clusterset = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": "with-namespaces"},
        "spec": {
            "clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"},
            "managedNamespaces": [{"name": "apps"}, {"name": "monitoring"}],
        },
    }
    assert _check(hub, "upstream", clusterset) == []


def _first(written: dict[str, list[dict[str, Any]]], source: str) -> dict[str, Any]:
    return yaml.safe_load(yaml.safe_dump(written[source][0]))  # a deep copy


def test_the_server_refuses_what_the_upstream_crds_refuse(hub: ControlPlane) -> None:
    """The negative control: were fleetplace to write these, the tests above would fail."""
    written = _written(WORLDS["74-character placement, 63-character namespace, sortBy Score"])
    good_slice = _first(written, "export --format sig-mc")
    assert _check(hub, "control", good_slice) == []
    slice_ = _first(written, "export --format sig-mc")
    slice_["decisions"][0]["clusterProfileRef"]["apiVersion"] = "multicluster.x-k8s.io/v1alpha1"
    with pytest.raises(ApiError) as error:
        write(hub, slice_)
    # Server-side apply answers an object its typed schema cannot hold with 500 and the field.
    assert error.value.status >= 400
    assert ".decisions[0].clusterProfileRef.apiVersion: field not declared in schema" in str(error.value)

    page = _first(written, "export --format ocm")
    assert _check(hub, "control", page) == []
    page["status"]["decisions"][0]["score"] = str(page["status"]["decisions"][0].get("score", 160))
    with pytest.raises(ApiError) as error:
        write(hub, page)
    assert error.value.status >= 400
    assert ".status.decisions[0].score: expected numeric (int or float), got string" in str(error.value)

    label = _first(written, "export --format ocm")
    label["metadata"]["labels"]["cluster.open-cluster-management.io/placement"] = LONG_74
    with pytest.raises(ApiError) as error:
        write(hub, label)
    assert error.value.status == 422
    assert "must be no more than 63 characters" in str(error.value)

    # and a difference in what is held is seen: the server keeps what it was given, not this
    held = hub.request("GET", resource_path(hub, good_slice))
    changed = {
        **good_slice,
        "decisions": good_slice["decisions"][1:] or [{"clusterProfileRef": {"name": "x"}}],
    }
    assert list(differences(changed, held))
