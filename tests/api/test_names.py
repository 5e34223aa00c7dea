"""Names, namespaces and labels checked as the API server checks them (shared/api/names.py), and the
names fleetplace derives kept within those rules (docs/names.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.services.scheduler.core import InvalidRecord, SchedulerProcessor
from fleetplace.shared.api import names
from fleetplace.shared.api.ocm import decision_page_name, placement_label_value
from fleetplace.shared.api.sigmc import slice_name
from tests.upstream import schema

G = "cluster.open-cluster-management.io"
ODD = st.text(alphabet="abzAZ09-_./ !é", min_size=1, max_size=80) | st.text(
    alphabet="ab0-.", min_size=240, max_size=260
)


@settings(max_examples=400)
@given(ODD)
def test_the_products_rules_are_the_api_servers(value: str) -> None:
    # tests/upstream/schema.py writes the API server's rules down independently of the product
    meta = {"name": value, "namespace": value, "labels": {value: value}}
    product = {field for field, _ in names.metadata_problems(meta, namespaced=True)}
    upstream = schema.metadata_problems(meta, namespaced=True)
    assert ("metadata.name" in product) == any(p.startswith("metadata.name:") for p in upstream)
    assert ("metadata.namespace" in product) == any(p.startswith("metadata.namespace:") for p in upstream)
    assert ("metadata.labels" in product) == any("is not a qualified name" in p for p in upstream)
    assert (f"metadata.labels[{value}]" in product) == any("not a valid label value" in p for p in upstream)


@given(
    st.text(alphabet="abz09-.", min_size=1, max_size=253).filter(
        lambda n: names.dns1123_subdomain_problem(n) is None
    )
)
def test_derived_names_and_labels_are_valid_stable_and_kept_when_they_fit(placement: str) -> None:
    label = placement_label_value(placement)
    assert names.label_value_problem(label) is None
    assert label == placement_label_value(placement)  # the same at every re-evaluation
    assert (label == placement) == (len(placement) <= 63 and names.label_value_problem(placement) is None)
    for name in (
        decision_page_name(placement, 1),
        decision_page_name(placement, 12),
        slice_name(placement, 0),
    ):
        assert names.dns1123_subdomain_problem(name) is None, name
    assert decision_page_name(placement, 3).endswith("-decision-3")
    assert slice_name(placement, 7).endswith("-7")
    if len(placement) <= 253 - len("-decision-12"):
        assert decision_page_name(placement, 12) == f"{placement}-decision-12"


def test_long_names_that_share_a_head_get_different_labels_and_page_names() -> None:
    a, b = "a" * 245 + "x", "a" * 245 + "y"
    assert placement_label_value(a) != placement_label_value(b)
    assert decision_page_name(a, 1) != decision_page_name(b, 1)
    assert len(placement_label_value(a)) == 63 and len(decision_page_name(a, 1)) == 253


BAD_PROFILE = {
    "apiVersion": "multicluster.x-k8s.io/v1alpha1",
    "kind": "ClusterProfile",
    "metadata": {"namespace": "Fleet_NS", "name": "Bad Name!", "labels": {"bad key!": "ok", "tier": "-x"}},
    "spec": {"displayName": "bad", "clusterManager": {"name": "test"}},
}


def test_publish_refuses_names_and_labels_the_api_server_refuses(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(yaml.safe_dump(BAD_PROFILE))
    result = CliRunner().invoke(app, ["publish", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    message = result.stderr
    assert f"{path}#0: ClusterProfile 'Fleet_NS/Bad Name!': " in message
    assert "metadata.name: Invalid value: 'Bad Name!': a lowercase RFC 1123 subdomain" in message
    assert "metadata.namespace: Invalid value: 'Fleet_NS': a lowercase RFC 1123 label" in message
    assert "metadata.labels: Invalid value: 'bad key!': name part must consist of" in message
    assert "metadata.labels[tier]: Invalid value: '-x': a valid label must be" in message


def test_simulate_refuses_them_too(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    placement = {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": "ns1", "name": "p"},
    }
    path.write_text(yaml.safe_dump_all([BAD_PROFILE, placement]))
    result = CliRunner().invoke(app, ["simulate", str(path), "-o", "json"])
    assert result.exit_code != 0
    assert "ClusterProfile 'Fleet_NS/Bad Name!': metadata.name: Invalid value" in result.output


def test_the_worker_dead_letters_a_record_with_an_invalid_label() -> None:
    cluster = {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c1", "labels": {"env": "x" * 64}},
    }
    with pytest.raises(
        InvalidRecord, match=r"metadata.labels\[env\]: Invalid value: 'x{64}': must be no more than 63"
    ):
        SchedulerProcessor().apply("clusters", "c1", cluster)


def _fleet(managed_namespaces: bool) -> list[dict[str, Any]]:
    clusterset: dict[str, Any] = {
        "apiVersion": f"{G}/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": "prod"},
    }
    if managed_namespaces:
        clusterset["spec"] = {"managedNamespaces": [{"name": "apps"}, {"name": "monitoring"}]}
    clusters = [
        {
            "apiVersion": f"{G}/v1",
            "kind": "ManagedCluster",
            "metadata": {"name": n, "labels": {f"{G}/clusterset": "prod"}},
        }
        for n in ("east", "west")
    ]
    binding = {
        "apiVersion": f"{G}/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"namespace": "ns1", "name": "prod"},
        "spec": {"clusterSet": "prod"},
    }
    placement = {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": "ns1", "name": "p"},
        "spec": {},
    }
    return [clusterset, *clusters, binding, placement]


def test_an_upstream_set_with_managed_namespaces_is_accepted_and_placed_as_before(tmp_path: Path) -> None:
    decided = []
    for managed in (True, False):
        path = tmp_path / f"fleet-{managed}.yaml"
        path.write_text(yaml.safe_dump_all(_fleet(managed)))
        published = CliRunner().invoke(app, ["publish", str(path), "--dry-run"])
        assert published.exit_code == 0, published.output
        result = CliRunner().invoke(app, ["simulate", str(path), "-o", "json"])
        assert result.exit_code == 0, result.output
        (line,) = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
        decided.append(line["decisions"])
    assert decided == [["east", "west"], ["east", "west"]]
