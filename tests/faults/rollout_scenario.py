"""One fault run of the rollout loop: a broker, rollout worker processes, deployers (the SDK's
`RolloutDeployer`) rolling revisions out canary → soak → the other groups over one placement,
faults on a timeline (the scheduler's: `tests/faults/scenario.py`), then convergence and the
checks. Figures come out as one JSON line on stdout.

    report = await run_rollouts(RolloutPlan("sigkill", Plan("sigkill", seconds=40, kill_every=4)), tmp_path)
    assert report.ok, report.explain()

While the faults run, every rollout that completes gets its next revision, so deployers report
the whole time. Afterwards, read afresh from the topics:
- every rollout's diff `seq`s are 1..n, a repeated seq carries the same answer;
- no cluster is added twice for one revision;
- no cluster is added before its group's turn: when a diff adds a cluster of group k, every
  cluster of the groups before it has a `Succeeded` report of that revision whose soak ended at
  or before the diff's `evaluatedAt`;
- every rollout's last state is what the rollout function says for the final inputs, evaluated
  from scratch;
- `fleetplace audit` reproduces every rollout diff.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from aiokafka.errors import KafkaError

from fleetplace.shared.api.rollouts import RolloutStatusReport
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.deployer import RolloutDeployer
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics, rollout_partition
from fleetplace.shared.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    Instant,
    RolloutStatus,
    RolloutStrategy,
    parse_go_duration,
    rollout,
)
from fleetplace.shared.testing import unique_topic_prefix
from tests.faults.processes import FaultyCluster, WorkerProcess, fault_broker
from tests.faults.scenario import Plan, _Run, audit, emit

NAMESPACE = "faults"
PLACEMENT = "fleet"
G = "cluster.open-cluster-management.io"


@dataclass(frozen=True)
class RolloutPlan:
    name: str
    faults: Plan  # the fault timeline (its rollout-free fields are not read)
    rollouts: int = 4
    clusters: int = 200
    groups: int = 4  # the first is the canary, mandatory
    soak: str = "2s"  # minSuccessTime
    healthy_chance: float = 0.6  # per health poll of an applied cluster
    converge_timeout: float = 240.0


@dataclass
class RolloutReport:
    plan: RolloutPlan
    faults: Counter[str]
    revisions: int = 0
    diffs: int = 0
    reports: int = 0
    applies: int = 0
    reapplied: int = 0
    deployer_restarts: int = 0
    converged_s: float | None = None
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    unexpected_exits: list[str] = field(default_factory=list)
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    audit: dict[str, Any] | None = None
    checks: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        rollouts = (self.audit or {}).get("rollouts") or {}
        audited = self.audit is None or (
            bool(rollouts.get("ok"))
            and rollouts.get("checked") == rollouts.get("reproduced") == self.diffs > 0
        )
        return not self.problems and not self.unexpected_exits and self.converged_s is not None and audited

    def figures(self) -> dict[str, Any]:
        return {
            "suite": "faults-rollout",
            "scenario": self.plan.name,
            "broker": self.plan.faults.broker,
            "ok": self.ok,
            "seconds": round(self.seconds, 1),
            "workers": self.plan.faults.workers,
            "rollouts": self.plan.rollouts,
            "clusters": self.plan.clusters,
            "groups": self.plan.groups,
            "faults": dict(self.faults),
            "revisions": self.revisions,
            "reports": self.reports,
            "applies": self.applies,
            "reapplied": self.reapplied,
            "diffs": self.diffs,
            "deployer_restarts": self.deployer_restarts,
            "checks": dict(self.checks),
            "problems": len(self.problems),
            "unexpected_exits": len(self.unexpected_exits),
            "converged_s": None if self.converged_s is None else round(self.converged_s, 1),
            "audit": self.audit,
            "peak_rss_mb": {k: round(v, 1) for k, v in self.peak_rss_mb.items()},
        }

    def explain(self) -> str:
        return "\n".join(
            [
                orjson.dumps(self.figures()).decode(),
                *self.problems[:30],
                *self.unexpected_exits,
            ]
        )


# ---- the fleet ----------------------------------------------------------------------------------


def decision_groups(plan: RolloutPlan) -> tuple[DecisionGroup, ...]:
    """A canary of `clusters // 25` clusters (at least 2), the rest spread over the other groups."""
    names = [f"c{i:04d}" for i in range(plan.clusters)]
    canary = max(2, plan.clusters // 25)
    rest = names[canary:]
    per = -(-len(rest) // (plan.groups - 1))
    groups = [DecisionGroup("canary", 0, tuple(names[:canary]))]
    for g in range(1, plan.groups):
        groups.append(DecisionGroup(f"wave{g}", g, tuple(rest[(g - 1) * per : g * per])))
    return tuple(groups)


def placement_decisions(groups: tuple[DecisionGroup, ...]) -> dict[str, Any]:
    items = [
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "PlacementDecision",
            "metadata": {
                "name": f"{PLACEMENT}-decision-{g.group_index + 1}-{page}",
                "namespace": NAMESPACE,
                "labels": {
                    f"{G}/placement": PLACEMENT,
                    f"{G}/decision-group-name": g.group_name,
                    f"{G}/decision-group-index": str(g.group_index),
                },
            },
            "status": {
                "decisions": [{"clusterName": c, "reason": ""} for c in g.clusters[page : page + 100]]
            },
        }
        for g in groups
        for page in range(0, len(g.clusters), 100)
    ]
    return {"schemaVersion": 1, "placement": f"{NAMESPACE}/{PLACEMENT}", "seq": 1, "items": items}


def strategy(plan: RolloutPlan) -> dict[str, Any]:
    return {
        "type": "ProgressivePerGroup",
        "progressivePerGroup": {
            "mandatoryDecisionGroups": [{"groupName": "canary"}],
            "minSuccessTime": plan.soak,
        },
    }


def rollout_object(key: str, revision: str, plan: RolloutPlan) -> dict[str, Any]:
    ns, _, name = key.partition("/")
    return {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "Rollout",
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "revision": revision,
            "placementRefs": [{"name": PLACEMENT, "rolloutStrategy": strategy(plan)}],
        },
    }


def rollout_keys(count: int, partitions: int) -> list[str]:
    """`count` rollout keys on as many different partitions as there are (spread over workers)."""
    keys: list[str] = []
    used: set[int] = set()
    n = 0
    while len(keys) < count:
        key = f"{NAMESPACE}/r{n}"
        p = rollout_partition(key, partitions)
        if p not in used or len(used) >= partitions:
            keys.append(key)
            used.add(p)
        n += 1
    return keys


# ---- the deployers ------------------------------------------------------------------------------


class Deployers:
    """One SDK deployer per rollout, restarted when it fails (as its supervisor would)."""

    def __init__(
        self, bootstrap: str, prefix: str, keys: list[str], rng: random.Random, chance: float
    ) -> None:
        self.bootstrap = bootstrap
        self.prefix = prefix
        self.keys = keys
        self.rng = rng
        self.chance = chance
        self.applies: Counter[tuple[str, str, str]] = Counter()  # (rollout, revision, cluster)
        self.restarts = 0
        self._current: dict[str, RolloutDeployer] = {}
        self._stopping = False

    async def _one(self, key: str) -> None:
        while not self._stopping:
            deployer: RolloutDeployer

            async def apply(cluster: str, key: str = key) -> None:
                state = self._current[key].state
                self.applies[(key, state.revision if state is not None else "", cluster)] += 1

            async def healthy(cluster: str) -> bool:
                return self.rng.random() < self.chance

            deployer = RolloutDeployer(
                self.bootstrap, key, apply, healthy, prefix=self.prefix, poll_interval=0.3
            )
            self._current[key] = deployer
            try:
                await deployer.run()
            except Exception:
                if self._stopping:
                    return
                self.restarts += 1
                await asyncio.sleep(0.5)

    async def run(self) -> None:
        await asyncio.gather(*(self._one(k) for k in self.keys))

    def stop(self) -> None:
        self._stopping = True
        for d in self._current.values():
            d.stop()


# ---- reading the outcome ------------------------------------------------------------------------


@dataclass
class Outcome:
    diffs: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    # (rollout, cluster, report), in the order read
    reports: list[tuple[str, str, RolloutStatusReport]] = field(default_factory=list)
    deadletters: int = 0


async def read_outcome(bootstrap: str, topics: Topics, timeout: float = 120) -> Outcome:
    out = Outcome()
    names = [topics.rollout_decisions, topics.rollout_state, topics.rollout_status, topics.deadletter]
    async with BroadcastReader(bootstrap, names, max_records=20_000) as reader:
        for r in await reader.read_to_end(timeout=timeout):
            value = decode_object(r.value)
            key = r.key or ""
            if r.topic == topics.rollout_state:
                out.state[key] = value
            elif r.topic == topics.deadletter:
                out.deadletters += 1
            elif value is None:
                continue
            elif r.topic == topics.rollout_decisions:
                out.diffs.append(value)
            else:
                rollout_key, _, cluster = key.rpartition("/")
                report = RolloutStatusReport.model_validate(value)
                out.reports.append((rollout_key, cluster, report))
    return out


def _answer(diff: dict[str, Any]) -> tuple[Any, ...]:
    return (
        diff["revision"],
        diff["clusters"],
        diff["placements"],
        diff["maxFailureBreach"],
        diff.get("deleted"),
    )


def check(
    outcome: Outcome,
    groups: tuple[DecisionGroup, ...],
    revisions: dict[str, str],
    plan: RolloutPlan,
    now: datetime,
    checks: Counter[str],
) -> list[str]:
    """The problems found."""
    problems: list[str] = []
    soak = timedelta(microseconds=parse_go_duration(plan.soak) // 1000)
    group_of = {c: g.group_index for g in groups for c in g.clusters}
    by_rollout: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for d in outcome.diffs:
        seen = by_rollout[d["rollout"]].get(int(d["seq"]))
        if seen is not None:
            checks["diffs_repeated"] += 1
        if seen is not None and _answer(seen) != _answer(d):
            problems.append(f"{d['rollout']}: seq {d['seq']} published twice with different answers")
        by_rollout[d["rollout"]][int(d["seq"])] = d
    # soak ends per (rollout, revision, cluster): the earliest Succeeded report's time + soak
    soaked: dict[tuple[str, str, str], datetime] = {}
    final_reports: dict[tuple[str, str], RolloutStatusReport] = {}
    for rollout_key, cluster, report in outcome.reports:
        final_reports[(rollout_key, cluster)] = report
        if report.status == "Succeeded" and report.last_transition_time is not None:
            where = (rollout_key, report.revision, cluster)
            end = report.last_transition_time + soak
            soaked[where] = min(end, soaked.get(where, end))
    for key in sorted(revisions):
        diffs = by_rollout.get(key, {})
        seqs = sorted(diffs)
        checks["diffs"] += len(seqs)
        if seqs != list(range(1, len(seqs) + 1)):
            problems.append(f"{key}: seqs not contiguous from 1: {seqs[:5]}…{seqs[-5:]}")
        told: Counter[tuple[str, str]] = Counter()
        for seq in seqs:
            d = diffs[seq]
            revision = d["revision"]
            at = datetime.fromisoformat(d["evaluatedAt"].replace("Z", "+00:00"))
            for cluster in d["added"]:
                told[(revision, cluster)] += 1
                checks["clusters_told"] += 1
                k = group_of.get(cluster)
                if k is None:
                    problems.append(f"{key} seq {seq}: added {cluster}, which no group holds")
                    continue
                early = [
                    c
                    for g in groups[:k]
                    for c in g.clusters
                    if (soak_end := soaked.get((key, revision, c))) is None or soak_end > at
                ]
                checks["group_turns_checked"] += 1
                if early:
                    problems.append(
                        f"{key} seq {seq} ({revision}): added {cluster} of group {k} before {early[:3]} "
                        f"of earlier groups were done soaking ({len(early)} not)"
                    )
        twice = [f"{r}/{c}" for (r, c), n in told.items() if n > 1]
        if twice:
            problems.append(f"{key}: clusters added twice for one revision: {twice[:5]}")
        problems += _final_state(
            key, outcome.state.get(key), strategy(plan), groups, revisions[key], final_reports, now
        )
        checks["final_states_compared"] += 1
    return problems


def _final_state(
    key: str,
    state: dict[str, Any] | None,
    strategy_document: dict[str, Any],
    groups: tuple[DecisionGroup, ...],
    revision: str,
    final_reports: dict[tuple[str, str], RolloutStatusReport],
    now: datetime,
) -> list[str]:
    """The rollout function over the final inputs, from scratch, against the last state."""
    reports = {
        c: r
        for (k, c), r in final_reports.items()
        if k == key and r.revision == revision and r.last_transition_time is not None
    }
    statuses = [
        ClusterRolloutStatus(
            c,
            RolloutStatus(reports[c].status),
            GroupKey(g.group_name, g.group_index),
            Instant.from_datetime(reports[c].last_transition_time),  # type: ignore[arg-type]
        )
        for g in groups
        for c in g.clusters
        if c in reports
    ]
    result = rollout(RolloutStrategy.from_json(strategy_document), groups, statuses, now)
    want = {
        "revision": revision,
        "clusters": sorted(s.cluster_name for s in result.clusters_to_rollout),
        "maxFailureBreach": result.max_failure_breach,
        "complete": not result.clusters_to_rollout
        and not result.clusters_timeout
        and all(
            c in reports and reports[c].status in ("Succeeded", "Skip") for g in groups for c in g.clusters
        ),
    }
    got = None if state is None else {k: state.get(k) for k in want}
    if got != want:
        return [f"{key}: final state {got} != from scratch {want}"]
    return []


# ---- the run ------------------------------------------------------------------------------------


async def _send(producer: Any, records: list[OutgoingRecord]) -> None:
    while True:
        try:
            await send_all(producer, records)
            return
        except (TimeoutError, KafkaError, BusError):
            await asyncio.sleep(0.5)


async def run_rollouts(plan: RolloutPlan, workdir: Path) -> RolloutReport:
    faults = plan.faults
    rng = random.Random(faults.seed)
    prefix = unique_topic_prefix("rfaults")
    groups = decision_groups(plan)
    report = RolloutReport(plan, Counter())
    with contextlib.ExitStack() as stack:
        broker, topics = await fault_broker(
            stack, faults.broker, faults.storage, faults.partitions, prefix, workdir
        )
        keys = rollout_keys(plan.rollouts, faults.partitions)
        workers = [
            WorkerProcess(broker.bootstrap, prefix, f"{prefix}rollout", f"w{i}", workdir, kind="rollout")
            for i in range(faults.workers)
        ]
        for w in workers:
            stack.callback(w.stop)
            w.start()
        state = _Run(faults, workdir)
        producer = make_producer(broker.bootstrap, linger_ms=5)
        await start_client(producer)
        supervisor = asyncio.create_task(state.supervise(broker, workers))
        deployers = Deployers(broker.bootstrap, prefix, keys, rng, plan.healthy_chance)
        deploying = asyncio.create_task(deployers.run())
        revisions = {k: "v1" for k in keys}
        live: dict[str, dict[str, Any] | None] = {}
        reader = BroadcastReader(broker.bootstrap, [topics.rollout_state], max_records=20_000)

        async def follow() -> None:
            while True:
                batch = await reader.poll()
                for r in batch.records:
                    live[r.key or ""] = decode_object(r.value)

        def done(key: str) -> bool:
            s = live.get(key)
            return s is not None and s.get("revision") == revisions[key] and bool(s.get("complete"))

        def rollout_record(key: str) -> OutgoingRecord:
            return OutgoingRecord(
                topics.rollouts, key, encode_json(rollout_object(key, revisions[key], plan))
            )

        await reader.start()
        following = asyncio.create_task(follow())
        try:
            await _send(
                producer,
                [
                    OutgoingRecord(
                        topics.placement_decisions,
                        f"{NAMESPACE}/{PLACEMENT}",
                        encode_json(placement_decisions(groups)),
                    ),
                    *(rollout_record(k) for k in keys),
                ],
            )
            report.revisions = len(keys)
            # faults start from a steady state: every rollout answered
            deadline = time.monotonic() + 90
            while not all(live.get(k) for k in keys) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            state.started = time.monotonic()
            tasks = []
            if faults.kill_every:
                tasks.append(state.kill_loop(workers))
            if faults.worker_pause:
                tasks.append(state.worker_pause(workers[0], *faults.worker_pause))
            if isinstance(broker, FaultyCluster):
                tasks += state.node_faults(broker, (topics.rollout_decisions, topics.rollout_state))
            else:
                if faults.broker_pause:
                    tasks.append(state.broker_pause(broker, *faults.broker_pause))
                if faults.broker_restarts:
                    tasks.append(state.broker_restarts(broker))
            timeline = asyncio.gather(*tasks)
            while state.elapsed() < faults.seconds:
                bumped = [k for k in keys if done(k)]
                for k in bumped:  # the next revision starts every cluster over
                    revisions[k] = f"v{int(revisions[k][1:]) + 1}"
                if bumped:
                    await _send(producer, [rollout_record(k) for k in bumped])
                    report.revisions += len(bumped)
                await asyncio.sleep(0.25)
            await timeline
            for w in workers:
                if not w.running:
                    w.start()
            stream_end = time.monotonic()
            deadline = stream_end + plan.converge_timeout
            next_fresh = time.monotonic() + 5
            while time.monotonic() < deadline:
                if all(done(k) for k in keys):
                    report.converged_s = time.monotonic() - stream_end
                    break
                if time.monotonic() >= next_fresh:
                    # the live reader may stall after a broker restart: the topic is the truth
                    next_fresh = time.monotonic() + 5
                    with contextlib.suppress(TimeoutError):
                        fresh = await read_outcome(broker.bootstrap, topics, timeout=20)
                        live.update(fresh.state)
                await asyncio.sleep(0.25)
            await asyncio.sleep(2.0)  # anything still in flight lands before the final read
        finally:
            deployers.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(deploying, 30)
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
            await reader.stop()
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor
            await producer.stop()
        outcome = await read_outcome(broker.bootstrap, topics)
        now = datetime.now(UTC)
        report.problems = check(outcome, groups, revisions, plan, now, report.checks)
        report.checks["diffs_repeated"] += 0  # reported also when there are none
        if faults.broker == "apache" and report.checks["diffs_repeated"]:
            # the rollout workers publish in transactions there: a read_committed reader sees each
            # diff once, also through worker kills and node faults
            report.problems.append(
                f"{report.checks['diffs_repeated']} diffs seen twice by a read_committed reader"
            )
        if outcome.deadletters:
            report.problems.append(
                f"{outcome.deadletters} dead letters: the deployers and the test send only good records"
            )
        report.audit = await audit(broker.bootstrap, prefix) if faults.audit else None
        report.faults = state.faults
        report.diffs = len(outcome.diffs)
        report.reports = len(outcome.reports)
        report.applies = sum(deployers.applies.values())
        report.deployer_restarts = deployers.restarts
        # a deployer restarted before its report was acknowledged applies again: counted, not a fault
        report.reapplied = sum(1 for n in deployers.applies.values() if n > 1)
        exits = [f"{w.name} exited by itself with status {s}" for w in workers for s in w.unexpected_exits]
        refused = sum(
            1 for w in workers for line in w.log_lines() if line.startswith("error: cannot reach Kafka")
        )
        report.unexpected_exits = exits[refused:] if refused <= len(exits) else []
        for w in workers:
            w.stop()
        report.peak_rss_mb = {w.name: w.peak_rss_mb for w in workers}
        report.seconds = time.monotonic() - state.started
    emit(report.figures())
    return report
