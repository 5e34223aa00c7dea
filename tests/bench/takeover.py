"""`make bench-takeover`: how long until a dead worker's placements are served again.

5,000 clusters with AddOn scores and 10,000 placements on the embedded broker, two scheduler
worker processes in one group, every decision published. The worker that published most of the
decisions is SIGKILLed, and at the same moment one cluster change is sent that moves a placement
the dead worker owned. Measured from the kill, on the survivor:

* `owned_s`: until it owns every placement (`fleetplace_placements_owned`): the group noticing
  the death (the session timeout) and rebalancing;
* `ready_s`: until `/readyz` answers 200 again with every placement owned: the moved partitions
  read from the beginning and the state caught up;
* `first_diff_s`: until the diff the change causes for a moved placement is read back;
* `read_s`: a bare consumer reading the state a worker rebuilds from (every input topic and
  `decisions`), from the beginning to the end, in the same run: the floor of any rebuild.

`ratio = first_diff_s / read_s`; `controlled_ratio = (first_diff_s - assigned_s) / read_s` leaves
out the group's part (the session timeout and the rebalance), which the broker decides. Beside it, the phases from the survivor's own gauges (read once
it is idle): `session_timeout_s` (the worker's consumer-group session: a SIGKILLed member is only
dropped when it expires), `assigned_s` (the rebalance gave the survivor the partitions) and
`caught_up_s` (it had read their placements again); from there to `first_diff_s` is the
re-evaluation. `stalls`: how often the survivor took its event loop's standing still for an
expulsion and rejoined (each rejoin is a rebalance; 0 unless the machine paused it). The takeover
itself must publish nothing new: every diff after the kill changes its placement's decision (the
change moves some, and Balance then moves others); the run fails if one repeats the decision in
force.

    python -m tests.bench.takeover            # 5,000 clusters x 10,000 placements
    python -m tests.bench.takeover --quick    # 1,000 x 2,000
    python -m tests.bench.takeover --session-timeout-ms 3000   # a shorter group session
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter

import orjson

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.envelope import Envelope
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.topics import Topics, partition_for_key, planned_partitions
from fleetplace.shared.settings import Settings
from fleetplace.shared.testing import create_topics, running_broker
from tests.bench.e2e import Tail, emit, metric, note, process, record_of, worker_command
from tests.bench.scenario import fleet_objects, placement

NAMESPACE = "bench"
STATE_TOPICS = (
    "clusters",
    "cluster-profiles",
    "taints",
    "scores",
    "clustersets",
    "clustersetbindings",
    "placements",
    "decisions",
)


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=30) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _holds(port: int, key: str) -> bool:
    """Whether the worker on `port` owns the placement (its debug route knows only those)."""
    namespace, _, name = key.partition("/")
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/debug/placements/{namespace}/{name}", timeout=60
        ) as response:
            return bool(response.status == 200)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return False
        raise


async def _until(check: object, timeout: float, what: str) -> float:
    """Seconds (monotonic) at which `check()` first held."""
    deadline = time.monotonic() + timeout
    while True:
        if await asyncio.to_thread(check):  # type: ignore[arg-type]
            return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout} s")
        await asyncio.sleep(0.02)


async def bare_read(bootstrap: str, topics: Topics) -> tuple[float, int]:
    """Seconds a plain consumer takes to read the state topics from the beginning to their end."""
    t0 = time.monotonic()
    async with BroadcastReader(bootstrap, topics.names(list(STATE_TOPICS)), max_records=50_000) as reader:
        records = await reader.read_to_end()
    return time.monotonic() - t0, len(records)


async def main(clusters: int, placements: int) -> None:
    with running_broker() as bootstrap:
        prefix = f"takeover{uuid.uuid4().hex[:8]}."
        topics, _ = await create_topics(bootstrap, prefix)
        fleet = fleet_objects(clusters)
        producer = make_producer(bootstrap, linger_ms=0, max_batch_size=262144)
        await start_client(producer)
        try:
            await send_all(producer, [record_of(topics, o) for o in fleet])
            keys = [f"{NAMESPACE}/placement{i}" for i in range(placements)]
            await send_all(producer, [record_of(topics, placement(NAMESPACE, i)) for i in range(placements)])
            ports = {name: free_port() for name in ("a", "b")}
            with contextlib.ExitStack() as stack:
                children = {}
                for name, port in ports.items():
                    command = [*worker_command(bootstrap, prefix, port, None), "--instance", name]
                    children[name] = stack.enter_context(process(command, f"worker {name}"))
                async with Tail(bootstrap, topics.decisions) as decisions:
                    t_start = time.monotonic()
                    wanted = set(keys)
                    await decisions.wait(
                        lambda: wanted <= {str(a.record.key) for a in decisions.arrivals},
                        1800.0,
                        "every placement decided",
                    )
                    await asyncio.sleep(2.0)  # both workers idle: no decision in flight
                    await decisions.read_to_end()
                    note(f"{placements} placements decided in {time.monotonic() - t_start:.1f} s")
                    latest: dict[str, tuple[str, list[str]]] = {}
                    for a in decisions.arrivals:
                        value = orjson.loads(a.record.value) if a.record.value else None
                        if value is not None:
                            latest[str(a.record.key)] = (
                                Envelope.from_headers(a.record.headers).source,
                                value["decisions"],
                            )
                    owners = Counter(source for source, _ in latest.values())
                    victim_source, victim_count = owners.most_common(1)[0]
                    victim = next(n for n in ports if victim_source.endswith(n))
                    survivor = next(n for n in ports if n != victim)
                    # the placements the victim owns now: its decisions are the latest of more (a
                    # rebalance after the first decisions moves partitions without a new decision),
                    # so its partitions are asked of it, one placement per partition
                    count = planned_partitions()["placements"]
                    sample: dict[int, str] = {}
                    for key in latest:
                        sample.setdefault(partition_for_key(key, count), key)
                    held = {p for p, key in sample.items() if _holds(ports[victim], key)}
                    moved = {k for k in latest if partition_for_key(k, count) in held}
                    note(
                        f"owners {dict(owners)}; killing {victim} (latest source of {victim_count} "
                        f"placements, owner of {len(moved)} in partitions {sorted(held)})"
                    )
                    # the change: the cluster most picked by the moved placements loses its CPU
                    picked = Counter(c for k in moved for c in latest[k][1])
                    target, _ = picked.most_common(1)[0]
                    change = next(
                        o for o in fleet if o["kind"] == "ManagedCluster" and o["metadata"]["name"] == target
                    )
                    change = orjson.loads(orjson.dumps(change))
                    change["status"]["allocatable"]["cpu"] = "1"
                    before = len(decisions.arrivals)
                    port = ports[survivor]
                    t0, killed_at = time.monotonic(), time.time()
                    os.kill(children[victim].pid, signal.SIGKILL)
                    delivered = (await send_all(producer, [record_of(topics, change)]))[0]
                    watermark_key = f"{topics.unprefixed(delivered.topic)}/{delivered.partition}"

                    def reflects_change(value: dict[str, object]) -> bool:
                        # computed from a state that holds the change (the moved placements are
                        # re-evaluated after the takeover: their trigger is `startup`)
                        inputs = value.get("inputs")
                        return isinstance(inputs, dict) and inputs.get(watermark_key, 0) > delivered.offset

                    def owns_all() -> bool:
                        return metric(port, "fleetplace_placements_owned") >= placements

                    owned = await _until(owns_all, 300.0, "the survivor owning every placement") - t0
                    ready = (
                        await _until(lambda: owns_all() and _ready(port), 600.0, "the survivor ready") - t0
                    )

                    def moved_diffs() -> list[float]:
                        out = []
                        for a in decisions.arrivals[before:]:
                            value = orjson.loads(a.record.value) if a.record.value else {}
                            if str(a.record.key) in moved and reflects_change(value):
                                out.append(a.at)
                        return out

                    await decisions.wait(
                        lambda: bool(moved_diffs()), 900.0, "the change's diff for a moved placement"
                    )
                    first_diff = min(moved_diffs()) - t0
                    await asyncio.sleep(2.0)
                    await decisions.read_to_end()
                    # the takeover published nothing of its own: every diff after the kill changed
                    # its placement's decision (the change, and Balance following the decisions it
                    # moved, change some); none repeats the decision in force
                    after = [
                        orjson.loads(a.record.value) for a in decisions.arrivals[before:] if a.record.value
                    ]
                    in_force = {k: clusters for k, (_, clusters) in latest.items()}
                    strays = []
                    for d in after:
                        if d["decisions"] == in_force.get(d["placement"]):
                            strays.append(d["placement"])
                        in_force[d["placement"]] = d["decisions"]
                    if strays:
                        raise AssertionError(
                            f"the takeover republished {len(strays)} decisions: {strays[:5]}"
                        )
                    # when the group gave the survivor the partitions, and when it had read them
                    # again: its own gauges, read now that it is idle (polled during the takeover,
                    # a busy survivor answers late)
                    assigned = metric(port, "fleetplace_partitions_assigned_timestamp_seconds") - killed_at
                    caught_up = metric(port, "fleetplace_owned_caught_up_timestamp_seconds") - killed_at
                    stalls = metric(port, "fleetplace_stalls_total")
                    moved_off = sum(1 for d in after if target not in d["decisions"])
                    note(
                        f"after the kill: {len(after)} diffs, every one a changed decision ({moved_off} off {target})"
                    )
            read_s, read_n = await bare_read(bootstrap, topics)
            note(f"bare read of the state topics: {read_n} records in {read_s:.2f} s")
        finally:
            await producer.stop()
    emit(
        {
            "bench": "takeover",
            "run": f"{clusters}x{placements}",
            "owned_s": round(owned, 2),
            "ready_s": round(ready, 2),
            "first_diff_s": round(first_diff, 2),
            "read_s": round(read_s, 2),
            "ratio": round(first_diff / read_s, 2),
            # the part fleetplace controls: from the group handing over the partitions to the
            # first diff, against the floor of reading the state again
            "controlled_ratio": round((first_diff - assigned) / read_s, 2),
            # the phases: the dead member's session (the floor of `assigned_s`), the group giving
            # the survivor its partitions, the survivor having read them again; after that, the
            # re-evaluation until `first_diff_s`
            "session_timeout_s": Settings().group_session_timeout_ms / 1000,
            "assigned_s": round(assigned, 2),
            "caught_up_s": round(caught_up, 2),
            # standstills the survivor took for an expulsion (each costs a rejoin): 0 unless paused
            "stalls": int(stalls),
        }
    )


def cli() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.takeover", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="1,000 clusters x 2,000 placements")
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        help="the workers' group session (FLEETPLACE_GROUP_SESSION_TIMEOUT_MS; default: the setting's)",
    )
    args = parser.parse_args()
    if args.session_timeout_ms is not None:  # the workers inherit the environment
        os.environ["FLEETPLACE_GROUP_SESSION_TIMEOUT_MS"] = str(args.session_timeout_ms)
    clusters, placements = (1000, 2000) if args.quick else (5000, 10_000)
    asyncio.run(main(clusters, placements))
    sys.exit(0)


if __name__ == "__main__":
    cli()
