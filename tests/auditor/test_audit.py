"""The auditor on histories written by an offline worker: batching, replay, comparison, reports."""

from __future__ import annotations

import dataclasses
import gc
from datetime import timedelta
from typing import Any

import orjson
import pytest

from fleetplace.services.auditor.audit import audit
from fleetplace.services.auditor.batches import group_batches
from fleetplace.services.auditor.check import differing, expected_of
from fleetplace.services.auditor.history import History, parse_decision
from fleetplace.shared.bus.envelope import new_envelope
from fleetplace.shared.bus.records import Record
from tests.auditor.offline import T0, OfflineWorker, base_fleet, busy_run, cluster, placement

PREFIX = "p."


def history_of(records: list[Record]) -> History:
    return History.of(records, prefix=PREFIX)


def rewrite(records: list[Record], match: Any, change: Any) -> tuple[list[Record], Record]:
    """Replace the value of the first record `match` accepts; the original record."""
    for i, record in enumerate(records):
        if match(record):
            records = list(records)
            records[i] = dataclasses.replace(record, value=change(record.value))
            return records, record
    raise AssertionError("no record matched")


def forge_decisions(raw: bytes | None) -> bytes:
    """A decision record's value with its decisions replaced by a cluster no run would pick."""
    value = orjson.loads(raw or b"{}")
    value["decisions"] = ["c-forged"]
    return orjson.dumps(value)


def decision_value(record: Record) -> dict[str, Any] | None:
    if record.topic != PREFIX + "decisions" or record.value is None:
        return None
    value: dict[str, Any] = orjson.loads(record.value)
    return value


def test_every_decision_of_a_busy_run_reproduces_however_late_the_worker_reads_its_own_output() -> None:
    for read_back in (1, 3):
        worker = busy_run(OfflineWorker(PREFIX, read_back=read_back))
        report = audit(history_of(worker.records()))
        assert report.checked == len(worker.diffs) >= 20
        assert report.reproduced == report.checked
        assert report.ok and report.mismatches == [] and report.warnings == []
        kinds = {d["trigger"]["kind"] for d in worker.diffs}
        assert {"cluster", "taint", "score", "placement", "toleration-expired"} <= kinds
        assert any(d.get("deleted") for d in worker.diffs)


def test_a_forged_last_decision_is_the_only_mismatch_and_names_the_cluster() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    last = max(worker.diffs, key=lambda d: (d["evaluatedAt"], d["placement"]))
    key, seq = last["placement"], last["seq"]

    def forge(raw: bytes | None) -> bytes:
        value = orjson.loads(raw or b"{}")
        value["decisions"] = [*value["decisions"][:-1], "c-forged"]
        return orjson.dumps(value)

    def is_last(r: Record) -> bool:
        v = decision_value(r)
        return v is not None and (v["placement"], v["seq"]) == (key, seq)

    records, original = rewrite(worker.records(), is_last, forge)
    report = audit(history_of(records))
    assert [(m.placement, m.seq) for m in report.mismatches] == [(key, seq)]
    mismatch = report.mismatches[0]
    assert mismatch.fields == ["decisions"]
    assert (mismatch.partition, mismatch.offset) == (original.partition, original.offset)
    named = {c["cluster"]: c for c in mismatch.clusters}
    assert named["c-forged"]["recomputed"]["verdict"] == "absent from the fleet at the watermark"
    dropped = last["decisions"][-1]
    assert named[dropped]["recomputed"]["selected"] and not named[dropped]["recorded"]["selected"]
    assert not report.ok and report.checked - report.reproduced == 1


