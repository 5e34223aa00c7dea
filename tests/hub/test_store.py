"""The bridge's store (services/hub/store.py): a list from the hub publishes exactly the
difference with what the topic holds, and nothing when nothing changed."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fleetplace.services.hub.kinds import HUB_KINDS
from fleetplace.services.hub.source import Delete, Snapshot, Upsert
from fleetplace.services.hub.store import TopicStore

KIND = HUB_KINDS[0]
keys = st.sampled_from([f"c{i}" for i in range(8)])
versions = st.sampled_from(["1", "2", "3"])
# what a topic holds: key → resourceVersion, or None for a record written without one
topic_states = st.dictionaries(keys, st.one_of(versions, st.none()))
hub_states = st.dictionaries(keys, versions)


def obj(key: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": key, "resourceVersion": version}}


def store_holding(state: dict[str, str | None]) -> TopicStore:
    store = TopicStore()
    for key, version in state.items():
        store.observe("clusters", key, {"metadata": {}} if version is None else obj(key, version))
    return store


@given(topic_states, hub_states)
def test_a_snapshot_publishes_exactly_the_difference(
    topic: dict[str, str | None], hub: dict[str, str]
) -> None:
    store = store_holding(topic)
    published = dict(store.apply("clusters", Snapshot(KIND, {k: obj(k, v) for k, v in hub.items()})))
    # what the topic holds afterwards is what the hub holds
    after = {
        **topic,
        **{k: (None if v is None else v["metadata"]["resourceVersion"]) for k, v in published.items()},
    }
    assert {k: v for k, v in after.items() if v is not None} == hub
    # and nothing was published that already was on the topic
    assert {k for k, v in published.items() if v is not None} == {
        k for k, v in hub.items() if topic.get(k) != v
    }
    assert {k for k, v in published.items() if v is None} == set(topic) - set(hub)
    # a second identical list publishes nothing
    assert store.apply("clusters", Snapshot(KIND, {k: obj(k, v) for k, v in hub.items()})) == []


def test_watch_events_publish_changes_only() -> None:
    store = store_holding({"a": "1"})
    assert store.apply("clusters", Upsert(KIND, "a", obj("a", "1"))) == []
    assert store.apply("clusters", Upsert(KIND, "a", obj("a", "2"))) == [("a", obj("a", "2"))]
    assert store.apply("clusters", Delete(KIND, "a")) == [("a", None)]
    assert store.apply("clusters", Delete(KIND, "a")) == [], (
        "a key already tombstoned is not tombstoned again"
    )
