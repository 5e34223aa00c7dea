"""Every object the chart renders over its values matrix, applied with a server-side dry run to a
real kube-apiserver (the hub issue's control plane, shared/control_plane.py) with the KEDA and
Prometheus Operator CRDs installed from their Go modules (tests/deploy/crds.py), into a namespace
labelled for Pod Security `restricted` (enforce, warn, audit): no rejection and no warning.
The hub bridge starts with the ServiceAccount roles the chart renders for each mode, and nothing
else. Strimzi's KafkaUser and KafkaTopic have no CRD from a registry here; test_operator_resources.py
checks them against Strimzi's v1 fields instead.

Without the control plane's binaries (`make hub-binaries`) these tests are skipped with that reason,
unless FLEETPLACE_REQUIRE_HUB=1 (CI), where they fail."""

from __future__ import annotations

import copy
import http.client
import json
import os
import ssl
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from fleetplace.shared import control_plane as cp
from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.topics import Topics
from tests.deploy import chart, crds
from tests.deploy.chart import MATRIX, NAMESPACE, of_kind, render
from tests.hub.processes import wait_ready
from tests.hub.test_rbac import hub_run, service_account_with
from tests.proc import stop_process
from tests.upstream.crds import upstream_crds

REQUIRE_ENV = "FLEETPLACE_REQUIRE_HUB"
# No CRD from a published package: checked by test_operator_resources.py.
WITHOUT_CRD = {"KafkaUser", "KafkaTopic"}
PSA = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")}


@pytest.fixture(scope="module")
def api_server() -> Iterator[Any]:
    chart.build_helm()
    try:
        binaries = cp.Binaries.find()
    except cp.ControlPlaneError as error:
        if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
            raise
        pytest.skip(str(error))
    # the OCM and SIG-Multicluster CRDs, which the hub bridge lists, and the operators' ones
    every_crd = [*upstream_crds(), *(crds.crd_path(kind) for kind in sorted(crds.CRDS))]
    with cp.control_plane(crds=every_crd, binaries=binaries) as hub:
        hub.request(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": PSA}},
        )
        # what kube-controller-manager (not run here) gives every namespace; the topics Job's pod
        # runs as it, since the chart's own ServiceAccount does not exist yet before install
        hub.request(
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
        )
        yield hub


def _namespaced(hub: Any, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as `helm install --namespace` sends it: namespaced kinds get the namespace."""
    out = copy.deepcopy(dict(obj))
    if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition"):
        out["metadata"]["namespace"] = NAMESPACE
    return out


def apply(hub: Any, obj: Mapping[str, Any], *, dry_run: bool = True) -> list[str]:
    """Server-side apply with strict field validation; the API server's warnings. A rejection
    raises the control plane's ApiError with the server's message."""
    path = cp.resource_path(hub, obj)
    query = "fieldManager=fleetplace-chart&force=true&fieldValidation=Strict" + (
        "&dryRun=All" if dry_run else ""
    )
    context = ssl.create_default_context(cafile=str(hub.credentials.ca_cert))
    context.load_cert_chain(str(hub.credentials.admin_cert), str(hub.credentials.admin_key))
    port = int(hub.server.rsplit(":", 1)[1])
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request(
            "PATCH",
            f"{path}?{query}",
            body=json.dumps(obj).encode(),
            headers={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
        )
        response = connection.getresponse()
        body = response.read()
        warnings = response.headers.get_all("Warning") or []
    finally:
        connection.close()
    if response.status >= 400:
        raise cp.ApiError("PATCH", path, response.status, body)
    return list(warnings)


def pod_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A Pod from a workload's template: Pod Security's `enforce` judges pods, not templates."""
    template = (
        obj["spec"]["jobTemplate"]["spec"]["template"]
        if obj["kind"] == "CronJob"
        else obj["spec"]["template"]
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{obj['metadata']['name']}-probe",
            "namespace": NAMESPACE,
            **template.get("metadata", {}),
        },
        "spec": template["spec"],
    }


@pytest.mark.parametrize("values", MATRIX)
def test_every_rendered_object_passes_a_server_side_dry_run_without_warnings(
    api_server: Any, values: str
) -> None:
    objects = [_namespaced(api_server, o) for o in render([values])]
    # the pods' ServiceAccounts exist for real, as helm creates them before the Deployments
    for account in of_kind(objects, "ServiceAccount"):
        assert apply(api_server, account, dry_run=False) == []
    problems = []
    for obj in objects:
        if obj["kind"] in WITHOUT_CRD:
            continue
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        try:
            problems += [f"{where}: warning: {w}" for w in apply(api_server, obj)]
            if chart.pod_spec(obj) is not None:
                problems += [f"{where} (as a Pod): warning: {w}" for w in apply(api_server, pod_of(obj))]
        except cp.ApiError as error:
            problems.append(f"{where}: rejected: {error}")
    assert problems == []


def test_a_change_that_breaks_restricted_pod_security_is_warned_about_and_its_pod_refused(
    api_server: Any,
) -> None:
    objects = [_namespaced(api_server, o) for o in render(["defaults-values.yaml"])]
    for account in of_kind(objects, "ServiceAccount"):
        apply(api_server, account, dry_run=False)
    (deployment,) = (d for d in of_kind(objects, "Deployment") if chart.component(d) == "scheduler")
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    warnings = apply(api_server, broken)
    assert any("restricted" in w and "allowPrivilegeEscalation" in w for w in warnings), warnings
    with pytest.raises(cp.ApiError, match="violates PodSecurity"):
        apply(api_server, pod_of(broken))


@pytest.mark.parametrize("mode", ["shadow", "replace"])
async def test_the_hub_bridge_starts_with_the_charts_roles_alone(
    api_server: Any, broker: str, topics: Topics, tmp_path: Path, mode: str
) -> None:
    """The bridge, given only the ClusterRole and Role the chart renders for its mode, passes its
    start-up permission check, takes its Lease and becomes ready."""
    objects = render([f"hub-{mode}-values.yaml"])
    roles = of_kind(objects, "ClusterRole") + of_kind(objects, "Role")
    kubeconfig, namespace = service_account_with(api_server, roles, tmp_path)
    port = free_port()
    # the mode the chart gives the bridge's pod, which its ClusterRole must be enough for
    (deployment,) = [d for d in of_kind(objects, "Deployment") if d["metadata"]["name"].endswith("-hub")]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"] if e["name"] == "FLEETPLACE_HUB_MODE"}
    assert env == {"FLEETPLACE_HUB_MODE": mode}
    process = hub_run(broker, topics.prefix, kubeconfig, namespace, port, env)
    try:
        await wait_ready(process, port)
    finally:
        stop_process(process)
    assert process.returncode == 0