def test_a_forged_decision_no_worker_could_read_is_reported_and_the_walk_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fleetplace.services.auditor import parallel

    monkeypatch.setattr(parallel, "MIN_DIFFS", 0)
    worker = busy_run(OfflineWorker(PREFIX, read_back=2))
    key = next(d["placement"] for d in worker.diffs if d["seq"] == 3)

    def forge(raw: bytes | None) -> bytes:
        value = orjson.loads(raw or b"{}")
        value["groups"] = [{"clusters": value["decisions"]}]  # no groupName: the processor rejects it
        return orjson.dumps(value)

    def is_seq_2(r: Record) -> bool:
        v = decision_value(r)
        return v is not None and (v["placement"], v["seq"]) == (key, 2)

    records, _ = rewrite(worker.records(), is_seq_2, forge)
    history = history_of(records)
    report = audit(history)
    assert (key, 2) in {(m.placement, m.seq) for m in report.mismatches}
    assert report.checked == len(worker.diffs) and not report.ok
    for jobs in (2, 3):  # stretches starting after it take the decisions the walk keeps in force
        assert audit(history, jobs=jobs).to_json() == report.to_json()


def test_an_altered_input_record_is_blamed_on_the_one_decision_it_fed() -> None:
    """c2's relabel to gold is recorded as silver: the gold placement's diff that added c2 fails,
    and the mismatch cites that very cluster record."""
    w = OfflineWorker(PREFIX)
    w.publish(
        *busy_fleet(),
        placement("ns1", "gold", predicates=[gold()]),
        placement("ns1", "any", numberOfClusters=2),
    )
    w.step(T0)
    w.publish(cluster("c2", {"tier": "gold"}))
    w.step(T0 + timedelta(seconds=1))
    w.publish(cluster("c2", {"tier": "silver"}))
    w.step(T0 + timedelta(seconds=2))
    w.drain(T0 + timedelta(seconds=2))
    gold_diffs = [d for d in w.diffs if d["placement"] == "ns1/gold"]
    assert [d["added"] for d in gold_diffs] == [["c1", "c3"], ["c2"], []]
    assert audit(history_of(w.records())).ok

    relabel = [r for r in w.records() if r.topic == PREFIX + "clusters" and r.key == "c2"][1]
    records, original = rewrite(
        w.records(),
        lambda r: r is relabel,
        lambda raw: orjson.dumps(cluster("c2", {"tier": "silver"})),
    )
    report = audit(history_of(records))
    assert [(m.placement, m.seq) for m in report.mismatches] == [("ns1/gold", 2)]
    mismatch = report.mismatches[0]
    assert mismatch.clusters[0]["cluster"] == "c2"
    assert mismatch.clusters[0]["recomputed"]["verdict"].startswith("filtered by Predicate")
    cited = {(i["topic"], i["key"]): i for i in mismatch.inputs}
    assert (cited["clusters", "c2"]["partition"], cited["clusters", "c2"]["offset"]) == (
        original.partition,
        original.offset,
    )


def busy_fleet() -> list[dict[str, Any]]:
    from tests.auditor.offline import base_fleet

    return [
        *base_fleet("ns1"),
        *[cluster(f"c{i}", {"tier": "gold" if i % 2 else "silver"}) for i in range(5)],
    ]


def gold() -> dict[str, Any]:
    return {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}


def test_a_takeover_by_a_second_instance_reproduces_and_replays_each_instance_separately() -> None:
    a = OfflineWorker(PREFIX, source="fleetplace/a", read_back=2)
    a.publish(
        *busy_fleet(),
        placement("ns1", "gold", predicates=[gold()]),
        placement("ns1", "n2", numberOfClusters=2),
    )
    a.step(T0)
    a.publish(cluster("c0", {"tier": "gold"}))
    a.step(T0 + timedelta(seconds=1))  # A's diffs of this batch are never read back by A
    b = a.successor("fleetplace/b")
    b.publish(cluster("c4", {"tier": "gold"}), cluster("c1", {"tier": "silver"}))
    b.step(T0 + timedelta(seconds=2))
    b.publish(placement("ns1", "n2", generation=2, numberOfClusters=3))
    b.step(T0 + timedelta(seconds=3))
    b.drain(T0 + timedelta(seconds=3))
    sources = {r.header("ce_source") for r in b.records() if r.topic == PREFIX + "decisions"}
    assert sources == {b"fleetplace/a", b"fleetplace/b"}
    report = audit(history_of(b.records()))
    assert report.ok and report.checked == len(a.diffs) + len(b.diffs) and report.reproduced == report.checked


