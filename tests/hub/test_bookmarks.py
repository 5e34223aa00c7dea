"""The reflector asks for watch bookmarks and follows them: a watch on which no object of its kind
changed still moves its resourceVersion forward, so the next watch resumes from a recent version
(not one etcd may have compacted away) and nothing is delivered for it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fleetplace.services.hub.api import HubApi
from fleetplace.services.hub.source import Change, Reflector
from fleetplace.shared.control_plane import ControlPlane
from tests.hub.test_bridge import KIND, example, namespace

pytestmark = pytest.mark.integration


async def test_a_bookmark_moves_the_resource_version_without_an_object_event(
    hub: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    kind = KIND["ManagedClusterSet"]
    ns = namespace(hub)
    hub.apply(example(kind, ns))
    delivered: list[Change] = []
    served: list[tuple[str, str]] = []  # (type, resourceVersion) of every event the server sent
    async with await HubApi.connect(str(hub.kubeconfig)) as api:
        watch = api.watch

        def recording(path: str, resource_version: str, **options: Any) -> AsyncIterator[dict[str, Any]]:
            async def events() -> AsyncIterator[dict[str, Any]]:
                async for event in watch(path, resource_version, **options):
                    served.append(
                        (str(event.get("type")), str(event["object"]["metadata"]["resourceVersion"]))
                    )
                    yield event

            return events()

        monkeypatch.setattr(api, "watch", recording)
        # a short watch: the API server sends a bookmark shortly before it ends one
        reflector = Reflector(api, kind, delivered.append, watch_timeout_s=4)
        await reflector.list()
        listed = reflector.resource_version
        assert listed is not None
        delivered.clear()

        # the store moves on through objects of another kind only; a consistent list of this
        # kind makes the API server's cache of it catch up with the store's current version
        other: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"c{uuid.uuid4().hex[:6]}"},
        }
        for i in range(3):
            hub.apply({**other, "metadata": {**other["metadata"], "namespace": ns}, "data": {"i": str(i)}})
        current = hub.request("GET", kind.list_path(), timeout=60)["metadata"]["resourceVersion"]
        assert int(current) > int(listed)

        await reflector.watch()  # until the server ends it

    assert delivered == [], "no object of the kind changed: nothing to hand on"
    assert served, "the server sent no event at all on the watch"
    assert {t for t, _ in served} == {"BOOKMARK"}, served
    assert reflector.resource_version == served[-1][1]
    assert int(reflector.resource_version) >= int(current) > int(listed)
