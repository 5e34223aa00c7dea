"""The hub bridge (services/hub) against a real kube-apiserver and the embedded broker: every kind
reaches its topic; a bridge killed and restarted publishes what changed and nothing else; a watch
that comes back `410 Gone` after etcd compaction lists again and publishes exactly the difference;
one bridge per hub."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from fleetplace.services.hub.api import Gone, HubApi
from fleetplace.services.hub.kinds import HUB_KINDS, HubKind
from fleetplace.services.hub.source import Change, Reflector
from fleetplace.services.hub.store import TopicStore
from fleetplace.services.hub.worker import HubBridge
from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ApiError, ControlPlane
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.hub.processes import start_hub_bridge, wait_ready
from tests.proc import stop_process

pytestmark = pytest.mark.integration

KIND = {k.kind: k for k in HUB_KINDS}


def example(kind: HubKind, ns: str) -> dict[str, Any]:
    """A valid object of each kind, named after the test's namespace (cluster-scoped names too)."""
    meta: dict[str, Any] = {"name": f"{ns}-x"} if not kind.namespaced else {"name": "x", "namespace": ns}
    body: dict[str, Any] = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}
    if kind.kind == "ManagedCluster":
        body["spec"] = {"hubAcceptsClient": True}
    elif kind.kind == "ManagedClusterSetBinding":
        meta["name"] = f"{ns}-x"  # a binding is named after its set
        body["spec"] = {"clusterSet": f"{ns}-x"}
    elif kind.kind == "ClusterProfile":
        body["spec"] = {"displayName": "x", "clusterManager": {"name": "tests"}}
    elif kind.kind in ("ManagedClusterSet", "Placement"):
        body["spec"] = {}
    return body


def path_of(hub: ControlPlane, obj: dict[str, Any]) -> str:
    from fleetplace.shared.control_plane import resource_path

    return resource_path(hub, obj)


def namespace(hub: ControlPlane) -> str:
    ns = f"t{uuid.uuid4().hex[:8]}"
    hub.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return ns


def settings_for(broker: str, prefix: str, hub: ControlPlane, **extra: Any) -> Settings:
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=broker),
        topic_prefix=prefix,
        http_port=0,
        hub_kubeconfig=str(hub.kubeconfig),
        hub_lease_name=f"{prefix}hub".replace(".", "-"),
        hub_lease_duration_s=3,
        hub_lease_renew_deadline_s=2,
        hub_lease_retry_s=0.2,
        **extra,
    )


async def topic_records(broker: str, topic: str) -> list[tuple[str, dict[str, Any] | None]]:
    """Every record of a topic, in order per key, as (key, value)."""
    async with BroadcastReader(broker, [topic]) as reader:
        records = await reader.read_to_end()
    return [
        (str(r.key), decode_object(r.value)) for r in sorted(records, key=lambda r: (r.partition, r.offset))
    ]


def table(records: list[tuple[str, dict[str, Any] | None]]) -> dict[str, dict[str, Any]]:
    """The last value per key, tombstoned keys left out."""
    latest: dict[str, dict[str, Any] | None] = {}
    for key, value in records:
        latest[key] = value
    return {k: v for k, v in latest.items() if v is not None}


async def eventually(
    check: Callable[[], Any], what: str, timeout: float = 60.0, *, why: Callable[[], str] | None = None
) -> Any:
    """Poll an async `check` until it returns something truthy; `why` says, on a timeout, what
    was still missing."""
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {why()}" if why else ""))
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[HubBridge]:
    bridge = HubBridge(settings)
    task = asyncio.create_task(bridge.run())
    try:
        deadline = time.monotonic() + 60
        while not (bridge.leading and bridge.runtime.ready):
            if task.done():
                task.result()
            assert time.monotonic() < deadline, "the bridge never led and listed"
            await asyncio.sleep(0.05)
        yield bridge
    finally:
        bridge.stop()
        async with asyncio.timeout(60):
            await task


