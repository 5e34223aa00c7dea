"""A real rollout worker makes a history on the embedded broker (topic clock): a canary group, a
soak ending on the timer, a failure breaching maxFailures, a new revision, a cluster leaving the
placement, a deletion; a second rollout on another strategy. The audit reproduces every rollout
diff from the topics; a tampered diff is reported naming the field that differs."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.rollout_check import audit_rollouts
from fleetplace.services.auditor.rollout_explain import NoRolloutDiff, explain_rollout
from fleetplace.services.auditor.rollout_log import RolloutLog, read_rollout_topics
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.kafka import make_producer, start_client
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, ensure_topics
from fleetplace.shared.rollout import Instant
from fleetplace.shared.testing import unique_topic_prefix
from tests.auditor.copying import at_least_once, copy_topics
from tests.piped import assert_lines_fit_content
from tests.rollout_worker.builders import CANARY, placement_decisions, report, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for

pytestmark = pytest.mark.integration

GROUPS = [("canary", ["c1"]), ("wave", ["c2", "c3"]), ("rest", ["c4", "c5"])]
T = "2026-01-01T00:%02d:00Z"
PROGRESSIVE = {
    "type": "Progressive",
    "progressive": {"maxConcurrency": 2, "minSuccessTime": "1m", "maxFailures": 0},
}


@dataclass(frozen=True)
class Run:
    prefix: str
    diffs: list[dict[str, Any]]


async def _record_rollouts(broker: str, prefix: str) -> list[dict[str, Any]]:
    topics = Topics(prefix)
    await ensure_topics(broker, topics)
    # copied by the tampering test (tests/auditor/copying.py)
    worker_settings = at_least_once(settings_for(broker, prefix, clock="topic"))
    group = worker_settings.rollout_group_id
    async with RolloutBus(broker, topics) as bus, running(worker_settings):

        def last(key: str) -> dict[str, Any]:
            return bus.last(key) or {}

        async def until(key: str, check: Any, what: str) -> None:
            await bus.wait_for(lambda: check(last(key)), what=what)

        await bus.set_clock(T % 0, group)
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("placement-decisions", "ops/db", placement_decisions("ops/db", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
        await bus.send("rollouts", "ops/db", rollout_object("ops/db", strategy=PROGRESSIVE, placement="db"))
        await until("apps/web", lambda d: d.get("clusters") == ["c1"], "the canary first")
        await until("ops/db", lambda d: d.get("clusters") == ["c1", "c2"], "two at a time")
        await bus.report("apps/web/c1", report("Succeeded", at=T % 1))
        await bus.report("ops/db/c1", report("Succeeded", at=T % 1))
        await bus.report("ops/db/c2", report("Progressing", at=T % 1))
        await until("apps/web", lambda d: d.get("nextRecheckAt") == T % 6, "the soak's end")
        await bus.set_clock(T % 6, group)  # the soak ends on the timer, with no event
        await until("apps/web", lambda d: d.get("clusters") == ["c2", "c3"], "the next group")
        await until("ops/db", lambda d: d.get("clusters") == ["c2", "c3"], "the soak over, c3 next")
        for c in ("c2", "c3"):
            await bus.report(f"apps/web/{c}", report("Failed", at=T % 6))
        await until("apps/web", lambda d: d.get("nextRecheckAt") == T % 16, "the deadline")
        await bus.set_clock(T % 16, group)  # the deadline passes on the timer: both time out
        await until("apps/web", lambda d: d.get("clusters") == [], "both timed out")
        await bus.report("ops/db/c3", report("Failed", at=T % 16))
        await until("ops/db", lambda d: d.get("maxFailureBreach") is True, "the breach")
        # c3, failed, leaves the db placement: it leaves the set, and its report no longer counts
        await bus.set_clock(T % 17, group)
        await bus.send(
            "placement-decisions",
            "ops/db",
            placement_decisions("ops/db", [("canary", ["c1"]), ("wave", ["c2"]), ("rest", ["c4", "c5"])], 2),
        )
        await until("ops/db", lambda d: "c3" in d.get("removed", ()), "c3 out of the set")
        await bus.report("ops/db/c2", report("Succeeded", at=T % 17))
        await bus.set_clock(T % 19, group)
        await until("ops/db", lambda d: "c2" not in d.get("clusters", ["c2"]), "c2 soaked")
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", revision="v2", strategy=CANARY))
        await until("apps/web", lambda d: d.get("revision") == "v2" and d.get("clusters") == ["c1"], "v2")
        await bus.report("apps/web/c1", report("Succeeded", revision="v2", at=T % 19))
        await until("apps/web", lambda d: d.get("nextRecheckAt") == T % 24, "the v2 soak")
        await bus.send("rollouts", "ops/db", None)
        await until("ops/db", lambda d: d.get("deleted") is True, "the final diff")
        await asyncio.sleep(0.5)  # anything still in flight lands before the history is read
        return list(bus.diffs)


@pytest.fixture(scope="module")
def run(broker: str) -> Run:
    prefix = unique_topic_prefix()
    return Run(prefix, asyncio.run(_record_rollouts(broker, prefix)))


async def _history(broker: str, prefix: str) -> History:
    history = History()
    assert await read_rollout_topics(broker, Topics(prefix), history)
    return history


def history_of(broker: str, prefix: str) -> History:
    return asyncio.run(_history(broker, prefix))


def test_every_rollout_diff_of_a_real_worker_reproduces(broker: str, run: Run) -> None:
    history = history_of(broker, run.prefix)
    report = audit_rollouts(history)
    assert report.mismatches == []
    assert report.seq_problems == [] and report.invalid == []
    assert report.checked == report.reproduced == len(run.diffs)
    kinds = {d["trigger"]["kind"] for d in run.diffs}
    assert {"rollout", "status", "recheck", "placement"} <= kinds  # the history exercises them all
    assert report.per_rollout.keys() == {"apps/web", "ops/db"}


def _cli() -> Any:
    from fleetplace.services.cli import app

    return app


def _audit_json(broker: str, prefix: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(_cli(), ["audit", "-o", "json", "--bootstrap", broker, "--prefix", prefix])
    start = result.stdout.index("{")
    return result.exit_code, orjson.loads(result.stdout[start:])


def test_fleetplace_audit_reports_the_rollout_diffs(broker: str, run: Run) -> None:
    code, report = _audit_json(broker, run.prefix)
    assert code == 0, report
    rollouts = report["rollouts"]
    assert rollouts["ok"] is True
    assert rollouts["checked"] == rollouts["reproduced"] == len(run.diffs)
    assert rollouts["perRollout"]["apps/web"]["checked"] == len(
        [d for d in run.diffs if d["rollout"] == "apps/web"]
    )
    table = CliRunner().invoke(_cli(), ["audit", "--bootstrap", broker, "--prefix", run.prefix])
    assert table.exit_code == 0
    assert "rollout diffs" in table.stdout and "every decision reproduces" in table.stdout
    assert_lines_fit_content(table.stdout)


async def _publish(broker: str, topic: str, key: str, value: dict[str, Any], partition: int) -> None:
    producer = make_producer(broker)
    await start_client(producer)
    try:
        await producer.send_and_wait(topic, encode_json(value), key=key.encode(), partition=partition)
    finally:
        await producer.stop()


def test_a_tampered_rollout_diff_is_a_mismatch_naming_the_field(broker: str, run: Run) -> None:
    history = history_of(broker, run.prefix)
    original = next(d for d in RolloutLog.of(history).diffs if d.key == "apps/web" and d.value["added"])
    tampered = {**original.value, "added": ["c-tampered"]}
    target = unique_topic_prefix("tampered")
    asyncio.run(copy_topics(broker, run.prefix, target, lambda r: r.value))
    asyncio.run(_publish(broker, f"{target}rollout-decisions", "apps/web", tampered, original.partition))

    code, report = _audit_json(broker, target)
    assert code == 1
    rollouts = report["rollouts"]
    assert [(m["rollout"], m["seq"], m["fields"]) for m in rollouts["mismatches"]] == [
        ("apps/web", original.seq, ["added"])
    ]
    mismatch = rollouts["mismatches"][0]
    assert mismatch["expected"] == {"added": ["c-tampered"]}
    assert mismatch["recomputed"] == {"added": original.value["added"]}
    assert rollouts["reproduced"] == len(run.diffs)  # the original still reproduces
    assert [(p["rollout"], p["seq"]) for p in rollouts["seqProblems"]] == [("apps/web", original.seq)]
    assert "published 2 times, differently" in rollouts["seqProblems"][0]["problem"]


def _lines(explanation: Any) -> dict[str, dict[str, Any]]:
    return {c["cluster"]: c for c in explanation.to_json()["clusters"]}


def test_explain_shows_the_answer_in_force_and_why(broker: str, run: Run) -> None:
    history = history_of(broker, run.prefix)
    soaking = explain_rollout(history, "apps/web", Instant.parse(T % 5).to_datetime())
    assert soaking.reproduced and soaking.record.seq == 2
    lines = _lines(soaking)
    assert lines["c1"]["status"] == "Succeeded" and lines["c1"]["until"] == T % 6
    assert lines["c1"]["why"] == f"succeeded: soaking for minSuccessTime until {T % 6}"
    assert [lines[c]["why"] for c in ("c2", "c3", "c4", "c5")] == ["waits for its turn"] * 4

    timed_out = _lines(explain_rollout(history, "apps/web", Instant.parse(T % 17).to_datetime()))
    assert timed_out["c2"]["listed"] == "timeout" and "timed out" in timed_out["c2"]["why"]

    breach = explain_rollout(history, "ops/db", Instant.parse(T % 16).to_datetime())
    assert breach.reproduced and breach.to_json()["maxFailureBreach"] is True
    lines = _lines(breach)
    assert lines["c3"]["status"] == "Failed" and "counts as a failure" in lines["c3"]["why"]
    assert "maxFailures breached" in lines["c4"]["why"]
    left = explain_rollout(history, "ops/db", Instant.parse(T % 17).to_datetime())
    assert left.reproduced and "c3" not in left.record.value["clusters"]
    assert "c3" not in _lines(left)  # in no decision group, its report is not the rollout's concern

    latest = explain_rollout(history, "apps/web")
    assert latest.to_json()["revision"] == "v2" and latest.reproduced
    assert _lines(latest)["c1"]["why"] == f"succeeded: soaking for minSuccessTime until {T % 24}"

    gone = explain_rollout(history, "ops/db")
    assert gone.to_json()["deleted"] is True and gone.reproduced and gone.clusters == []

    with pytest.raises(NoRolloutDiff):
        explain_rollout(history, "apps/web", Instant.parse("2025-01-01T00:00:00Z").to_datetime())


def test_rollout_explain_command(broker: str, run: Run) -> None:
    common = ["--bootstrap", broker, "--prefix", run.prefix]
    shown = CliRunner().invoke(
        _cli(), ["rollout", "explain", "apps/web", "--at", T % 5, "-o", "json", *common]
    )
    assert shown.exit_code == 0, shown.stdout
    data = orjson.loads(shown.stdout)
    assert data["record"]["seq"] == 2 and data["clustersToRollout"] == ["c1"] and data["reproduced"]
    table = CliRunner().invoke(_cli(), ["rollout", "explain", "apps/web", "--at", T % 5, *common])
    assert table.exit_code == 0
    assert "soaking for minSuccessTime" in table.stdout
    assert " (0)" not in table.stdout and "#0" in table.stdout  # groups shown as everywhere else
    assert_lines_fit_content(table.stdout)
    early = CliRunner().invoke(
        _cli(), ["rollout", "explain", "apps/web", "--at", "2025-01-01T00:00:00Z", *common]
    )
    assert early.exit_code == 1


def test_rollout_status_table_on_a_pipe_fits_its_content(broker: str, run: Run) -> None:
    common = ["--bootstrap", broker, "--prefix", run.prefix]
    status = CliRunner().invoke(_cli(), ["rollout", "status", "apps/web", *common])
    assert status.exit_code == 0, status.output
    assert "c1" in status.stdout and "┏" in status.stdout
    assert_lines_fit_content(status.stdout)


# Fields a diff decided that the next diff does not start from (`clusters`, `revision` and
# `deleted` are where the next diff's added/removed are counted from).
OWN_FIELDS = ("added", "removed", "placements", "maxFailureBreach", "nextRecheckAt", "complete")


@pytest.fixture(scope="module")
def recorded(broker: str, run: Run) -> History:
    return history_of(broker, run.prefix)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_changing_one_field_of_one_diff_fails_exactly_that_diff_on_that_field(
    run: Run, recorded: History, data: st.DataObject
) -> None:
    """Replay is deterministic and exact: the same records audit the same, and a diff altered in
    one decided field — whichever — is the only mismatch, naming that field alone."""
    log = RolloutLog.of(recorded)
    target = data.draw(st.sampled_from(log.diffs), label="diff")
    name = data.draw(st.sampled_from(OWN_FIELDS), label="field")
    wrong = {
        "added": [*target.value["added"], "c-other"],
        "removed": [*target.value["removed"], "c-other"],
        # a placement the rollout does not have (a deletion's final diff has none at all)
        "placements": [*target.value["placements"], {"name": "other-placement", "decided": False}],
        "maxFailureBreach": not target.value["maxFailureBreach"],
        "nextRecheckAt": "2030-01-01T00:00:00Z",
        "complete": not target.value["complete"],
    }[name]

    def records(change: bool) -> list[Record]:
        out = []
        for tp, rs in recorded.partitions.items():
            for r in rs:
                if change and tp == ("rollout-decisions", target.partition) and r.offset == target.offset:
                    r = dataclasses.replace(r, value=encode_json({**target.value, name: wrong}))
                out.append(r)
        return out

    def audited(change: bool) -> Any:
        history = History.of(records(change), run.prefix)
        history.ends = dict(recorded.ends)  # every partition of the rollout topics, empty ones too
        return audit_rollouts(history)

    assert audited(False).to_json() == audit_rollouts(recorded).to_json()
    report = audited(True)
    assert [(m.record.key, m.record.seq, m.fields) for m in report.mismatches] == [
        (target.key, target.seq, [name])
    ]
