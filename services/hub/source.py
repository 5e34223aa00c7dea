"""The reflector: one list-and-watch loop per kind, as client-go's.

It lists (in pages), hands the whole list on as a `Snapshot`, then watches from the list's
resourceVersion with bookmarks and hands on each change (`Upsert`, `Delete`). A watch that ends
(its timeout, a dropped connection) is resumed from the last resourceVersion seen, bookmarks
included; `410 Gone` (that version compacted away) starts a new list, whose snapshot lets the
store publish exactly what changed meanwhile, deletions included. No decision is made here.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleetplace.services.hub.api import Gone, HubApi, HubError
from fleetplace.services.hub.kinds import HubKind, as_published
from fleetplace.shared.logging import get_logger

log = get_logger("fleetplace.hub")

# client-go's page size for a reflector's list.
PAGE_SIZE = 500
# After a failed watch or list, wait this long before the next try, doubling up to the cap.
RETRY_S = 0.5
RETRY_CAP_S = 30.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every object of a kind at one resourceVersion: whatever else its topic holds is gone."""

    kind: HubKind
    objects: dict[str, dict[str, Any]]  # key → object as published


@dataclass(frozen=True, slots=True)
class Upsert:
    kind: HubKind
    key: str
    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Delete:
    kind: HubKind
    key: str


Change = Snapshot | Upsert | Delete


def resource_version(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


class Reflector:
    """Lists and watches one kind, handing every change to `deliver` in the order the API server
    served them."""

    def __init__(
        self,
        api: HubApi,
        kind: HubKind,
        deliver: Callable[[Change], None],
        *,
        watch_timeout_s: int = 300,
        page_size: int = PAGE_SIZE,
        on_gone: Callable[[HubKind], None] | None = None,
    ) -> None:
        self.api = api
        self.kind = kind
        self.deliver = deliver
        self.watch_timeout_s = watch_timeout_s
        self.page_size = page_size
        self.on_gone = on_gone
        self.resource_version: str | None = None
        self.synced = asyncio.Event()  # set once the first list has been handed on
        self.lists = 0
        self.watches = 0
        self.relists_gone = 0

    async def list(self) -> None:
        """List every object and hand the snapshot on; the watch resumes from its version."""
        objects: dict[str, dict[str, Any]] = {}
        query: dict[str, str | int | bool] = {"limit": self.page_size}
        while True:
            try:
                page = await self.api.request("GET", self.kind.list_path(), query=query)
            except Gone:
                # the continue token expired (a page took longer than etcd keeps versions): start over
                objects, query = {}, {"limit": self.page_size}
                continue
            for item in page.get("items", []):
                # items of a list carry no apiVersion and kind of their own: as a watch serves them
                obj = as_published({"apiVersion": self.kind.api_version, "kind": self.kind.kind, **item})
                objects[self.kind.key(obj)] = obj
            token = page.get("metadata", {}).get("continue")
            if not token:
                self.resource_version = str(page["metadata"]["resourceVersion"])
                break
            query = {"limit": self.page_size, "continue": token}
        self.lists += 1
        self.deliver(Snapshot(self.kind, objects))
        self.synced.set()

    async def watch(self) -> None:
        """One watch from the current resourceVersion, until the server ends it. Gone propagates."""
        assert self.resource_version is not None, "list first"
        # client-go spreads watch timeouts between the timeout and twice it, so that watches of many
        # clients do not all end together
        timeout = random.randint(self.watch_timeout_s, 2 * self.watch_timeout_s)
        self.watches += 1
        async for event in self.api.watch(self.kind.list_path(), self.resource_version, timeout_s=timeout):
            kind, obj = event.get("type"), event.get("object") or {}
            version = resource_version(obj)
            if kind in ("ADDED", "MODIFIED"):
                published = as_published(obj)
                self.deliver(Upsert(self.kind, self.kind.key(published), published))
            elif kind == "DELETED":
                self.deliver(Delete(self.kind, self.kind.key(obj)))
            elif kind != "BOOKMARK":
                log.warning("unknown watch event ignored", kind=self.kind.kind, type=kind)
                continue
            if version:
                self.resource_version = version

    async def run(self) -> None:
        """List, then watch for ever; relist on 410, retry other failures with a growing pause."""
        delay = RETRY_S
        while True:
            try:
                if self.resource_version is None:
                    await self.list()
                await self.watch()
                delay = RETRY_S
            except Gone as gone:
                self.relists_gone += 1
                if self.on_gone is not None:
                    self.on_gone(self.kind)
                log.info("watch expired; listing again", kind=self.kind.kind, reason=str(gone))
                self.resource_version = None
            except HubError as error:
                log.warning(
                    "hub request failed; retrying", kind=self.kind.kind, error=str(error), retry_s=delay
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_CAP_S)
