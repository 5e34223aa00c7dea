"""Hostile records into a real rollout worker process, good traffic interleaved; count what comes out.

    report = await fuzz_rollout_worker(total=50_000, workdir=tmp_path)
    assert report.ok, report.explain()

Checks: the worker process never exits and keeps answering /healthz; every bad record is in
`deadletter` (matched by topic/partition/offset, each with a reason) and nothing else is; every
good rollout is answered as the rollout function answers it; the main rollout's final state is what
the rollout function says for the final inputs, evaluated from scratch; the reports built to change
nothing are counted by `fleetplace_rollout_reports_ignored_total{reason}`, exactly. Also
`python -m tests.fuzz.rollout_run [N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fleetplace.shared.api.rollouts import RolloutStatusReport
from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import ROLLOUTS, planned_partitions
from fleetplace.shared.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    Instant,
    RolloutStatus,
    RolloutStrategy,
    rollout,
)
from fleetplace.shared.testing import create_topics, unique_topic_prefix
from tests.faults.processes import WorkerProcess
from tests.fuzz.rollout_hostile import (
    GONE,
    GROUPS,
    MAIN,
    MAIN_STRATEGY,
    NOW,
    PLACEMENT,
    REVISION,
    RolloutHostile,
    RolloutStream,
    placement_decisions,
    rollout_object,
)
from tests.fuzz.run import _healthz
from tests.rollout_worker.harness import RolloutBus

CHUNK = 2000
IGNORED = "fleetplace_rollout_reports_ignored_total"


@dataclass
class RolloutFuzzReport:
    total: int = 0
    bad: int = 0
    deadletters: int = 0
    good_rollouts: int = 0
    answered_good: int = 0
    main_matches: bool = False
    ignored_expected: dict[str, int] = field(default_factory=dict)
    ignored_counted: dict[str, int] = field(default_factory=dict)
    evaluations: int = 0
    diffs: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    send_s: float = 0.0
    drain_s: float = 0.0
    healthz_max_s: float = 0.0
    worker_exits: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    worker_peak_rss_mb: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.worker_exits

    def figures(self) -> dict[str, Any]:
        return {
            "suite": "fuzz-rollout",
            "records": self.total,
            "bad_sent": self.bad,
            "deadletters_received": self.deadletters,
            "good_rollouts_sent": self.good_rollouts,
            "good_rollouts_answered": self.answered_good,
            "main_state_matches_from_scratch": self.main_matches,
            "reports_ignored_expected": self.ignored_expected,
            "reports_ignored_counted": self.ignored_counted,
            "evaluations": self.evaluations,
            "diffs": self.diffs,
            "categories": dict(sorted(self.categories.items())),
            "send_s": round(self.send_s, 1),
            "drain_s": round(self.drain_s, 1),
            "records_per_s": round(self.total / max(self.send_s + self.drain_s, 1e-9)),
            "healthz_max_latency_s": round(self.healthz_max_s, 2),
            "worker_exits": len(self.worker_exits),
            "worker_peak_rss_mb": round(self.worker_peak_rss_mb, 1),
            "problems": len(self.problems),
        }

    def explain(self) -> str:
        return "\n".join([orjson.dumps(self.figures()).decode(), *self.problems[:30]])


def _groups() -> tuple[DecisionGroup, ...]:
    return tuple(DecisionGroup(name, i, tuple(clusters)) for i, (name, clusters) in enumerate(GROUPS))


def expected_main(final_reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The rollout function's answer for `fuzz/main` over the final report of each cluster, built
    as docs/rollouts.md says the worker builds it: placed clusters with a report of the revision,
    in group order (a report for a cluster in no group is not passed)."""
    groups = _groups()
    reports = {}
    for cluster, value in final_reports.items():
        report = RolloutStatusReport.model_validate(value)
        if report.revision == REVISION and report.last_transition_time is not None:
            reports[cluster] = (
                RolloutStatus(report.status),
                Instant.from_datetime(report.last_transition_time),
            )
    statuses = [
        ClusterRolloutStatus(c, reports[c][0], GroupKey(g.group_name, g.group_index), reports[c][1])
        for g in groups
        for c in g.clusters
        if c in reports
    ]
    result = rollout(RolloutStrategy.from_json(MAIN_STRATEGY), groups, statuses, NOW)
    return {
        "clusters": sorted(s.cluster_name for s in result.clusters_to_rollout),
        "awaiting_unreported": True,
        "timedOut": sorted(s.cluster_name for s in result.clusters_timeout),
        "removed": sorted(s.cluster_name for s in result.clusters_removed),
        "maxFailureBreach": result.max_failure_breach,
    }


