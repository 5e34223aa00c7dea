"""`make hub`: a control plane in the foreground for a user (shared/control_plane.py).

The first line of output is `KUBECONFIG=<path>`; SIGTERM or Ctrl-C stops both servers by their
process groups and removes the data directory.
"""

from __future__ import annotations

import signal
import sys
import threading

from fleetplace.shared.control_plane import KUBERNETES_VERSION, ControlPlaneError, control_plane
from tests.upstream.crds import UpstreamUnavailable, upstream_crds


def main() -> int:
    stop = threading.Event()
    # Only a flag: a signal during start-up lets the start finish, then everything is stopped.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        with control_plane(crds=upstream_crds()) as hub:
            print(f"KUBECONFIG={hub.kubeconfig}", flush=True)
            print(
                f"kube-apiserver {KUBERNETES_VERSION} at {hub.server}, etcd at {hub.etcd}, "
                f"pids {hub.apiserver_pid},{hub.etcd_pid}",
                flush=True,
            )
            print("Ctrl-C stops it and removes its data", flush=True)
            while not stop.wait(0.5):
                pass
    except (ControlPlaneError, UpstreamUnavailable) as error:
        print(f"make hub: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
