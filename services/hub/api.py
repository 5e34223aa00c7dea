"""The one path from the bridge to the hub's API server: kubernetes_asyncio's client (kubeconfig or
in-cluster credentials, its TLS and token handling) behind a QPS/burst limit.

Requests are sent through the client's `call_api` with the content left unparsed: the bridge
publishes objects exactly as served, so it wants the JSON, not the client's generated models.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import orjson
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.exceptions import ApiException

# OCM's controllers talk to the hub at 50 requests per second with bursts of 100; so does the bridge.
DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
_IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class HubError(Exception):
    """The API server refused a request, or could not be reached."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Gone(HubError):
    """`410 Gone`: the resourceVersion asked for has been compacted away; list again."""


class TokenBucket:
    """At most `qps` requests per second on average, `burst` at once (client-go's flowcontrol)."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._lock = asyncio.Lock()

    async def take(self) -> float:
        """Wait for a token; the seconds waited (in the queue behind other requests too)."""
        start = time.monotonic()
        async with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.qps)
            self._at = now
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.qps)
                self._tokens = 1.0
                self._at = time.monotonic()
            self._tokens -= 1
        return time.monotonic() - start


def in_cluster_namespace() -> str | None:
    """The namespace of the pod the bridge runs in, when it runs in one."""
    try:
        return _IN_CLUSTER_NAMESPACE.read_text().strip() or None
    except OSError:
        return None


class HubApi:
    """A connection to the hub. `async with await HubApi.connect(kubeconfig) as api: ...`"""

    def __init__(self, api_client: Any, *, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST) -> None:
        self._client = api_client
        self.limit = TokenBucket(qps, burst)
        self.server = str(api_client.configuration.host)
        # told of each request as it is sent: its verb and the seconds it waited for the limit
        self.on_request: Callable[[str, float], None] | None = None

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, *, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST
    ) -> HubApi:
        """Credentials from `kubeconfig`, else `$KUBECONFIG` or ~/.kube/config, else the pod's
        ServiceAccount (in-cluster)."""
        configuration = k8s_client.Configuration()
        path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        if kubeconfig and not Path(kubeconfig).is_file():
            raise HubError(f"kubeconfig {kubeconfig}: no such file")
        try:
            if kubeconfig or Path(path).is_file():
                await k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
            else:
                k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except (k8s_config.ConfigException, OSError, ValueError, yaml.YAMLError) as error:
            where = f"kubeconfig {path}" if kubeconfig or Path(path).is_file() else "in-cluster credentials"
            raise HubError(f"no credentials for the hub in {where}: {error}") from error
        return cls(k8s_client.ApiClient(configuration), qps=qps, burst=burst)

    async def __aenter__(self) -> HubApi:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._client.close()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Mapping[str, Any] | None = None,
        timeout: float | None = 30.0,
    ) -> Any:
        waited = await self.limit.take()
        if self.on_request is not None:
            self.on_request(_verb(method, query), waited)
        try:
            response = await self._client.call_api(
                path,
                method,
                query_params=[
                    (k, str(v).lower() if isinstance(v, bool) else v) for k, v in (query or {}).items()
                ],
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        except ApiException as error:  # the client's own refusal (arguments it cannot send)
            raise HubError(f"{method} {path}: {error.reason}", error.status) from None
        except (OSError, aiohttp.ClientError, TimeoutError) as error:
            raise HubError(f"{method} {path}: {type(error).__name__}: {error}") from error
        if response.status >= 400:  # the client checks statuses only when it reads the content itself
            try:
                raw = await response.read()
            finally:
                response.release()
            try:
                status = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                status = {}
            if not isinstance(status, dict) or status.get("kind") != "Status":
                status = {"message": raw[:300].decode(errors="replace")}
            raise _status_error(f"{method} {path}", {**status, "code": response.status})
        return response

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One call; the decoded JSON answer."""
        response = await self._call(method, path, query=query, body=body)
        try:
            raw = await response.read()
        finally:
            response.release()
        value: dict[str, Any] = orjson.loads(raw) if raw else {}
        return value

    async def watch(
        self, path: str, resource_version: str, *, timeout_s: int
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch from `resource_version`, bookmarks asked for, until the server
        ends it (after `timeout_s`). An ERROR event of 410 raises Gone."""
        query: dict[str, str | int | bool] = {
            "watch": True,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": timeout_s,
        }
        response = await self._call("GET", path, query=query, timeout=timeout_s + 30)
        try:
            pending = b""
            # Lines are split here: an object may be longer than a stream reader's line limit.
            async for chunk in response.content.iter_any():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        event: dict[str, Any] = orjson.loads(line)
                        if event.get("type") == "ERROR":
                            raise _status_error("watch " + path, event.get("object") or {})
                        yield event
        finally:
            response.release()


def _verb(method: str, query: Mapping[str, str | int | bool] | None) -> str:
    """The request's kind for the metrics: watch, get (any other GET, a list too), create,
    update, patch or delete."""
    if method == "GET":
        return "watch" if (query or {}).get("watch") else "get"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def _status_error(what: str, status: Mapping[str, Any]) -> HubError:
    code = int(status.get("code") or 0) or None
    message = f"{what}: {code} {status.get('reason', '')}: {status.get('message', '')}"
    return Gone(message, 410) if code == 410 else HubError(message, code)
