"""The store: what the bridge's topics hold, one resourceVersion per key, and the records a
change from the hub makes (Kafka Streams' state store, with the topic as its changelog).

A snapshot (a full list) publishes new and changed objects and a tombstone for every key the hub
no longer has; an object whose resourceVersion is already on its topic is not published again.
"""

from __future__ import annotations

from typing import Any

from fleetplace.services.hub.source import Change, Delete, Snapshot, Upsert, resource_version

# The entry for a record that carries no resourceVersion (written by something else than a
# bridge): never equal to an object's, so the hub's version replaces it.
FOREIGN = ""

Publication = tuple[str, dict[str, Any] | None]  # (key, object or None for a tombstone)


class TopicStore:
    """Per topic, key → resourceVersion of what is on it."""

    def __init__(self) -> None:
        self.topics: dict[str, dict[str, str]] = {}

    def observe(self, topic: str, key: str, value: dict[str, Any] | None) -> None:
        """A record read from a topic."""
        table = self.topics.setdefault(topic, {})
        if value is None:
            table.pop(key, None)
            return
        meta = value.get("metadata")
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        table[key] = str(version) if version else FOREIGN

    def apply(self, topic: str, change: Change) -> list[Publication]:
        """What to publish for a change from the hub; the store then holds it."""
        table = self.topics.setdefault(topic, {})
        out: list[Publication] = []
        if isinstance(change, Snapshot):
            for key in sorted(set(table) - set(change.objects)):
                del table[key]
                out.append((key, None))
            for key, obj in sorted(change.objects.items()):
                if table.get(key) != resource_version(obj):
                    table[key] = resource_version(obj)
                    out.append((key, obj))
        elif isinstance(change, Upsert):
            if table.get(change.key) != resource_version(change.obj):
                table[change.key] = resource_version(change.obj)
                out.append((change.key, change.obj))
        elif isinstance(change, Delete) and change.key in table:
            del table[change.key]
            out.append((change.key, None))
        return out