def test_batches_group_by_source_inputs_and_time_and_replay_in_key_order() -> None:
    def record(key: str, seq: int, source: str, inputs: dict[str, int], at: str, offset: int) -> Record:
        value = {"placement": key, "seq": seq, "evaluatedAt": at, "inputs": inputs, "decisions": []}
        env = new_envelope("io.fleetplace.decisions", source)
        return Record(PREFIX + "decisions", 0, offset, key, orjson.dumps(value), env.to_headers())

    w1 = {"clusters/0": 5, "placements/1": 2}
    w2 = {"clusters/0": 7, "placements/1": 2}
    parsed = [
        parse_decision(r)
        for r in (
            record("ns/b", 1, "s1", w1, "2026-01-01T00:00:00Z", 0),
            record("ns/a", 1, "s1", w1, "2026-01-01T00:00:00Z", 1),
            record("ns/c", 1, "s2", w1, "2026-01-01T00:00:00Z", 2),  # same inputs, other instance
            record("ns/a", 2, "s1", w2, "2026-01-01T00:00:00Z", 3),  # same time, read further
            record("ns/b", 2, "s1", w1, "2026-01-01T00:00:01Z", 4),  # same inputs, later
        )
    ]
    batches = group_batches([p for p in parsed if p is not None])
    assert [(b.source, [(d.key, d.seq) for d in b.diffs]) for b in batches] == [
        ("s1", [("ns/a", 1), ("ns/b", 1)]),
        ("s2", [("ns/c", 1)]),
        ("s1", [("ns/a", 2)]),
        ("s1", [("ns/b", 2)]),
    ]
    assert batches[0].watermark == {("clusters", 0): 5, ("placements", 1): 2}


def test_diffs_of_a_batch_share_their_parsed_watermark_but_each_is_still_validated() -> None:
    def record(inputs: dict[str, Any], offset: int) -> Record:
        value = {
            "placement": "ns/a",
            "seq": offset + 1,
            "evaluatedAt": "2026-01-01T00:00:00Z",
            "inputs": inputs,
        }
        return Record(PREFIX + "decisions", 0, offset, "ns/a", orjson.dumps(value))

    history = history_of(
        [
            record({"placements/1": 2, "clusters/0": 5}, 0),
            record({"clusters/0": 5, "placements/1": 2}, 1),  # the same watermark, written in another order
            record({"clusters/0": True, "placements/1": 2}, 2),  # equal to 1 in Python, not an offset
            record({"clusters/0": 5.0, "placements/1": 2}, 3),
        ]
    )
    first, second = history.decisions
    assert first.inputs == (("clusters/0", 5), ("placements/1", 2)) and first.inputs is second.inputs
    assert first.now is second.now
    assert [(i.offset, i.error) for i in history.invalid] == [
        (2, "inputs must map '<topic>/<partition>' to offsets"),
        (3, "inputs must map '<topic>/<partition>' to offsets"),
    ]


def test_building_and_auditing_a_history_hand_the_collector_back_as_they_found_it() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    assert gc.isenabled()
    history = history_of(worker.records())  # frozen out of the collector while it lives
    assert gc.isenabled() and gc.get_freeze_count() > 0
    assert audit(history).ok
    assert gc.isenabled() and gc.get_freeze_count() == 0  # the walk is over: everything collectable
    gc.disable()
    try:
        audit(history_of(worker.records()))
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()


