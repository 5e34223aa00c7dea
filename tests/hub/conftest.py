"""The control plane the hub tests share (shared/control_plane.py).

`hub`: etcd and kube-apiserver with RBAC and the upstream CRDs, one per test process (session
scope; under pytest-xdist each process that runs a hub test starts its own).
`hub_without_watch_cache`: the same with the API server's watch cache off, so that a watch is
served by etcd itself and compacting etcd makes an old resourceVersion `410 Gone` at once (the
watch cache answers from its own window, which compaction does not shrink).

Without the binaries (`make hub-binaries`) the tests are skipped with that reason, unless
FLEETPLACE_REQUIRE_HUB=1 (CI), where the missing binaries fail them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fleetplace.shared.control_plane import Binaries, ControlPlane, ControlPlaneError, control_plane
from tests.upstream.crds import upstream_crds

REQUIRE_ENV = "FLEETPLACE_REQUIRE_HUB"


def _binaries() -> Binaries:
    try:
        return Binaries.find()
    except ControlPlaneError as error:
        if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
            raise
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def hub() -> Iterator[ControlPlane]:
    with control_plane(crds=upstream_crds(), binaries=_binaries()) as running:
        yield running


@pytest.fixture(scope="session")
def hub_without_watch_cache() -> Iterator[ControlPlane]:
    binaries = _binaries()
    with control_plane(
        crds=upstream_crds(), binaries=binaries, extra_apiserver_args=["--watch-cache=false"]
    ) as running:
        yield running
