"""A deployer that follows fleetplace's decisions: deploy where a cluster is added, undeploy where
one is removed, and survive restarts without acting twice.

    python docs/examples/deployer.py --bootstrap 127.0.0.1:9092            # follow forever
    python docs/examples/deployer.py --bootstrap 127.0.0.1:9092 --once     # catch up, then exit

Its state file (default: $XDG_STATE_HOME/fleetplace/deployer-state.json, else
~/.local/state/fleetplace/deployer-state.json; --state to choose) holds the subscriber's
position (next offsets, applied seqs, current view) together with what it deployed, written atomically after each diff: a restart resumes exactly
after the last diff it acted on. Replace `deploy`/`undeploy` with real work (a GitOps commit,
an API call); make them idempotent, because a crash between acting and saving replays that one
diff after the restart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from fleetplace.subscriber import DecisionSubscriber, SubscriberPosition


def deploy(placement: str, cluster: str) -> None:
    print(f"deploy   {placement} -> {cluster}", flush=True)


def undeploy(placement: str, cluster: str) -> None:
    print(f"undeploy {placement} -> {cluster}", flush=True)


def load(path: Path) -> tuple[SubscriberPosition | None, dict[str, list[str]]]:
    if not path.exists():
        return None, {}
    state: dict[str, Any] = json.loads(path.read_text())
    return SubscriberPosition.model_validate(state["position"]), state["deployed"]


def default_state_path() -> Path:
    """Outside any checkout: the user's state directory (XDG Base Directory)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fleetplace" / "deployer-state.json"


def save(path: Path, position: SubscriberPosition, deployed: dict[str, list[str]]) -> None:
    """One atomic write: the position never runs ahead of (or behind) what was deployed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    state = {"position": position.model_dump(mode="json"), "deployed": deployed}
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(tmp, path)


async def run(bootstrap: str, prefix: str, state_path: Path, follow: bool) -> None:
    position, deployed = load(state_path)
    async with DecisionSubscriber(bootstrap, prefix=prefix, position=position, follow=follow) as subscriber:
        async for diff in subscriber:
            for cluster in diff.removed:
                undeploy(diff.placement, cluster)
            for cluster in diff.added:
                deploy(diff.placement, cluster)
            if diff.deleted:
                deployed.pop(diff.placement, None)
            else:
                deployed[diff.placement] = list(diff.decisions)
            save(state_path, subscriber.position(), deployed)
        for gap in subscriber.gaps:
            print(f"warning: {gap.placement}: seq {gap.expected}..{gap.got - 1} never seen", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    parser.add_argument("--prefix", default=os.environ.get("FLEETPLACE_TOPIC_PREFIX", "fleetplace."))
    parser.add_argument("--state", type=Path, default=default_state_path())
    parser.add_argument("--once", action="store_true", help="Exit once caught up.")
    args = parser.parse_args(argv)

    async def guarded() -> None:
        task = asyncio.create_task(run(args.bootstrap, args.prefix, args.state, follow=not args.once))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task  # on a signal: the state file already holds the last diff acted on

    asyncio.run(guarded())


if __name__ == "__main__":
    main()
