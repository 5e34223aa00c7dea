"""The first stretch checked while the rest is read (services/auditor/early.py): it covers the same
batches whether worked out from its short read or from the whole history, and the audit's report
is the single walk's whether the early report is taken, refused or never comes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from fleetplace.services.auditor import early
from fleetplace.services.auditor.audit import audit, audit_topics
from fleetplace.services.auditor.batches import group_batches
from fleetplace.services.auditor.early import Cut, FirstStretch, batch_key
from fleetplace.services.auditor.history import History, HistoryError, read_history
from fleetplace.services.auditor.report import AuditReport
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import DECISIONS, Topics
from fleetplace.shared.testing import unique_topic_prefix
from tests.auditor.offline import T0, OfflineWorker, busy_run, cluster, write_to_broker
from tests.auditor.test_audit import PREFIX, decision_value, forge_decisions, history_of, rewrite


def _decision_ends(records: list[Record]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for r in records:
        if r.topic == PREFIX + DECISIONS:
            ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
    return ends


@pytest.fixture(scope="module")
def two_instances() -> list[Record]:
    """A busy run taken over by a second instance half-way (11 batches)."""
    worker = busy_run(OfflineWorker(PREFIX, read_back=2))
    b = worker.successor("fleetplace/b")
    b.publish(cluster("c4", {"tier": "gold"}, cpu=8), cluster("c8", {"tier": "silver"}, cpu=2))
    b.step(T0 + timedelta(hours=1))
    b.drain(T0 + timedelta(hours=1))
    return b.records()


@pytest.fixture(scope="module")
def churn() -> list[Record]:
    """A fleet under churn: about 80 batches."""
    from tests.bench.audit import make_history

    return make_history(records=20_000, prefix=PREFIX).records()


@pytest.mark.parametrize("share", [0.1, 0.3, 0.56, 0.75, 0.9])
@pytest.mark.parametrize("run", ["two_instances", "churn"])
def test_the_short_read_and_the_whole_history_find_the_same_first_stretch(
    run: str, share: float, request: pytest.FixtureRequest
) -> None:
    records: list[Record] = request.getfixturevalue(run)
    whole = history_of(records)
    cut = Cut.of(_decision_ends(records), share)
    # what the early process reads of `decisions`: the first `share` of every partition
    short = [r for r in records if r.topic != PREFIX + DECISIONS or r.offset < cut.at[r.partition]]
    read_short = history_of(short)
    batches, short_batches = group_batches(whole.decisions), group_batches(read_short.decisions)
    count = cut.length(whole.decisions, batches)
    assert count == cut.length(read_short.decisions, short_batches)
    assert [batch_key(b) for b in batches[:count]] == [batch_key(b) for b in short_batches[:count]]
    # every diff of the stretch lies before the cut, and no batch it takes read decisions beyond it
    for batch in batches[:count]:
        assert all(d.offset < cut.at[d.partition] for d in batch.diffs)
        assert all(n <= cut.at[p] for (t, p), n in batch.watermark.items() if t == DECISIONS)
    if run == "churn" and 0.3 <= share < 0.9:
        assert 0 < count < len(batches)


def test_a_stretch_ends_before_the_earliest_last_diff_of_a_partition_cut_short(churn: list[Record]) -> None:
    whole = history_of(churn)
    batches = group_batches(whole.decisions)
    ends = _decision_ends(churn)
    cut = Cut.of(ends, 0.5)
    count = cut.length(whole.decisions, batches)
    last_read = min(
        max((d for d in whole.decisions if d.partition == p and d.offset < at), key=lambda d: d.offset).now
        for p, at in cut.at.items()
        if at < ends[p]
    )
    assert 0 < count < len(batches)
    assert all(b.now < last_read for b in batches[:count])
    assert batches[count].now >= last_read or any(
        t == DECISIONS and n > cut.at[p] for (t, p), n in batches[count].watermark.items()
    )
    # a partition cut before its first diff bounds nothing: no stretch at all
    assert Cut({p: 0 for p in ends}, ends).length(whole.decisions, batches) == 0
    # nothing cut short: every batch
    assert Cut(ends, ends).length(whole.decisions, batches) == len(batches)


class _Done:
    def __init__(self, checked: Any) -> None:
        self.checked = checked

    def get(self) -> Any:
        if isinstance(self.checked, BaseException):
            raise self.checked
        return self.checked


class _Counter:
    value = 0


def _first(history: History, report: AuditReport | None, keys: list[Any] | Exception) -> FirstStretch:
    checked = keys if isinstance(keys, Exception) else early.CheckedStretch(keys, report or AuditReport())
    return FirstStretch(Cut({}, {}), _Done(checked), _Counter())


def test_an_early_report_of_other_batches_is_refused_and_a_failed_process_fails_the_audit(
    churn: list[Record],
) -> None:
    history = history_of(churn)
    batches = group_batches(history.decisions)
    keys = [batch_key(b) for b in batches[:5]]
    report = AuditReport(checked=7)
    assert _first(history, report, keys).report(batches[:5]) is report
    assert _first(history, report, keys).report(batches[:4]) is None
    assert _first(history, report, keys[1:] + keys[:1]).report(batches[:5]) is None
    assert FirstStretch(Cut({}, {}), _Done(None), _Counter()).report(batches[:5]) is None  # unreadable
    with pytest.raises(RuntimeError, match=r"audit process failed.*disk on fire"):
        _first(history, None, OSError("disk on fire")).report(batches[:5])


@pytest.fixture(scope="module")
def on_the_broker(broker: str) -> Iterator[tuple[str, Topics, AuditReport]]:
    """A churning fleet's history with two forged diffs on the broker, and its single-walk report."""
    from tests.bench.audit import make_history

    worker = make_history(records=4_000, prefix=PREFIX)
    diffs = worker.diffs
    forged = {(d["placement"], d["seq"]) for d in (diffs[len(diffs) // 5], diffs[4 * len(diffs) // 5])}

    def is_forged(r: Record) -> bool:
        v = decision_value(r)
        return v is not None and (v["placement"], v["seq"]) in forged and v["decisions"] != ["c-forged"]

    records, _ = rewrite(worker.records(), is_forged, forge_decisions)
    records, _ = rewrite(records, is_forged, forge_decisions)
    topics = Topics(unique_topic_prefix("early"))
    moved = [
        Record(topics.prefix + r.topic.removeprefix(PREFIX), r.partition, r.offset, r.key, r.value, r.headers)
        for r in records
    ]
    asyncio.run(write_to_broker(broker, topics.prefix, moved))
    single = audit(asyncio.run(read_history(broker, topics)))
    assert {(m.placement, m.seq) for m in single.mismatches} >= forged
    yield broker, topics, single


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """How many diffs each early report the audit took had checked (None: refused)."""
    taken: list[int | None] = []
    report = FirstStretch.report

    def spied(self: FirstStretch, batches: Any) -> AuditReport | None:
        got = report(self, batches)
        taken.append(None if got is None else got.checked)
        return got

    monkeypatch.setattr(FirstStretch, "report", spied)
    return taken


@pytest.mark.integration
def test_the_first_stretch_is_checked_during_the_read_and_the_report_is_the_single_walks(
    on_the_broker: tuple[str, Topics, AuditReport], monkeypatch: pytest.MonkeyPatch
) -> None:
    broker, topics, single = on_the_broker
    taken = _spy(monkeypatch)
    seen: list[tuple[int, int]] = []
    _, report = audit_topics(broker, topics, jobs=2, progress=lambda done, total: seen.append((done, total)))
    assert len(taken) == 1 and taken[0] is not None and 0 < taken[0] < single.checked
    assert report.to_json() == single.to_json()
    assert seen[-1] == (single.checked, single.checked)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


@pytest.mark.integration
def test_when_the_early_process_cannot_read_its_stretch_the_audit_checks_it_and_agrees(
    on_the_broker: tuple[str, Topics, AuditReport], monkeypatch: pytest.MonkeyPatch
) -> None:
    broker, topics, single = on_the_broker
    taken = _spy(monkeypatch)

    async def stuck(request: Any) -> Any:  # inherited by the forked process
        raise HistoryError("decisions/0: no records short of the end read")

    monkeypatch.setattr(early, "_read_first_stretch", stuck)
    _, report = audit_topics(broker, topics, jobs=2)
    assert taken == [None]
    assert report.to_json() == single.to_json()


@pytest.mark.integration
def test_an_early_process_that_fails_fails_the_audit(
    on_the_broker: tuple[str, Topics, AuditReport], monkeypatch: pytest.MonkeyPatch
) -> None:
    broker, topics, _ = on_the_broker

    async def broken(request: Any) -> Any:
        raise OSError("disk on fire")

    monkeypatch.setattr(early, "_read_first_stretch", broken)
    with pytest.raises(RuntimeError, match=r"audit process failed.*disk on fire"):
        audit_topics(broker, topics, jobs=2)


@pytest.mark.integration
def test_one_job_checks_everything_in_one_walk(
    on_the_broker: tuple[str, Topics, AuditReport], monkeypatch: pytest.MonkeyPatch
) -> None:
    broker, topics, single = on_the_broker
    taken = _spy(monkeypatch)
    _, report = audit_topics(broker, topics, jobs=1)
    assert taken == [] and report.to_json() == single.to_json()
