"""The control plane the hub tests run against: RBAC on, the upstream CRDs served with their
schemas, and `make hub` (tests/hub/serve.py) stopping cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fleetplace.shared.control_plane import ApiError, ControlPlane
from tests.hub.conftest import _binaries

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

CLUSTER = {
    "apiVersion": "cluster.open-cluster-management.io/v1",
    "kind": "ManagedCluster",
    "metadata": {"name": "cp-cluster1", "labels": {"region": "eu"}},
    "spec": {"hubAcceptsClient": True},
}


def test_every_upstream_crd_is_established(hub: ControlPlane) -> None:
    crds = hub.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    kinds = {(c["spec"]["group"], c["spec"]["names"]["kind"]) for c in crds}
    assert {
        ("cluster.open-cluster-management.io", "ManagedCluster"),
        ("cluster.open-cluster-management.io", "ManagedClusterSet"),
        ("cluster.open-cluster-management.io", "ManagedClusterSetBinding"),
        ("cluster.open-cluster-management.io", "Placement"),
        ("cluster.open-cluster-management.io", "PlacementDecision"),
        ("cluster.open-cluster-management.io", "AddOnPlacementScore"),
        ("multicluster.x-k8s.io", "ClusterProfile"),
        ("multicluster.x-k8s.io", "PlacementDecision"),
    } <= kinds
    for crd in crds:
        assert {"type": "Established", "status": "True"}.items() <= next(
            c for c in crd["status"]["conditions"] if c["type"] == "Established"
        ).items()


def test_objects_are_checked_against_the_upstream_schema(hub: ControlPlane) -> None:
    created = hub.apply(CLUSTER)
    assert created["metadata"]["labels"] == {"region": "eu"}
    bad = {**CLUSTER, "metadata": {"name": "cp-cluster2"}, "spec": {"hubAcceptsClient": "yes"}}
    with pytest.raises(ApiError) as error:
        hub.request("POST", "/apis/cluster.open-cluster-management.io/v1/managedclusters", bad)
    assert error.value.status == 422
    assert "hubAcceptsClient" in str(error.value)


def test_rbac_refuses_a_service_account_without_a_role(hub: ControlPlane) -> None:
    hub.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody", "namespace": "default"}}
    )
    token = hub.request(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/nobody/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    with pytest.raises(ApiError) as error:
        hub.request("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters", token=token)
    assert error.value.status == 403
    assert "system:serviceaccount:default:nobody" in str(error.value)
    # the same token works once a role allows it: the refusal was RBAC, not a broken token
    hub.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "cp-read-clusters"},
            "rules": [
                {
                    "apiGroups": ["cluster.open-cluster-management.io"],
                    "resources": ["managedclusters"],
                    "verbs": ["list"],
                }
            ],
        }
    )
    hub.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "cp-read-clusters"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cp-read-clusters",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": "default"}],
        }
    )
    deadline = time.monotonic() + 30
    while True:  # the authorizer sees the new binding through its informer, a moment later
        try:
            hub.request("GET", "/apis/cluster.open-cluster-management.io/v1/managedclusters", token=token)
            break
        except ApiError as again:
            # 429 "storage is (re)initializing": past the authorizer, the watch cache re-listing
            # after another test compacted etcd; asked again, it answers
            assert again.status in (403, 429)
            assert time.monotonic() < deadline, "the role never took effect"
            time.sleep(0.2)


def test_make_hub_prints_the_kubeconfig_first_and_cleans_up_on_sigterm() -> None:
    _binaries()  # skipped like the fixture when they are not built
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.hub.serve"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().rstrip("\n")
        assert first.startswith("KUBECONFIG="), first + (process.stderr.read() if process.stderr else "")
        kubeconfig = Path(first.removeprefix("KUBECONFIG="))
        config = yaml.safe_load(kubeconfig.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        assert server.startswith("https://127.0.0.1:")
        pids = [int(p) for p in process.stdout.readline().split("pids ")[1].split(",")]
        assert all(_alive(pid) for pid in pids)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        status = process.wait(60)
    assert status == 0
    assert not kubeconfig.parent.exists(), "the data directory is removed"
    assert not any(_alive(pid) for pid in pids), "kube-apiserver and etcd are stopped"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of an exited child counts as gone
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
