"""The demo's hub acts: fleetplace deciding for a real Kubernetes API server (docs/hub.md).

A control plane (shared/control_plane.py: etcd and kube-apiserver on loopback, the upstream CRDs
installed) is started in the background when the demo starts, since it takes seconds. The acts
then run a scheduler and the hub bridge (replace mode: this hub has no OCM placement controller)
on topics of their own prefix — a bridge tombstones every key the hub does not hold, so it must
not share the demo's topics — create clusters and a Placement on the hub from kubectl-style YAML,
and watch the Placement's PlacementDecisions on the hub: the decision appears there, then a taint
put on a cluster on the hub moves it. What the acts check is what the hub serves, read back the
way `kubectl get placementdecisions` reads it. Without the control plane's binaries (`make
hub-binaries`) or Go (it fetches the CRDs) both acts say they were skipped, and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from fleetplace.services.commands.demo_acts import Act, ExpectedDiff
from fleetplace.services.hub.worker import HubBridge
from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.api.ocm import PLACEMENT_LABEL
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.topics import Topics, ensure_topics
from fleetplace.shared.control_plane import Binaries, ControlPlane, ControlPlaneError, control_plane
from fleetplace.shared.settings import Settings
from fleetplace.shared.upstream_crds import UpstreamUnavailable, upstream_crds

NAMESPACE = "fleet"
PLACEMENT = f"{NAMESPACE}/site"
CLUSTERS = ("hub-a", "hub-b", "hub-c")
TAINTED = "hub-b"
# What a user would `kubectl apply --server-side -f`: a set of three clusters, bound to the
# namespace of a Placement that wants two of them.
HUB_YAML = f"""\
apiVersion: v1
kind: Namespace
metadata:
  name: {NAMESPACE}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata:
  name: demo
{
    "".join(
        f'''---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: {name}
  labels:
    cluster.open-cluster-management.io/clusterset: demo
spec:
  hubAcceptsClient: true
'''
        for name in CLUSTERS
    )
}---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata:
  name: demo
  namespace: {NAMESPACE}
spec:
  clusterSet: demo
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: site
  namespace: {NAMESPACE}
spec:
  clusterSets: [demo]
  numberOfClusters: 2
"""
TAINT_YAML = f"""\
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: {TAINTED}
spec:
  taints:
  - key: maintenance
    effect: NoSelect
    timeAdded: "{{now}}"
