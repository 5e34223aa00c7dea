"""`make bench-hub`: from objects created on a real hub to every decision on the hub.

A control plane (etcd and kube-apiserver with the upstream CRDs, shared/control_plane.py), the
embedded broker, one scheduler worker and the bridge (`fleetplace hub run`, replace mode: the
decisions are written back as OCM's PlacementDecision pages and Placement status), each in its own
process. Once both are ready, the fleet is created on the hub: a global ManagedClusterSet bound in
the placements' namespace, the ManagedClusters (their `status.allocatable` through the status
subresource, as a klusterlet reports it) and the Placements of OCM's benchmark scenario
(tests/bench/scenario.py). Measured from the first create:

* `created_s`: until every object is created (the API server's own share, from this client);
* `decided_s`: until every placement's PlacementDecisions on the hub hold its 10 clusters: the
  bridge's watch, the topics, the scheduler, the topics again and the bridge's writes;
* `list_s`: a plain list of the same ManagedClusters and Placements from the API server, in the
  same run (the best of three): the floor of any program that reads the hub;
* `ratio = (decided_s - created_s) / list_s`: what the path costs beyond the creation, in lists;
* `bridge_peak_rss_mb`: the bridge process's peak resident set (VmHWM), read before it stops;
* where the bridge's time went, from its `/metrics` once every decision is on the hub:
  `hub_requests` by kind (watch, get, create, update, patch, delete), `rate_limit_wait_s` (the
  seconds its requests queued for its client-side limit, by default 50 per second with bursts of
  100, OCM's own), and `writes_at_limit_s`: the writes (creates, updates, patches, deletes) divided by that
  rate, the least time they take through the limit.

    python -m tests.bench.hub                 # 5,000 clusters x 1,000 placements
    python -m tests.bench.hub --quick         # 500 x 100
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.control_plane import ControlPlane, control_plane
from fleetplace.shared.testing import create_topics, running_broker
from tests.bench.e2e import emit, note, process, worker_command
from tests.bench.scenario import binding, cluster, cluster_set, placement
from tests.upstream.crds import upstream_crds

NAMESPACE = "bench"
# the bridge's limit: its default unless the environment the bridge inherits sets another
HUB_QPS = float(os.environ.get("FLEETPLACE_HUB_QPS") or 50.0)
PICKED = 10  # numberOfClusters of the scenario's placements
CREATORS = 8  # concurrent requests while creating the fleet
_OCM = "/apis/cluster.open-cluster-management.io"
_PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=30) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _bridge_requests(port: int) -> tuple[dict[str, int], float]:
    """The bridge's requests to the hub by kind, and the seconds they waited for its limit."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        families = {f.name: f for f in text_string_to_metric_families(response.read().decode())}
    requests = {
        sample.labels["request"]: int(sample.value)
        for sample in families["fleetplace_hub_requests"].samples
        if sample.name.endswith("_total")
    }
    (waited,) = [
        s.value
        for s in families["fleetplace_hub_rate_limit_wait_seconds"].samples
        if s.name.endswith("_total")
    ]
    return requests, waited


def _peak_rss_mb(pid: int) -> float:
    """A live process's peak resident set (VmHWM in /proc), in MiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmHWM for process {pid}")


async def _until(check: Callable[[], bool], timeout: float, what: str, every: float = 0.2) -> float:
    """Seconds (monotonic) at which `check()` first held."""
    deadline = time.monotonic() + timeout
    while True:
        if await asyncio.to_thread(check):
            return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout} s")
        await asyncio.sleep(every)


def _create_all(hub: ControlPlane, calls: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
    def one(call: tuple[str, str, dict[str, Any]]) -> None:
        method, path, body = call
        content = "application/merge-patch+json" if method == "PATCH" else "application/json"
        hub.request(method, path, body, content_type=content, timeout=120)

    with ThreadPoolExecutor(CREATORS) as pool:
        for _ in pool.map(one, calls):
            pass


def _create_fleet(hub: ControlPlane, clusters: int, placements: int) -> None:
    rng = random.Random(7)
    hub.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    hub.apply(cluster_set())
    hub.apply(binding(NAMESPACE))
    objects = [cluster(i, rng) for i in range(clusters)]
    _create_all(
        hub,
        (
            ("POST", f"{_OCM}/v1/managedclusters", {k: v for k, v in o.items() if k != "status"})
            for o in objects
        ),
    )
    _create_all(
        hub,
        (
            ("PATCH", f"{_OCM}/v1/managedclusters/{o['metadata']['name']}/status", {"status": o["status"]})
            for o in objects
        ),
    )
    _create_all(
        hub,
        (
            ("POST", f"{_OCM}/v1beta1/namespaces/{NAMESPACE}/placements", placement(NAMESPACE, i))
            for i in range(placements)
        ),
    )


def _decided(hub: ControlPlane, placements: int) -> bool:
    """Every placement's PlacementDecision pages on the hub hold its clusters."""
    pages = hub.request("GET", f"{_OCM}/v1beta1/namespaces/{NAMESPACE}/placementdecisions", timeout=120)[
        "items"
    ]
    held: dict[str, int] = {}
    for page in pages:
        name = page["metadata"].get("labels", {}).get(_PLACEMENT_LABEL, "")
        held[name] = held.get(name, 0) + len((page.get("status") or {}).get("decisions") or [])
    return sum(1 for n in held.values() if n == PICKED) == placements


