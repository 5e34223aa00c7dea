"""`fleetplace hub`: the hub's OCM objects and ClusterProfiles onto their topics (docs/hub.md).

Sources: the six state topics the bridge writes, read whole by every instance (a global table:
the *store* of what is published, one resourceVersion per key), and one reflector per kind on the
hub (services/hub/source.py). Sink: the same topics, keyed as the contract says, a tombstone for
a deleted object.

Only the instance holding the hub's Lease (services/hub/lease.py) runs the reflectors. It starts
them once the store is caught up *after* it took the Lease, so that it sees whatever the previous
holder published. A reflector's list is compared with the store: new and changed objects are
published, keys the hub no longer has get a tombstone, and an object whose resourceVersion is
already on its topic is not published again; a bridge that was down for a day converges with
what changed meanwhile and nothing else. A standby instance keeps reading the topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from fleetplace.services.hub.access import AccessDenied, reading, require
from fleetplace.services.hub.agreement import AgreementGauge
from fleetplace.services.hub.api import HubApi, HubError, in_cluster_namespace
from fleetplace.services.hub.kinds import HUB_KINDS, HubKind
from fleetplace.services.hub.lease import Lease
from fleetplace.services.hub.rbac import MissingPermissions, Mode, check_permissions
from fleetplace.services.hub.source import Change, Reflector, Snapshot
from fleetplace.services.hub.status import why_not_chosen
from fleetplace.services.hub.store import TopicStore
from fleetplace.services.hub.writeback import WriteBack
from fleetplace.services.lifecycle import (
    RecordCounters,
    RunsOnRuntime,
    Topology,
    Turn,
    WorkerRuntime,
    run_until_signalled,
)
from fleetplace.shared.bus.codec import DecodeLimits, decode_record, encode_json
from fleetplace.shared.bus.envelope import HeaderStamp
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.kafka import Batch
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics, spec
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import Settings

log = get_logger("fleetplace.hub")


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.consumed = RecordCounters(registry).consumed
        self.published = Counter(
            "fleetplace_hub_records_published_total",
            "Objects (and tombstones) the bridge published, by topic",
            ["topic", "change"],
            registry=registry,
        )
        self.lists = Counter(
            "fleetplace_hub_lists_total", "Full lists of a kind from the hub", ["kind"], registry=registry
        )
        self.gone = Counter(
            "fleetplace_hub_watch_gone_total",
            "Watches that ended in 410 Gone and were followed by a list",
            ["kind"],
            registry=registry,
        )
        self.leading = Gauge(
            "fleetplace_hub_leading", "1 while this instance holds the hub's Lease", registry=registry
        )
        self.requests = Counter(
            "fleetplace_hub_requests_total",
            "Requests the bridge sent to the hub, by kind (watch, get, create, update, patch, delete)",
            ["request"],
            registry=registry,
        )
        self.waited = Counter(
            "fleetplace_hub_rate_limit_wait_seconds_total",
            "Seconds the bridge's requests waited for its client-side limit (FLEETPLACE_HUB_QPS, "
            "FLEETPLACE_HUB_BURST) before they were sent",
            registry=registry,
        )

    def request(self, kind: str, waited_s: float) -> None:
        self.requests.labels(kind).inc()
        self.waited.inc(waited_s)


class HubBridge(RunsOnRuntime):
    """One bridge instance. `await bridge.run()` until `bridge.stop()` or a signal."""

    def __init__(self, settings: Settings, *, instance: str = "hub", api: HubApi | None = None) -> None:
        self.settings = settings
        self._api = api  # connected already (the CLI checks the hub answers before it starts)
        self.topics = Topics(settings.topic_prefix)
        self.instance = instance
        self.source = f"fleetplace/{instance}"
        self.identity = f"{socket.gethostname()}_{os.getpid()}_{instance}"
        self.limits = DecodeLimits.from_settings(settings)
        self.registry = CollectorRegistry()
        self.metrics = _Metrics(self.registry)
        self.kinds: dict[str, HubKind] = {self.topics.name(k.topic): k for k in HUB_KINDS}
        # topics → hub: the scheduler's decisions, written back by the holder of the Lease
        self.writeback = WriteBack(
            Mode(settings.hub_mode), AgreementGauge(self.registry), explainer=self._why_not_chosen
        )
        self._decision_topics = {self.topics.decisions, self.topics.sigmc_placement_decisions}
        self._decided = asyncio.Event()
        self.store = TopicStore()
        self.reflectors: list[Reflector] = []
        self.leading = False
        self._store_caught_up = asyncio.Event()
        self._changes: list[Change] = []
        self.published = 0
        self.runtime = WorkerRuntime(
            settings,
            self,
            Topology(broadcast=[*self.kinds, *self._decision_topics], group=[], group_id=""),
            name="hub bridge",
            instance=instance,
            registry=self.registry,
            background=[self._lead],
            failpoints="hub",
        )

    # ---- the hooks the runtime calls --------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Standby: caught up on the topics. Leading: every kind listed and its list published."""
        if not self.leading:
            return self._store_caught_up.is_set()
        return bool(self.reflectors) and all(r.synced.is_set() for r in self.reflectors)

    @property
    def accepting(self) -> bool:
        return True

    def summary(self) -> Mapping[str, Any]:
        return {"published": self.published, "leading": self.leading}

    async def on_broadcast(self, batch: Batch, turn: Turn) -> None:
        for record in batch.records:
            self._observe(record)
        if batch.caught_up:
            self._store_caught_up.set()

    async def on_records(self, records: list[Record], turn: Turn) -> None:
        """No group sources."""

    async def on_turn(self, turn: Turn) -> None:
        changes, self._changes = self._changes, []
        if not changes:
            return
        stamps: dict[str, HeaderStamp] = {}
        now = datetime.now(UTC)
        for change in changes:
            topic = self.topics.name(change.kind.topic)
            stamp = stamps.get(topic) or stamps.setdefault(
                topic, HeaderStamp(spec(change.kind.topic).ce_type, self.source, now)
            )
            for key, obj in self.store.apply(topic, change):
                value = None if obj is None else encode_json(obj)
                turn.outgoing.append(OutgoingRecord(topic, key, value, stamp.headers()))
                self.metrics.published.labels(change.kind.topic, "delete" if obj is None else "upsert").inc()
                self.published += 1

    async def _why_not_chosen(self, placements: Sequence[str]) -> Mapping[str, Mapping[str, str]]:
        """fleetplace's reasons for the clusters it left out, explained from the topics as
        `fleetplace hub status` explains them."""
        return await why_not_chosen(self.settings.kafka, self.topics, placements, self.limits)

    # ---- the store --------------------------------------------------------------------------
    def _observe(self, record: Record) -> None:
        """A record read back from a topic. The leader's store is its own (it wrote what follows);
        a standby keeps up with whatever is published."""
        self.metrics.consumed.labels(self.topics.unprefixed(record.topic)).inc()
        if record.topic in self._decision_topics and record.key is not None:
            self._observe_decision(record)
            return
        if self.leading or record.key is None:
            return
        try:
            decoded = decode_record(record, self.limits)
        except DecodeError:
            self.store.observe(record.topic, record.key, {})
            return
        self.store.observe(record.topic, decoded.key, decoded.value)

    def _observe_decision(self, record: Record) -> None:
        """Every instance folds the decisions, so a new holder of the Lease writes at once."""
        try:
            decoded = decode_record(record, self.limits)
            self.writeback.observe(self.topics.unprefixed(record.topic), decoded.key, decoded.value)
        except (DecodeError, ValueError) as error:
            log.warning(
                "decision record not written back", topic=record.topic, key=record.key, error=str(error)
            )
            return
        self._decided.set()

    async def _write_back(self, api: HubApi) -> None:
        """While leading: every placement once, then each one whose decision changes."""
        self.writeback.dirty |= set(self.writeback.published.placements())
        while True:
            self._decided.clear()
            if self.writeback.dirty:
                await self.writeback.write_dirty(api)
            if not self.writeback.dirty:
                await self._decided.wait()
            else:
                await asyncio.sleep(1.0)  # a placement the hub refused: retried after a pause

    # ---- leading: a background job of the runtime ------------------------------------------
    def _deliver(self, change: Change) -> None:
        if isinstance(change, Snapshot):
            self.metrics.lists.labels(change.kind.kind).inc()
        self._changes.append(change)

    async def _lead(self) -> None:
        """Take the Lease, reflect the hub while it is held, stand by again when it is lost."""
        settings = self.settings
        try:
            api = self._api or await connect(settings)
        except HubError as error:
            log.error("cannot reach the hub", error=str(error))
            self.stop()
            return
        api.on_request = self.metrics.request
        lease = Lease(
            api,
            namespace=lease_namespace(settings),
            name=settings.hub_lease_name,
            identity=self.identity,
            duration_s=settings.hub_lease_duration_s,
            renew_deadline_s=settings.hub_lease_renew_deadline_s,
            retry_s=settings.hub_lease_retry_s,
        )
        try:
            while True:
                await self._store_caught_up.wait()
                await lease.acquire()
                # what the previous holder published last is read before the first list
                self._store_caught_up.clear()
                await self._store_caught_up.wait()
                self.leading = True
                self.metrics.leading.set(1)
                await self._reflect(api, lease)
                self.leading = False
                self.metrics.leading.set(0)
        finally:
            if self.leading:
                with contextlib.suppress(Exception):
                    await lease.release()
            await api.close()

    async def _reflect(self, api: HubApi, lease: Lease) -> None:
        """Run a reflector per kind until the Lease is lost (or a reflector fails unexpectedly)."""
        self.reflectors = [
            Reflector(
                api,
                kind,
                self._deliver,
                watch_timeout_s=self.settings.hub_watch_timeout_s,
                on_gone=lambda kind: self.metrics.gone.labels(kind.kind).inc(),
            )
            for kind in HUB_KINDS
        ]
        tasks = [asyncio.create_task(r.run(), name=f"reflect {r.kind.kind}") for r in self.reflectors]
        tasks.append(asyncio.create_task(self._write_back(api), name="write decisions back"))
        holding = asyncio.create_task(lease.hold(), name="hold the hub lease")
        try:
            done, _ = await asyncio.wait([holding, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not holding and task.exception() is not None:
                    log.error("reflector failed", task=task.get_name(), error=repr(task.exception()))
        finally:
            for task in [holding, *tasks]:
                task.cancel()
            await asyncio.gather(holding, *tasks, return_exceptions=True)
            self.reflectors = []
            # not published once the Lease is gone: the next holder lists anew, and a stale object
            # sent after its newer version would overwrite it
            self._changes.clear()


async def connect(settings: Settings) -> HubApi:
    """A connection to the hub that has answered (`/version`) and grants the bridge what it needs:
    credentials that do not load, a server that does not answer or refuses them, a permission
    missing, are a HubError before anything starts."""
    api = await HubApi.connect(
        settings.hub_kubeconfig or None, qps=settings.hub_qps, burst=settings.hub_burst
    )
    try:
        await api.request("GET", "/version")
        await require(api, reading(lease_namespace(settings)))

        async def allowed(review: dict[str, Any]) -> bool:
            answer = await api.request(
                "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review
            )
            return bool((answer.get("status") or {}).get("allowed"))

        try:
            await check_permissions(Mode(settings.hub_mode), allowed)
        except MissingPermissions as error:
            raise AccessDenied(str(error), 403) from None
    except HubError:
        await api.close()
        raise
    return api


def lease_namespace(settings: Settings) -> str:
    return settings.hub_lease_namespace or in_cluster_namespace() or "default"


async def run_hub_bridge(settings: Settings, instance: str = "hub") -> None:
    """One bridge until SIGTERM or SIGINT; HubError when the hub cannot be reached at start."""
    api = await connect(settings)
    await run_until_signalled(HubBridge(settings, instance=instance, api=api).runtime)