def served(hub: ControlPlane, obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server serves it now, without managedFields."""
    current: dict[str, Any] = hub.request("GET", path_of(hub, obj))
    current["metadata"].pop("managedFields", None)
    return current


async def test_every_kind_created_updated_and_deleted_reaches_its_topic(
    hub: ControlPlane, broker: str, topics: Topics
) -> None:
    ns = namespace(hub)
    async with running(settings_for(broker, topics.prefix, hub)):
        for kind in HUB_KINDS:
            topic = topics.name(kind.topic)
            obj = example(kind, ns)
            key = kind.key(obj)
            hub.apply(obj)
            created = served(hub, obj)

            async def has(version: str, topic: str = topic, key: str = key) -> bool:
                value = table(await topic_records(broker, topic)).get(key)
                return value is not None and value["metadata"]["resourceVersion"] == version

            await eventually(lambda v=created["metadata"]["resourceVersion"]: has(v), f"{kind.kind} created")
            on_topic = table(await topic_records(broker, topic))[key]
            assert on_topic == created, "published as served, managedFields dropped"
            assert "managedFields" not in on_topic["metadata"]

            hub.apply({**obj, "metadata": {**obj["metadata"], "labels": {"changed": "yes"}}})
            updated = served(hub, obj)
            await eventually(lambda v=updated["metadata"]["resourceVersion"]: has(v), f"{kind.kind} updated")
            assert table(await topic_records(broker, topic))[key]["metadata"]["labels"] == {"changed": "yes"}

            hub.request("DELETE", path_of(hub, obj))

            async def tombstoned(topic: str = topic, key: str = key) -> bool:
                records = await topic_records(broker, topic)
                return bool(records) and [v for k, v in records if k == key][-1] is None

            await eventually(tombstoned, f"{kind.kind} deleted")


async def test_an_ended_watch_resumes_from_its_version_without_listing_again(
    hub: ControlPlane, broker: str, topics: Topics
) -> None:
    ns = namespace(hub)
    kind = KIND["ManagedCluster"]
    async with running(settings_for(broker, topics.prefix, hub, hub_watch_timeout_s=1)) as bridge:
        reflector = next(r for r in bridge.reflectors if r.kind is kind)
        async with asyncio.timeout(60):
            while reflector.watches < 3:  # the server ended the watch twice; it was resumed each time
                await asyncio.sleep(0.1)
        hub.apply({**example(kind, ns), "metadata": {"name": f"{ns}-late"}})

        async def on_topic() -> bool:
            return f"{ns}-late" in table(await topic_records(broker, topics.clusters))

        await eventually(on_topic, "a cluster created after the resumed watches")
        assert reflector.lists == 1, "resumed from its resourceVersion, not listed again"
        assert reflector.relists_gone == 0


def bridge_process(broker: str, prefix: str, hub: ControlPlane, port: int) -> subprocess.Popen[str]:
    settings = settings_for(broker, prefix, hub)
    env = {
        **os.environ,
        "FLEETPLACE_HUB_LEASE_NAME": settings.hub_lease_name,
        "FLEETPLACE_HUB_LEASE_DURATION_S": "3",
        "FLEETPLACE_HUB_LEASE_RENEW_DEADLINE_S": "2",
        "FLEETPLACE_HUB_LEASE_RETRY_S": "0.2",
        "FLEETPLACE_LOG_LEVEL": "warning",
    }
    return start_hub_bridge(broker, prefix, hub.kubeconfig, port, env)


def clusters_on_hub(hub: ControlPlane) -> dict[str, str]:
    items = hub.request("GET", KIND["ManagedCluster"].list_path())["items"]
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in items}


async def test_a_killed_bridge_restarted_publishes_what_changed_and_nothing_else(
    hub: ControlPlane, broker: str, topics: Topics
) -> None:
    ns = namespace(hub)
    kind = KIND["ManagedCluster"]
    names = {n: f"{ns}-{n}" for n in ("kept", "changed", "deleted")}
    for name in names.values():
        hub.apply({**example(kind, ns), "metadata": {"name": name}})
    port = free_port()
    first = bridge_process(broker, topics.prefix, hub, port)
    try:
        await wait_ready(first, port)

        async def published_all() -> bool:
            return table(await topic_records(broker, topics.clusters)).keys() >= set(names.values())

        await eventually(published_all, "the first bridge's clusters")
    finally:
        first.send_signal(signal.SIGKILL)  # no clean stop: its Lease stays until it expires
        first.wait()

    hub.apply({**example(kind, ns), "metadata": {"name": names["changed"], "labels": {"v": "2"}}})
    hub.request("DELETE", f"{kind.list_path()}/{names['deleted']}")
    added = f"{ns}-added"
    hub.apply({**example(kind, ns), "metadata": {"name": added}})

    second = bridge_process(broker, topics.prefix, hub, port := free_port())
    try:
        await wait_ready(second, port)

        async def converged() -> bool:
            return {
                k: v["metadata"]["resourceVersion"]
                for k, v in table(await topic_records(broker, topics.clusters)).items()
            } == clusters_on_hub(hub)

        await eventually(converged, "the topic equal to a fresh list")
    finally:
        stop_process(second)
    records = await topic_records(broker, topics.clusters)
    per_key = {name: [v for k, v in records if k == name] for name in [*names.values(), added]}
    assert len(per_key[names["kept"]]) == 1, "an unchanged cluster is not published again"
    assert len(per_key[names["changed"]]) == 2
    assert per_key[names["changed"]][-1]["metadata"]["labels"] == {"v": "2"}  # type: ignore[index]
    assert per_key[names["deleted"]][-1] is None, "deleted meanwhile: a tombstone"
    assert len(per_key[names["deleted"]]) == 2
    assert len(per_key[added]) == 1


async def test_a_watch_gone_after_compaction_lists_again_and_publishes_exactly_the_difference(
    hub_without_watch_cache: ControlPlane,
) -> None:
    hub = hub_without_watch_cache
    ns = namespace(hub)
    kind = KIND["Placement"]
    for name in ("kept", "changed", "deleted"):
        hub.apply({**example(kind, ns), "metadata": {"name": name, "namespace": ns}})
    delivered: list[Change] = []
    async with await HubApi.connect(str(hub.kubeconfig)) as api:
        reflector = Reflector(api, kind, delivered.append, watch_timeout_s=60)
        await reflector.list()
        store = TopicStore()
        first = store.apply("placements", delivered.pop())
        assert {k for k, _ in first} >= {f"{ns}/kept", f"{ns}/changed", f"{ns}/deleted"}

        # meanwhile (the watch not running): one changed, one deleted, one added, then compaction
        hub.apply(
            {**example(kind, ns), "metadata": {"name": "changed", "namespace": ns, "labels": {"v": "2"}}}
        )
        hub.request("DELETE", f"/apis/{kind.api_version}/namespaces/{ns}/placements/deleted")
        hub.apply({**example(kind, ns), "metadata": {"name": "added", "namespace": ns}})
        hub.compact_etcd()

        with pytest.raises(Gone):
            await reflector.watch()
        # run() resumes from the same stale version, as a watch resumed after a pause does
        task = asyncio.create_task(reflector.run())
        try:
            deadline = time.monotonic() + 60
            while reflector.lists < 2:
                assert time.monotonic() < deadline, "no list after 410 Gone"
                await asyncio.sleep(0.05)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert reflector.relists_gone == 1
    published = [p for change in delivered for p in store.apply("placements", change)]
    ours = {
        k: "tombstone" if v is None else v["metadata"].get("labels", {})
        for k, v in published
        if k.startswith(f"{ns}/")
    }
    assert ours == {f"{ns}/changed": {"v": "2"}, f"{ns}/deleted": "tombstone", f"{ns}/added": {}}


async def test_one_bridge_per_hub_a_standby_takes_over_when_the_leader_stops(
    hub: ControlPlane, broker: str, topics: Topics
) -> None:
    ns = namespace(hub)
    kind = KIND["ManagedCluster"]
    settings = settings_for(broker, topics.prefix, hub)
    async with running(settings) as leader:
        standby = HubBridge(settings, instance="standby")
        task = asyncio.create_task(standby.run())
        try:
            async with asyncio.timeout(60):
                while not standby.runtime.ready:
                    await asyncio.sleep(0.05)
            hub.apply({**example(kind, ns), "metadata": {"name": f"{ns}-a"}})

            async def on_topic(name: str) -> bool:
                return name in table(await topic_records(broker, topics.clusters))

            await eventually(lambda: on_topic(f"{ns}-a"), "the leader's record")
            assert leader.leading and not standby.leading
            assert standby.published == 0
        except BaseException:
            standby.stop()
            await task
            raise
    # the leader stopped cleanly and released the Lease: the standby leads, with the store it read
    try:
        async with asyncio.timeout(60):
            while not (standby.leading and standby.runtime.ready):
                await asyncio.sleep(0.05)
        hub.apply({**example(kind, ns), "metadata": {"name": f"{ns}-b"}})
        await eventually(lambda: on_topic(f"{ns}-b"), "the successor's record")
        records = await topic_records(broker, topics.clusters)
        assert len([k for k, _ in records if k == f"{ns}-a"]) == 1, (
            "the successor republished nothing unchanged"
        )
    finally:
        standby.stop()
        await task


def test_deleting_a_missing_object_is_an_api_error(hub: ControlPlane) -> None:
    with pytest.raises(ApiError) as error:
        hub.request("DELETE", f"{KIND['ManagedCluster'].list_path()}/no-such-cluster")
    assert error.value.status == 404


async def test_the_bridge_whose_watch_comes_back_gone_lists_again_and_republishes_nothing(
    hub_without_watch_cache: ControlPlane, broker: str, topics: Topics
) -> None:
    hub = hub_without_watch_cache
    ns = namespace(hub)
    kind = KIND["Placement"]
    for name in ("a", "b"):
        hub.apply({**example(kind, ns), "metadata": {"name": name, "namespace": ns}})
    # watches end every second or two and resume from the last version they saw
    async with running(settings_for(broker, topics.prefix, hub, hub_watch_timeout_s=1)) as bridge:

        async def published(*names: str) -> bool:
            return {f"{ns}/{n}" for n in names} <= table(
                await topic_records(broker, topics.placements)
            ).keys()

        await eventually(lambda: published("a", "b"), "the placements")
        namespace(hub)  # a later write, so that compaction passes every placement's version
        hub.compact_etcd()

        # counted by the bridge, not by a reflector: a loaded machine may make the bridge lose its
        # 3-second Lease and lead again with new reflectors
        def counted(metric: str) -> float:
            return bridge.registry.get_sample_value(metric, {"kind": "Placement"}) or 0.0

        async def relisted() -> bool:
            return counted("fleetplace_hub_watch_gone_total") >= 1

        await eventually(relisted, "a watch that comes back 410 Gone")
        hub.apply({**example(kind, ns), "metadata": {"name": "c", "namespace": ns}})
        await eventually(lambda: published("a", "b", "c"), "a placement created after the relist")
        assert counted("fleetplace_hub_lists_total") >= 2
    records = await topic_records(broker, topics.placements)
    assert [k for k, _ in records if k.startswith(f"{ns}/")].count(f"{ns}/a") == 1, (
        "the relist republished nothing"
    )
    items = hub.request("GET", kind.list_path())["items"]
    on_hub = {
        f"{i['metadata']['namespace']}/{i['metadata']['name']}": i["metadata"]["resourceVersion"]
        for i in items
    }
    assert {k: v["metadata"]["resourceVersion"] for k, v in table(records).items()} == on_hub
