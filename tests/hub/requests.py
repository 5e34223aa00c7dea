"""The bridge's own client (`HubApi`) connected to the tests' control plane, as its admin or as
the bearer of a ServiceAccount token."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator

from fleetplace.services.hub.api import HubApi
from fleetplace.shared.control_plane import ControlPlane, kubeconfig_text


@contextlib.asynccontextmanager
async def connected(hub: ControlPlane, token: str | None = None) -> AsyncIterator[HubApi]:
    kubeconfig = hub.kubeconfig
    if token is not None:
        # in the control plane's own data directory, removed when it stops
        kubeconfig = hub.data_dir / f"token-{hashlib.sha256(token.encode()).hexdigest()[:12]}.kubeconfig"
        kubeconfig.write_text(kubeconfig_text(hub.server, hub.credentials, token=token, user="bridge"))
    api = await HubApi.connect(str(kubeconfig))
    try:
        yield api
    finally:
        await api.close()