def observed_main(
    state: dict[str, Any] | None, final_reports: dict[str, dict[str, Any]]
) -> dict[str, Any] | None:
    """The worker's answer for `fuzz/main`: the rollout function's lists, and whether the set is
    those clusters plus told ones still awaiting a report (none of which has a report of the
    revision: docs/rollouts.md)."""
    if state is None or state.get("revision") != REVISION:
        return None
    (entry,) = state["placements"]
    listed = {s["clusterName"] for s in entry["clustersToRollout"]}
    awaiting = {s["clusterName"] for s in entry.get("clustersAwaitingReport") or ()}
    reported = {c for c, v in final_reports.items() if v.get("revision") == REVISION}
    return {
        "clusters": sorted(listed),
        "awaiting_unreported": sorted(listed | awaiting) == state["clusters"] and not awaiting & reported,
        "timedOut": sorted(s["clusterName"] for s in entry["clustersTimeOut"]),
        "removed": sorted(s["clusterName"] for s in entry["clustersRemoved"]),
        "maxFailureBreach": state["maxFailureBreach"],
    }


def expected_all() -> list[str]:
    result = rollout(RolloutStrategy.from_json({"type": "All"}), _groups(), [], NOW)
    return sorted(s.cluster_name for s in result.clusters_to_rollout)


def _record(topics: Any, h: RolloutHostile) -> OutgoingRecord:
    return OutgoingRecord(topics.name(h.topic), h.key, h.value, partition_key=h.partition_key)


async def fuzz_rollout_worker(
    total: int, workdir: Path, *, seed: int = 7, max_big: int = 20, drain_timeout: float = 300.0
) -> RolloutFuzzReport:
    report = RolloutFuzzReport()
    partitions = planned_partitions()[ROLLOUTS]
    stream = RolloutStream(random.Random(seed), partitions, max_big=max_big)
    items = list(stream.records(total))
    report.total = len(items)
    report.categories = Counter(h.what for h in items)
    report.bad = sum(1 for h in items if h.bad)
    report.good_rollouts = len(stream.good_rollouts)
    report.ignored_expected = dict(sorted(stream.ignored.items()))
    final_reports: dict[str, dict[str, Any]] = {}
    for h in items:
        if not h.bad and h.topic == "rollout-status" and h.key is not None and h.value is not None:
            rollout_key, _, cluster = h.key.decode().rpartition("/")
            if rollout_key == MAIN:
                final_reports[cluster] = orjson.loads(h.value)
    want_main = expected_main(final_reports)
    want_all = expected_all()

    prefix = unique_topic_prefix("rfuzz")
    with EmbeddedBroker() as broker:
        topics, _ = await create_topics(broker.bootstrap, prefix)
        group = f"{prefix}rollout"
        worker = WorkerProcess(
            broker.bootstrap, prefix, group, "rfuzz", workdir, clock="topic", kind="rollout"
        )
        worker.env["FLEETPLACE_LOG_LEVEL"] = "error"  # one warning per dead letter is a lot of log
        worker.start()
        producer = make_producer(
            broker.bootstrap, linger_ms=20, max_batch_size=262144, max_request_size=8 * 1024 * 1024
        )
        await start_client(producer)
        bad_at: dict[tuple[str, int, int], RolloutHostile] = {}
        probes: list[float] = []
        try:
            async with RolloutBus(broker.bootstrap, topics) as bus:
                await bus.set_clock(NOW.isoformat().replace("+00:00", "Z"), group)
                await bus.send("placement-decisions", PLACEMENT, placement_decisions())
                await bus.send("rollouts", MAIN, rollout_object(MAIN, MAIN_STRATEGY))
                await bus.send("rollouts", GONE, rollout_object(GONE, {"type": "All"}))
                await bus.send("rollouts", GONE, None)
                await bus.wait_for(
                    lambda: bus.state.get(MAIN) is not None, timeout=60, what="the main rollout"
                )

                async def probe() -> None:
                    while True:
                        probes.append(await _healthz(worker.http_port))
                        worker.sample_rss()
                        await asyncio.sleep(0.5)

                prober = asyncio.create_task(probe())
                started = time.monotonic()
                for i in range(0, len(items), CHUNK):
                    chunk = items[i : i + CHUNK]
                    delivered = await send_all(producer, [_record(topics, h) for h in chunk])
                    for h, d in zip(chunk, delivered, strict=True):
                        if h.bad:
                            bad_at[(topics.unprefixed(d.topic), d.partition, d.offset)] = h
                    worker.check()
                report.send_s = time.monotonic() - started
                sent_at = time.monotonic()

                def answered() -> int:
                    return sum(
                        1
                        for k in stream.good_rollouts
                        if (bus.state.get(k) or {}).get("clusters") == want_all
                    )

                def counted() -> dict[str, int]:
                    with contextlib.suppress(OSError):
                        samples = worker.metrics()
                        return {
                            reason: int(samples.get(f'{IGNORED}{{reason="{reason}"}}', 0))
                            for reason in report.ignored_expected
                        }
                    return {}

                while time.monotonic() - sent_at < drain_timeout:
                    if (
                        len(bus.deadletters) >= len(bad_at)
                        and answered() == report.good_rollouts
                        and observed_main(bus.state.get(MAIN), final_reports) == want_main
                        and counted() == report.ignored_expected
                    ):
                        break
                    if worker.process is not None and worker.process.poll() is not None:
                        break
                    await asyncio.sleep(0.3)
                report.drain_s = time.monotonic() - sent_at
                await asyncio.sleep(1.0)  # anything extra (a dead letter too many) shows up too
                prober.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prober
                report.healthz_max_s = max(probes, default=0.0)
                worker.check()
                report.worker_exits = list(worker.unexpected_exits)
                report.deadletters = len(bus.deadletters)
                report.answered_good = answered()
                got_main = observed_main(bus.state.get(MAIN), final_reports)
                report.main_matches = got_main == want_main
                report.ignored_counted = counted()
                with contextlib.suppress(OSError):
                    samples = worker.metrics()
                    report.evaluations = int(samples.get("fleetplace_rollout_evaluations_total", 0))
                    report.diffs = int(samples.get("fleetplace_rollout_diffs_published_total", 0))
                report.problems = _problems(bus.deadletters, bad_at)
                if report.answered_good != report.good_rollouts:
                    report.problems.append(
                        f"good rollouts answered {report.answered_good} of {report.good_rollouts}"
                    )
                if not report.main_matches:
                    report.problems.append(f"{MAIN}: state {got_main} != from scratch {want_main}")
                if report.ignored_counted != report.ignored_expected:
                    report.problems.append(
                        f"ignored reports counted {report.ignored_counted} != expected {report.ignored_expected}"
                    )
                report.problems += _seq_problems(bus.diffs)
        finally:
            await producer.stop()
            worker.sample_rss()
            report.worker_peak_rss_mb = worker.peak_rss_mb
            worker.stop()
    if report.worker_exits:
        report.problems += [line[:300] for line in list(worker.log_lines())[-10:]]
    return report


