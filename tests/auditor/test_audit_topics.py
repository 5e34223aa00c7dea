"""`audit_topics`, what `fleetplace audit` runs: read the topics, then check every decision, in
one process or several, with the single walk's report either way."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from fleetplace.services.auditor.audit import audit, audit_topics
from fleetplace.services.auditor.history import History, read_history
from fleetplace.services.auditor.report import AuditReport
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.testing import unique_topic_prefix
from tests.auditor.offline import T0, OfflineWorker, busy_run, cluster, write_to_broker
from tests.auditor.test_audit import PREFIX, decision_value, forge_decisions, history_of, rewrite


def _forged(worker: OfflineWorker, last: OfflineWorker) -> tuple[list[Record], set[tuple[str, int]]]:
    """`last`'s records with a diff of `worker` forged early and one late: the mismatches land in
    different stretches. Returns the records and the forged (placement, seq)."""
    diffs = worker.diffs
    forged = {(d["placement"], d["seq"]) for d in (diffs[len(diffs) // 5], diffs[4 * len(diffs) // 5])}

    def is_forged(r: Record) -> bool:
        v = decision_value(r)
        return v is not None and (v["placement"], v["seq"]) in forged and v["decisions"] != ["c-forged"]

    records, _ = rewrite(last.records(), is_forged, forge_decisions)
    records, _ = rewrite(records, is_forged, forge_decisions)  # the other one
    return records, forged


def _mismatched(report: AuditReport) -> set[tuple[str, int]]:
    return {(m.placement, m.seq) for m in report.mismatches}


@pytest.fixture(scope="module")
def forged() -> tuple[History, int]:
    """A busy run taken over by a second instance half-way, forged; and its number of diffs."""
    worker = busy_run(OfflineWorker(PREFIX, read_back=2))
    b = worker.successor("fleetplace/b")
    b.publish(cluster("c4", {"tier": "gold"}, cpu=8), cluster("c8", {"tier": "silver"}, cpu=2))
    b.step(T0 + timedelta(hours=1))
    b.drain(T0 + timedelta(hours=1))
    records, forged = _forged(worker, b)
    history = history_of(records)
    assert forged <= _mismatched(audit(history))
    return history, len(worker.diffs) + len(b.diffs)


def test_a_stretch_process_that_fails_fails_the_audit(
    forged: tuple[History, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fleetplace.services.auditor import parallel
    from fleetplace.services.auditor.walk import Auditor

    def broken(self: Auditor, earlier: object) -> None:  # only the forked stretches start late
        raise OSError("disk on fire")

    monkeypatch.setattr(parallel, "MIN_DIFFS", 0)
    monkeypatch.setattr(Auditor, "fast_forward", broken)
    history, _ = forged
    with pytest.raises(RuntimeError, match=r"audit process failed.*disk on fire"):
        audit(history, jobs=2)


@pytest.mark.integration
def test_auditing_the_topics_in_several_jobs_gives_the_single_walks_report(
    broker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fleetplace.services.auditor import parallel
    from fleetplace.services.auditor.batches import group_batches
    from tests.bench.audit import make_history

    # with fewer diffs than MIN_DIFFS the audit walks once whatever `jobs` says, and this history
    # has far fewer: let it split, or the two reports compared would both come from one walk
    monkeypatch.setattr(parallel, "MIN_DIFFS", 0)
    worker = make_history(records=4_000, prefix=PREFIX)  # a fleet under churn: 190 batches
    records, forged = _forged(worker, worker)
    topics = Topics(unique_topic_prefix("audit"))
    moved = [
        Record(topics.prefix + r.topic.removeprefix(PREFIX), r.partition, r.offset, r.key, r.value, r.headers)
        for r in records
    ]
    asyncio.run(write_to_broker(broker, topics.prefix, moved))

    full = asyncio.run(read_history(broker, topics))
    single = audit(full)
    assert len(parallel.stretches(group_batches(full.decisions), 2)) == 2
    _, report = audit_topics(broker, topics, jobs=2)
    assert report.checked == len(worker.diffs) and forged <= _mismatched(report)
    assert report.to_json() == single.to_json()


def test_a_history_returned_by_asyncio_run_is_not_formatted_whole(forged: tuple[History, int]) -> None:
    # asyncio.run formats the repr of its main task, result included (Python 3.11): a repr of
    # every record took seconds for the benchmark's history
    history, _ = forged
    assert history.records_read > 50
    assert len(repr(history)) < 80 and str(history.records_read) in repr(history)