def test_comparison_fills_the_workers_defaults_and_lists_only_the_fields_that_differ() -> None:
    recorded = {"placement": "ns/a", "seq": 3, "decisions": ["c1"], "scores": {"c1": 7}, "status": {}}
    expected = expected_of(recorded)
    assert expected["deleted"] is False and expected["groups"] == [] and expected["added"] == []
    recomputed = {
        **expected,
        "scores": {"c1": 8},
        "groups": [{"groupName": "", "groupIndex": 0, "clusters": ["c1"]}],
    }
    assert differing(expected, recomputed) == ["groups", "scores"]
    assert differing(expected, dict(expected)) == []


def test_seq_gaps_conflicting_duplicates_and_broken_records_fail_the_audit() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    records = worker.records()
    # drop seq 2 of a placement with three or more, duplicate ns2/two seq 1 with other content, add garbage
    gappy = next(d["placement"] for d in worker.diffs if d["seq"] == 3)
    dropped = next(
        r for r in records if (v := decision_value(r)) and (v["placement"], v["seq"]) == (gappy, 2)
    )
    two_1 = next(
        r for r in records if (v := decision_value(r)) and (v["placement"], v["seq"]) == ("ns2/two", 1)
    )
    dup_value = {**orjson.loads(two_1.value or b"{}"), "decisions": ["c7"]}
    end = max(r.offset for r in records if r.topic == two_1.topic and r.partition == two_1.partition) + 1
    records = [r for r in records if r is not dropped]
    records.append(dataclasses.replace(two_1, offset=end, value=orjson.dumps(dup_value)))
    records.append(Record(PREFIX + "decisions", two_1.partition, end + 1, "ns2/two", b"[1, 2]"))
    report = audit(history_of(records))
    problems = {(p.placement, p.seq): p.problem for p in report.seq_problems}
    assert problems[(gappy, 2)].startswith("seq missing: 2")
    assert problems[("ns2/two", 1)].startswith("published 2 times, differently")
    assert [(i.key, i.offset) for i in report.invalid] == [("ns2/two", end + 1)]
    assert not report.ok


def test_placement_and_since_narrow_what_is_checked_but_not_the_replay() -> None:
    worker = busy_run(OfflineWorker(PREFIX))
    history = history_of(worker.records())
    only = audit(history, placement="ns1/tol")
    assert set(only.per_placement) == {"ns1/tol"}
    assert only.checked == sum(1 for d in worker.diffs if d["placement"] == "ns1/tol") and only.ok
    since = T0 + timedelta(seconds=44)
    late = audit(history, since=since)
    assert late.checked == sum(1 for d in worker.diffs if d["evaluatedAt"] >= "2026-01-01T00:00:44Z") > 0
    assert late.ok


def test_the_fast_replay_ends_in_the_same_state_as_the_worker() -> None:
    """Coalescing, identical-value skipping and the skipped fan-out change nothing the engine reads."""
    from fleetplace.services.auditor.replay import SourceReplay

    worker = busy_run(OfflineWorker(PREFIX, read_back=2))
    history = history_of(worker.records())
    replay = SourceReplay(history)
    replay.advance({tp: records[-1].offset + 1 for tp, records in history.partitions.items()})
    ours, theirs = replay.processor, worker.processor
    assert replay.records_skipped > 0
    assert {k: c.raw for k, c in ours.fleet.clusters.items()} == {
        k: c.raw for k, c in theirs.fleet.clusters.items()
    }
    assert ours.fleet.placements == theirs.fleet.placements
    assert ours.fleet.scores == theirs.fleet.scores
    assert ours.fleet.bindings == theirs.fleet.bindings
    assert set(ours.fleet.sets) == set(theirs.fleet.sets)
    assert dict(ours.fleet.decisions.total) == dict(theirs.fleet.decisions.total)
    assert {k: (p.seq, p.decisions, p.deleted) for k, p in ours.published.items()} == {
        k: (p.seq, p.decisions, p.deleted) for k, p in theirs.published.items()
    }


