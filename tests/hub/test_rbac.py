"""The bridge's roles, as docs/hub.md#rbac gives them, on the RBAC-enabled API server: a
ServiceAccount holding exactly them runs the bridge; one lacking a verb is stopped at start with a
message naming the verb and the resource."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ApiError, ControlPlane, kubeconfig_text
from tests.hub.processes import start_hub_bridge, wait_ready
from tests.proc import stop_process

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "hub.md"


def documented_roles() -> list[dict[str, Any]]:
    section = DOC.read_text().split("## RBAC", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert blocks, "docs/hub.md#rbac has a yaml block"
    documented = [d for block in blocks for d in yaml.safe_load_all(block) if d]
    # the hub → topics roles, and the write-back role of the default mode (shadow)
    return [d for d in documented if d["metadata"]["name"] != "fleetplace-hub-replace"]


def service_account_with(hub: ControlPlane, roles: list[dict[str, Any]], tmp: Path) -> tuple[Path, str]:
    """A fresh namespace and ServiceAccount bound to `roles` (each renamed to be its own; a Role is
    put in that namespace); a kubeconfig with its token, and the namespace."""
    ns = f"rbac{uuid.uuid4().hex[:8]}"
    hub.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    hub.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bridge", "namespace": ns}})
    subject = [{"kind": "ServiceAccount", "name": "bridge", "namespace": ns}]
    for role in roles:
        name = f"{ns}-{role['metadata']['name']}"
        if role["kind"] == "ClusterRole":
            hub.apply({**role, "metadata": {"name": name}})
            binding = {"kind": "ClusterRoleBinding", "metadata": {"name": name}}
        else:
            hub.apply({**role, "metadata": {"name": name, "namespace": ns}})
            binding = {"kind": "RoleBinding", "metadata": {"name": name, "namespace": ns}}
        hub.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                **binding,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role["kind"], "name": name},
                "subjects": subject,
            }
        )
    token = hub.request(
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts/bridge/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    kubeconfig = tmp / f"{ns}.kubeconfig"
    kubeconfig.write_text(kubeconfig_text(hub.server, hub.credentials, token=token, user="bridge"))
    return kubeconfig, ns


def hub_run(
    broker: str, prefix: str, kubeconfig: Path, ns: str, port: int, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """The bridge with none of this process's fleetplace, Kafka or kubeconfig settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETPLACE_", "KAFKA_", "KUBECONFIG"))}
    return start_hub_bridge(
        broker,
        prefix,
        kubeconfig,
        port,
        {**clean, "FLEETPLACE_LOG_LEVEL": "warning", **(env or {})},
        lease_namespace=ns,
    )


async def test_the_documented_roles_are_enough(
    hub: ControlPlane, broker: str, topics: Topics, tmp_path: Path
) -> None:
    kubeconfig, ns = service_account_with(hub, documented_roles(), tmp_path)
    port = free_port()
    process = hub_run(broker, topics.prefix, kubeconfig, ns, port)
    try:
        await wait_ready(process, port)
        deadline = time.monotonic() + 90
        # ready is also a standby's state (caught up on its topics): the Lease may come a moment later
        lease = None
        while lease is None:
            try:
                lease = hub.request(
                    "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/fleetplace-hub"
                )
            except ApiError as error:
                assert error.status == 404 and time.monotonic() < deadline, error
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                await asyncio.sleep(0.1)
        assert lease["spec"]["holderIdentity"].endswith("_hub"), "it took its Lease in the namespace given"
    finally:
        stop_process(process)
    assert process.returncode == 0


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_a_role_a_verb_short_stops_the_bridge_at_start_naming_it(
    hub: ControlPlane, broker: str, topics: Topics, tmp_path: Path, verb: str
) -> None:
    roles = documented_roles()
    reader = next(r for r in roles if r["kind"] == "ClusterRole")
    ocm = reader["rules"][0]
    placements_without = {**ocm, "resources": ["placements"], "verbs": [v for v in ocm["verbs"] if v != verb]}
    others = {**ocm, "resources": [r for r in ocm["resources"] if r != "placements"]}
    smaller = {**reader, "rules": [others, placements_without, *reader["rules"][1:]]}
    kubeconfig, ns = service_account_with(hub, [smaller, *[r for r in roles if r is not reader]], tmp_path)
    process = hub_run(broker, topics.prefix, kubeconfig, ns, free_port())
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    assert (
        f"error: the hub: the bridge may not {verb} placements.cluster.open-cluster-management.io" in stderr
    )
    assert "managedclusters" not in stderr, "only what is missing is named"
    assert "Traceback" not in stderr
