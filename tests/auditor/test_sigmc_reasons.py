"""`fleetplace audit` reproduces the reasons of the SIG-MC slices of a recorded history, and says
so when a recorded reason does not reproduce."""

from __future__ import annotations

from datetime import timedelta

from fleetplace.services.auditor.audit import audit
from fleetplace.services.auditor.history import History
from fleetplace.services.scheduler.core import SchedulerOptions
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.records import Record
from tests.api.profiles import profile_of
from tests.auditor.offline import ADDON, T0, OfflineWorker, base_fleet, cluster, placement, score

PREFIX = "sigmc-audit."


def _profile(name: str, cpu: int, healthy: bool = True) -> dict[str, object]:
    doc = profile_of(cluster(name, cpu=cpu), "ns1")
    doc["status"]["conditions"][0]["status"] = "True" if healthy else "False"
    return doc


def _run() -> OfflineWorker:
    worker = OfflineWorker(PREFIX, options=SchedulerOptions(sigmc=True))
    worker.publish(*base_fleet("ns1"), *[_profile(f"c{i}", cpu=2 + i) for i in range(8)])
    worker.publish(*[score(f"c{i}", 10 * i) for i in range(8)])
    policy = {
        "mode": "Additive",
        "configurations": [
            *ADDON,
            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 1},
        ],
    }
    worker.publish(placement("ns1", "web", numberOfClusters=3, prioritizerPolicy=policy))
    worker.publish(placement("ns1", "all"))
    now = T0
    worker.step(now)
    for i in (7, 6):  # the best two go down, one after the other
        now += timedelta(minutes=1)
        worker.publish(_profile(f"c{i}", cpu=2 + i, healthy=False))
        worker.step(now)
    now += timedelta(minutes=1)
    worker.publish(score("c0", 100))
    worker.step(now)
    worker.drain(now)
    return worker


def test_audit_reproduces_every_recorded_reason() -> None:
    worker = _run()
    history = History.of(worker.records(), prefix=PREFIX)
    recorded = history.recorded_reasons()
    assert len(recorded) >= 4, "the run wrote slices for several decisions"
    assert all(r.startswith("rank ") for reasons in recorded.values() for r in reasons.values())
    report = audit(history)
    assert report.checked == len(worker.diffs) and not report.mismatches


def test_a_reason_that_does_not_reproduce_is_reported() -> None:
    worker = _run()
    records = worker.records()
    for i, r in enumerate(records):
        value = decode_object(r.value) if r.topic.endswith("sigmc-placement-decisions") and r.value else None
        if isinstance(value, dict) and value["decisions"]:
            value["decisions"][0]["reason"] = "rank 1/1, score 9999: Forged 9999×1"
            records[i] = Record(r.topic, r.partition, r.offset, r.key, encode_json(value), r.headers)
            seq = int(value["metadata"]["annotations"]["fleetplace.dev/decision-seq"])
            key = f"{value['metadata']['namespace']}/{value['metadata']['labels']['cluster.open-cluster-management.io/placement']}"
            break
    report = audit(History.of(records, prefix=PREFIX))
    assert [(m.placement, m.seq, m.fields) for m in report.mismatches] == [(key, seq, ["reasons"])]