def test_checking_in_parallel_stretches_gives_the_single_walks_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fleetplace.services.auditor import parallel

    monkeypatch.setattr(parallel, "MIN_DIFFS", 0)
    worker = busy_run(OfflineWorker(PREFIX, read_back=2))
    b = worker.successor("fleetplace/b")  # a second instance takes over half-way through
    b.publish(cluster("c4", {"tier": "gold"}, cpu=8), cluster("c8", {"tier": "silver"}, cpu=2))
    b.step(T0 + timedelta(hours=1))
    b.drain(T0 + timedelta(hours=1))
    # and one forged record in the middle, so there are mismatches to merge
    middle = worker.diffs[len(worker.diffs) // 2]

    def is_middle(r: Record) -> bool:
        v = decision_value(r)
        return v is not None and (v["placement"], v["seq"]) == (middle["placement"], middle["seq"])

    records, _ = rewrite(b.records(), is_middle, forge_decisions)
    history = history_of(records)
    single = audit(history)
    assert single.mismatches and single.checked == len(worker.diffs) + len(b.diffs)
    for jobs in (2, 3):
        assert len(parallel.stretches(group_batches(history.decisions), jobs)) == jobs
        split = audit(history, jobs=jobs)
        assert split.to_json() == single.to_json()


def _twins_run() -> OfflineWorker:
    """Three placements alike in one namespace (the top CPU, no Balance), one unlike them, and the
    CPU moving: the three publish the same decisions at the same states."""
    w = OfflineWorker(PREFIX)
    cpu = {"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}]}
    w.publish(*base_fleet("ns1"), *[cluster(f"c{i}", cpu=4 + i) for i in range(6)])
    w.publish(
        *[placement("ns1", f"twin{i}", numberOfClusters=2, prioritizerPolicy=cpu) for i in range(3)],
        placement("ns1", "other", numberOfClusters=2),
    )
    now = T0
    w.step(now)
    for step in range(6):
        w.publish(cluster(f"c{step % 6}", cpu=40 - step))
        now += timedelta(seconds=5)
        w.step(now)
    w.drain(now)
    return w


def test_placements_that_cannot_differ_are_recomputed_once_and_a_forged_one_is_still_caught() -> None:
    from fleetplace.services.auditor.check import Checker
    from fleetplace.services.auditor.walk import Auditor

    worker = _twins_run()
    history = history_of(worker.records())
    checker = Checker()
    Auditor(history).walk(checker.visit, checker.select)
    twins = [d for d in worker.diffs if "twin" in d["placement"]]
    assert checker.report.ok and checker.report.checked == len(worker.diffs)
    assert checker.shared is not None and checker.shared.hits == len(twins) * 2 // 3 > 0
    assert checker.report.shared == checker.shared.hits
    alone = Checker(shared=None)
    Auditor(history).walk(alone.visit, alone.select)
    assert alone.report.shared == 0
    assert {**alone.report.to_json(), "sharedRuns": 0} == {**checker.report.to_json(), "sharedRuns": 0}

    # the second twin's last decision forged: its recomputed diff is the first twin's, and it is
    # reported with an explanation from its own run
    last = max((d for d in twins if d["placement"] == "ns1/twin1"), key=lambda d: d["seq"])

    def forge(raw: bytes | None) -> bytes:
        value = orjson.loads(raw or b"{}")
        value["decisions"] = [value["decisions"][0], "c-forged"]
        return orjson.dumps(value)

    def is_last(r: Record) -> bool:
        v = decision_value(r)
        return v is not None and (v["placement"], v["seq"]) == ("ns1/twin1", last["seq"])

    records, _ = rewrite(worker.records(), is_last, forge)
    report = audit(history_of(records))
    assert [(m.placement, m.seq) for m in report.mismatches] == [("ns1/twin1", last["seq"])]
    named = {c["cluster"] for c in report.mismatches[0].clusters}
    assert "c-forged" in named and last["decisions"][1] in named