"""
# From the bridge's start to its first list published and the scheduler's group joined.
SETUP_TIMEOUT_S = 30.0
_DECISIONS = f"/apis/cluster.open-cluster-management.io/v1beta1/namespaces/{NAMESPACE}/placementdecisions"


def hub_missing() -> str | None:
    """Why the hub acts cannot be played here, or None."""
    try:
        Binaries.find()
        upstream_crds()
    except (ControlPlaneError, UpstreamUnavailable) as error:
        return str(error)
    return None


class DemoHub:
    """The control plane, scheduler, bridge and hub watcher of the acts."""

    def __init__(self, settings: Settings) -> None:
        prefix = f"{settings.topic_prefix}hub."
        self.settings = settings.model_copy(
            update={
                "topic_prefix": prefix,
                "scheduler_group_id": f"{prefix}scheduler",
                "hub_mode": "replace",
                "hub_lease_name": f"{prefix}hub".replace(".", "-"),
                "hub_lease_namespace": "default",
            }
        )
        self.topics = Topics(prefix)
        self.skipped = hub_missing()
        self.hub: ControlPlane | None = None
        self.seen: list[Mapping[str, Any]] = []  # the hub's decision, as diffs, each time it changed
        self._plane: contextlib.AbstractContextManager[ControlPlane] | None = None
        self._booting: asyncio.Task[ControlPlane] | None = None
        self._workers: list[tuple[SchedulerWorker | HubBridge, asyncio.Task[None]]] = []
        self._watching: asyncio.Task[None] | None = None

    def boot(self) -> None:
        """Start the control plane in the background (it takes seconds): called as the demo starts."""
        if self.skipped is not None or self._booting is not None:
            return
        self._plane = control_plane(crds=upstream_crds())
        self._booting = asyncio.create_task(asyncio.to_thread(self._plane.__enter__))

    async def start(self) -> None:
        """Once the control plane is up: the topics, the scheduler, the bridge (until it has
        listed the hub), and the watcher of the hub's PlacementDecisions."""
        self.boot()
        assert self._booting is not None
        try:
            self.hub = await self._booting
        except ControlPlaneError as error:
            raise BusError(f"the demo's control plane did not start: {error}") from None
        await ensure_topics(self.settings.kafka, self.topics)
        settings = self.settings.model_copy(update={"hub_kubeconfig": str(self.hub.kubeconfig)})
        scheduler = SchedulerWorker(settings, instance="demo-hub-scheduler")
        bridge = HubBridge(settings, instance="demo-hub")
        for worker in (scheduler, bridge):
            self._workers.append((worker, asyncio.create_task(worker.run())))
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while not (bridge.leading and bridge.ready and scheduler.ready):
            self._check()
            if time.monotonic() > deadline:
                raise BusError(f"the hub bridge was not ready after {SETUP_TIMEOUT_S:g} s")
            await asyncio.sleep(0.05)
        self._watching = asyncio.create_task(self._watch(self.hub))

    def _check(self) -> None:
        if self._watching is not None and self._watching.done():
            self._watching.result()
            raise BusError("the demo's watch of the hub stopped unexpectedly")
        for worker, task in self._workers:
            if task.done():
                task.result()
                raise BusError(f"the demo's {type(worker).__name__} stopped unexpectedly")

    async def _watch(self, hub: ControlPlane) -> None:
        """Read the placement's PlacementDecisions as a client of the hub would, and record each
        change of the clusters they hold."""
        held: list[str] = []
        while True:
            found = await asyncio.to_thread(
                hub.request, "GET", f"{_DECISIONS}?labelSelector={PLACEMENT_LABEL}%3Dsite"
            )
            pages = sorted(found.get("items") or [], key=lambda p: p["metadata"]["name"])
            clusters = sorted(
                d["clusterName"] for p in pages for d in (p.get("status") or {}).get("decisions") or []
            )
            if clusters != held:
                self.seen.append(
                    {
                        "placement": PLACEMENT,
                        "seq": len(self.seen) + 1,
                        "trigger": {"kind": "hub", "key": ", ".join(p["metadata"]["name"] for p in pages)},
                        "added": sorted(set(clusters) - set(held)),
                        "removed": sorted(set(held) - set(clusters)),
                        "decisions": clusters,
                    }
                )
                held = clusters
            await asyncio.sleep(0.1)

    def apply(self, text: str, manager: str) -> None:
        """`kubectl apply --server-side --field-manager <manager> -f` of a YAML text, document by
        document (a manager owns what it applied: the taint is applied by a manager of its own, so
        that applying it keeps the cluster's labels)."""
        assert self.hub is not None, "the hub acts start the control plane first"
        for document in yaml.safe_load_all(text):
            if document:
                self.hub.apply(document, field_manager=manager)

    def observed(self) -> list[Mapping[str, Any]]:
        self._check()
        return self.seen

    async def stop(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)
        for worker, _ in self._workers:
            worker.stop()
        for _, task in self._workers:
            _, pending = await asyncio.wait({task}, timeout=10.0)
            for late in pending:
                late.cancel()
            await asyncio.gather(task, return_exceptions=True)  # how it ended is not the demo's
        if self._booting is not None:
            booting, self._booting = self._booting, None
            await asyncio.gather(booting, return_exceptions=True)  # a start cut short ends here
            if booting.done() and not booting.cancelled() and booting.exception() is None:
                assert self._plane is not None
                await asyncio.to_thread(self._plane.__exit__, None, None, None)


def hub_acts(demo_hub: DemoHub, now: Callable[[], str]) -> list[Act]:
    """Two acts: a Placement created on the hub gets its PlacementDecisions there, then a taint
    put on one of its clusters on the hub moves it."""
    if demo_hub.skipped is not None:
        why = demo_hub.skipped
        return [
            Act("decided on the hub", "a Placement on a Kubernetes hub", lambda: [], (), skipped=why),
            Act("tainted on the hub", "a taint on the hub moves it", lambda: [], (), skipped=why),
        ]
    first = tuple(CLUSTERS[:2])
    spare = CLUSTERS[2]

    def create() -> list[Any]:
        demo_hub.apply(HUB_YAML, "demo")
        return []

    def taint() -> list[Any]:
        demo_hub.apply(TAINT_YAML.format(now=now()), "demo-operator")
        return []

    return [
        Act(
            "decided on the hub",
            f"clusters {', '.join(CLUSTERS)} and Placement {PLACEMENT} (two of them) created on a "
            "kube-apiserver from YAML; the bridge carries them to a scheduler and writes its "
            "decision back as PlacementDecisions",
            create,
            (ExpectedDiff(PLACEMENT, first),),
            timeout_s=20.0,
            setup=demo_hub.start,
            detail=lambda: (
                "etcd and kube-apiserver on loopback ports, the OCM and SIG-MC CRDs installed; "
                f"topics under {demo_hub.topics.prefix}"
            ),
            observed=demo_hub.observed,
        ),
        Act(
            "tainted on the hub",
            f"{TAINTED} gets a NoSelect taint on the hub: its PlacementDecision moves to {spare}",
            taint,
            (ExpectedDiff(PLACEMENT, (spare,), (TAINTED,)),),
            timeout_s=15.0,
            observed=demo_hub.observed,
        ),
    ]
