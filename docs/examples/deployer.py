"""A deployer for one fleetplace rollout: apply the revision where the rollout says, report back.

    python docs/examples/deployer.py apps/web --bootstrap 127.0.0.1:9092          # follow forever
    python docs/examples/deployer.py apps/web --until-settled                      # stop when done
    python docs/examples/deployer.py apps/web --until-settled --fail east-2        # a failing cluster

The exit status is 1 when the rollout has breached maxFailures (a script or CI job running the
deployer sees the failed rollout), else 0.

`RolloutDeployer` follows the rollout's current answer on `rollout-state`, calls `apply` for each
cluster the rollout says to roll out to now, polls `healthy` until it says yes, and reports
`Progressing` / `Succeeded` / `Failed` on `rollout-status` — which is what moves the rollout on.

Here "applying" writes the revision to a file per cluster in the user's state directory
($XDG_STATE_HOME/fleetplace/deployer, else ~/.local/state/fleetplace/deployer; --state to
choose), and a cluster is healthy once its file holds the revision. Replace both with real work
(a GitOps commit, an API call, a health endpoint). The deployer itself keeps nothing: kill it
and start it again, and it reads its own reports back and applies nothing twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

from fleetplace.subscriber import RolloutDeployer, settled


def default_state_dir() -> Path:
    """Outside any checkout: the user's state directory (XDG Base Directory)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fleetplace" / "deployer"


class FileTarget:
    """A stand-in for the clusters: one file per cluster holding the revision applied there."""

    def __init__(self, root: Path, rollout: str, failing: set[str]) -> None:
        self.root = root / rollout
        self.failing = failing
        self.revision = ""
        self.lock = threading.Lock()  # plain functions run in threads, several at once

    def say(self, what: str, cluster: str) -> None:
        with self.lock:
            print(f"{what:<8} {cluster} {self.revision}", flush=True)

    def apply(self, cluster: str) -> None:
        if cluster in self.failing:
            raise RuntimeError(f"cannot reach {cluster}")
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / cluster).write_text(self.revision)
        self.say("apply", cluster)

    def healthy(self, cluster: str) -> bool:
        path = self.root / cluster
        ok = path.exists() and path.read_text() == self.revision
        if ok:
            self.say("healthy", cluster)
        return ok


async def run(args: argparse.Namespace) -> int:
    """Deploy until stopped (or settled); the exit status: 1 when the rollout breached maxFailures."""
    target = FileTarget(args.state, args.rollout, set(args.fail))
    deployer: RolloutDeployer

    def apply(cluster: str) -> None:
        state = deployer.state
        target.revision = state.revision if state is not None else ""
        target.apply(cluster)

    deployer = RolloutDeployer(
        args.bootstrap, args.rollout, apply, target.healthy, prefix=args.prefix, poll_interval=args.poll
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, deployer.stop)  # finishes the step under way, then returns
    final = await deployer.run(until=settled if args.until_settled else None)
    if final is not None:
        outcome = (
            "complete"
            if final.complete
            else "maxFailures breached"
            if final.max_failure_breach
            else "stopped"
        )
        print(f"{args.rollout} {final.revision}: {outcome}", flush=True)
        if final.max_failure_breach:
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rollout", help="NAMESPACE/NAME of the Rollout")
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    parser.add_argument("--prefix", default=os.environ.get("FLEETPLACE_TOPIC_PREFIX", "fleetplace."))
    parser.add_argument("--state", type=Path, default=default_state_dir(), help="Where the files go.")
    parser.add_argument("--poll", type=float, default=1.0, help="Seconds between health checks.")
    parser.add_argument("--fail", action="append", default=[], help="A cluster whose apply fails.")
    parser.add_argument("--until-settled", action="store_true", help="Exit once complete or breached.")
    args = parser.parse_args(argv)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
