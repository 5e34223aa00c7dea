"""The first stretch checked while the rest is read (services/auditor/early.py): the report is
the single walk's, whatever the early process does."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, cast

import pytest

from fleetplace.services.auditor.audit import AuditReport, Checker, audit
from fleetplace.services.auditor.early import audit_topics, batch_key, read_first_stretch
from fleetplace.services.auditor.history import History, read_history
from fleetplace.services.auditor.walk import Auditor
from fleetplace.shared.bus.codec import DEFAULT_LIMITS
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


def _takeover_run() -> tuple[list[Record], set[tuple[str, int]], int]:
    """A busy run taken over by a second instance half-way, forged; and its number of diffs."""
    worker = busy_run(OfflineWorker(PREFIX, read_back=2))
    b = worker.successor("fleetplace/b")
    b.publish(cluster("c4", {"tier": "gold"}, cpu=8), cluster("c8", {"tier": "silver"}, cpu=2))
    b.step(T0 + timedelta(hours=1))
    b.drain(T0 + timedelta(hours=1))
    records, forged = _forged(worker, b)
    return records, forged, len(worker.diffs) + len(b.diffs)


def _mismatched(report: AuditReport) -> set[tuple[str, int]]:
    return {(m.placement, m.seq) for m in report.mismatches}


class _Early:
    """Stands in for the early process: what it claims to have checked, and how it ends."""

    def __init__(self, keys: Any, report: AuditReport | None = None) -> None:
        self._keys = keys
        self._report = report
        self.done = 0
        self.stopped = False

    def keys(self) -> Any:
        return self._keys

    def report(self) -> AuditReport:
        if self._report is None:
            raise RuntimeError("killed")
        return self._report

    def stop(self) -> None:
        self.stopped = True


def _first_stretch_report(history: History, count: int) -> AuditReport:
    auditor = Auditor(history)
    checker = Checker()
    auditor.walk(checker.visit, checker.select, batches=auditor.batches[:count])
    checker.took(auditor)
    return checker.report


@pytest.fixture(scope="module")
def forged() -> tuple[History, int]:
    records, forged, diffs = _takeover_run()
    history = history_of(records)
    assert forged <= _mismatched(audit(history))
    return history, diffs


def test_an_early_report_on_the_first_batches_merges_into_the_single_walks(
    forged: tuple[History, int],
) -> None:
    history, diffs = forged
    single = audit(history)
    assert single.checked == diffs
    batches = Auditor(history).batches
    for count in (1, len(batches) // 3, len(batches) - 1, len(batches)):
        early = _Early([batch_key(b) for b in batches[:count]], _first_stretch_report(history, count))
        split = audit(history, jobs=2, early=cast(Any, early))
        assert split.to_json() == single.to_json()
        assert split.early_batches == count and early.stopped


def test_an_early_stretch_that_is_not_this_historys_beginning_is_dropped(forged: tuple[History, int]) -> None:
    history, _ = forged
    single = audit(history)
    batches = Auditor(history).batches
    keys = [batch_key(b) for b in batches[:10]]
    keys[4] = (*keys[4][:3], keys[4][3][:-1])  # a batch it saw with a diff fewer
    early = _Early(keys, _first_stretch_report(history, 10))
    report = audit(history, jobs=2, early=cast(Any, early))
    assert early.stopped and report.early_batches == 0
    assert report.to_json() == single.to_json()
    nothing = _Early(None)  # it found nothing it could check early
    assert audit(history, jobs=2, early=cast(Any, nothing)).to_json() == single.to_json()


def test_a_failed_early_process_has_its_stretch_checked_again(forged: tuple[History, int]) -> None:
    history, _ = forged
    single = audit(history).to_json()
    batches = Auditor(history).batches
    early = _Early([batch_key(b) for b in batches[: len(batches) // 2]])  # report() raises
    report = audit(history, jobs=2, early=cast(Any, early)).to_json()
    warnings = report.pop("warnings")
    failed = [w for w in warnings if "the early audit process failed" in w]
    assert len(failed) == 1 and "killed" in failed[0]
    assert sorted(w for w in warnings if w not in failed) == sorted(single.pop("warnings"))
    assert report == single


@pytest.mark.integration
def test_auditing_the_topics_checks_the_first_stretch_during_the_read(broker: str) -> None:
    from tests.bench.audit import make_history

    worker = make_history(records=4_000, prefix=PREFIX)  # a fleet under churn: 190 batches
    records, forged = _forged(worker, worker)
    topics = Topics(unique_topic_prefix("early"))
    moved = [
        Record(topics.prefix + r.topic.removeprefix(PREFIX), r.partition, r.offset, r.key, r.value, r.headers)
        for r in records
    ]
    asyncio.run(write_to_broker(broker, topics.prefix, moved))

    history, count = asyncio.run(read_first_stretch(broker, topics, 0.5, DEFAULT_LIMITS))
    full = asyncio.run(read_history(broker, topics))
    full_batches = Auditor(full).batches
    assert len(full_batches) // 4 < count < len(full_batches)
    assert [batch_key(b) for b in Auditor(history).batches[:count]] == [
        batch_key(b) for b in full_batches[:count]
    ]
    assert history.records_read < full.records_read  # it read only what its stretch needs

    _, report = audit_topics(broker, topics, jobs=2)
    single = audit(full)
    assert report.checked == len(worker.diffs) and forged <= _mismatched(report)
    assert 0 < report.early_batches < report.batches
    assert report.to_json() == single.to_json()


def test_a_history_returned_by_asyncio_run_is_not_formatted_whole(forged: tuple[History, int]) -> None:
    # asyncio.run formats the repr of its main task, result included (Python 3.11): a repr of
    # every record took seconds for the benchmark's history
    history, _ = forged
    assert history.records_read > 50
    assert len(repr(history)) < 80 and str(history.records_read) in repr(history)