def _plain_list(hub: ControlPlane, clusters: int, placements: int) -> float:
    """Seconds one client takes to list the ManagedClusters and the Placements."""
    t0 = time.monotonic()
    listed = len(hub.request("GET", f"{_OCM}/v1/managedclusters", timeout=120)["items"])
    listed += len(
        hub.request("GET", f"{_OCM}/v1beta1/namespaces/{NAMESPACE}/placements", timeout=120)["items"]
    )
    spent = time.monotonic() - t0
    if listed != clusters + placements:
        raise RuntimeError(f"the list served {listed} objects, not {clusters + placements}")
    return spent


def _bridge_command(bootstrap: str, prefix: str, port: int, hub: ControlPlane) -> list[str]:
    return [
        sys.executable,
        "-m",
        "fleetplace.services.cli",
        "hub",
        "run",
        "--bootstrap",
        bootstrap,
        "--prefix",
        prefix,
        "--http-port",
        str(port),
        "--kubeconfig",
        str(hub.kubeconfig),
    ]


async def main(clusters: int, placements: int) -> None:
    os.environ["FLEETPLACE_HUB_MODE"] = "replace"  # the children inherit it: OCM's controller is absent
    with control_plane(crds=upstream_crds()) as hub, running_broker() as bootstrap:
        prefix = f"hub{uuid.uuid4().hex[:8]}."
        await create_topics(bootstrap, prefix)
        ports = {"worker": free_port(), "bridge": free_port()}
        with contextlib.ExitStack() as stack:
            stack.enter_context(process(worker_command(bootstrap, prefix, ports["worker"], None), "worker"))
            bridge = stack.enter_context(
                process(_bridge_command(bootstrap, prefix, ports["bridge"], hub), "bridge")
            )
            for name, port in ports.items():
                await _until(lambda p=port: _ready(p), 300.0, f"the {name} ready")  # type: ignore[misc]
            t0 = time.monotonic()
            await asyncio.to_thread(_create_fleet, hub, clusters, placements)
            created = time.monotonic() - t0
            note(f"{clusters} clusters and {placements} placements created in {created:.1f} s")
            decided = (
                await _until(lambda: _decided(hub, placements), 3600.0, "every decision on the hub", 1.0) - t0
            )
            note(f"every decision on the hub {decided:.1f} s after the first create")
            rss = _peak_rss_mb(bridge.pid)
            requests, waited = _bridge_requests(ports["bridge"])
            listed = min(_plain_list(hub, clusters, placements) for _ in range(3))
    emit(
        {
            "bench": "hub",
            "clusters": clusters,
            "placements": placements,
            "created_s": round(created, 2),
            "decided_s": round(decided, 2),
            "list_s": round(listed, 3),
            "ratio": round((decided - created) / listed, 1),
            "bridge_peak_rss_mb": round(rss, 1),
            "hub_requests": dict(sorted(requests.items())),
            "rate_limit_wait_s": round(waited, 1),
            "writes_at_limit_s": round(
                sum(n for k, n in requests.items() if k not in ("get", "watch")) / HUB_QPS, 1
            ),
        }
    )


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="500 clusters x 100 placements")
    args = parser.parse_args(argv)
    clusters, placements = (500, 100) if args.quick else (5000, 1000)
    asyncio.run(main(clusters, placements))


if __name__ == "__main__":
    cli()
