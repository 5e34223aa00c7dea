"""The sink's requests against the tests' control plane, as the admin or a ServiceAccount token,
and a watch of one collection: real HTTPS to the real API server."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from fleetplace.shared.control_plane import ControlPlane


class ServerRequests:
    """`HubRequests` (services/hub/sink.py) over the control plane's client; counts its calls."""

    def __init__(self, hub: ControlPlane, token: str | None = None) -> None:
        self.hub = hub
        self.token = token
        self.calls: list[tuple[str, str]] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        self.calls.append((method, path))
        url = path + ("?" + urllib.parse.urlencode(dict(query)) if query else "")
        answer = await asyncio.to_thread(self.hub.request, method, url, body, token=self.token)
        return answer if isinstance(answer, dict) else {}


async def watch(hub: ControlPlane, path: str, resource_version: str) -> AsyncIterator[dict[str, Any]]:
    """The events of a watch of `path` from `resource_version`, as the admin, until cancelled."""
    query = {"watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(hub.server + path, params=query, ssl=hub.ssl_context(), timeout=None) as response,
    ):
        response.raise_for_status()
        pending = b""
        async for chunk in response.content.iter_any():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield json.loads(line)