def _problems(
    deadletters: list[dict[str, Any]], bad_at: dict[tuple[str, int, int], RolloutHostile]
) -> list[str]:
    problems = []
    seen: set[tuple[str, int, int]] = set()
    for value in deadletters:
        where = (
            str(value.get("topic", "")).rpartition(".")[2],
            int(value.get("partition", -1)),
            int(value.get("offset", -1)),
        )
        if where in seen:
            problems.append(f"dead-lettered twice: {where}")
        seen.add(where)
        if where not in bad_at:
            problems.append(f"a good record was dead-lettered: {where}: {value.get('error')}")
        elif not value.get("error"):
            problems.append(f"dead letter without a reason: {where}")
    for where in sorted(set(bad_at) - seen)[:20]:
        h = bad_at[where]
        problems.append(
            f"bad record not dead-lettered: {where} {h.what} key={h.key!r} value={(h.value or b'')[:120]!r}"
        )
    return problems


def _seq_problems(diffs: list[dict[str, Any]]) -> list[str]:
    seqs: dict[str, list[int]] = {}
    for d in diffs:
        seqs.setdefault(str(d["rollout"]), []).append(int(d["seq"]))
    return [
        f"{key}: seqs not 1..n in order: {got[:10]}"
        for key, got in sorted(seqs.items())
        if got != list(range(1, len(got) + 1))
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fuzz a rollout worker with hostile records.")
    parser.add_argument("records", nargs="?", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fleetplace-rfuzz-") as tmp:
        report = asyncio.run(fuzz_rollout_worker(args.records, Path(tmp), seed=args.seed, drain_timeout=900))
    sys.stdout.write(orjson.dumps(report.figures()).decode() + "\n")
    if not report.ok:
        sys.stderr.write(report.explain() + "\n")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
