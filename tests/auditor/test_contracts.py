"""The topic contracts: the AsyncAPI document is current, and the worker's records fit the models."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from fleetplace.services.commands.asyncapi import PAYLOADS, build_document, render
from fleetplace.services.scheduler.core import SchedulerProcessor
from fleetplace.shared.api.decisions import DecisionDiff, PlacementDecisions
from fleetplace.shared.bus.topics import CATALOGUE, TopicKind
from tests.auditor.offline import OfflineWorker, busy_run

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "asyncapi.yaml"


def test_the_committed_asyncapi_document_is_current() -> None:
    assert COMMITTED.read_text() == render(), (
        "docs/asyncapi.yaml is stale: run `fleetplace docs asyncapi -o docs/asyncapi.yaml`"
    )


def test_every_topic_has_a_channel_with_key_payload_and_headers() -> None:
    doc = build_document()
    assert doc["asyncapi"] == "3.0.0"
    assert set(PAYLOADS) == {s.name for s in CATALOGUE}
    for spec in CATALOGUE:
        name = next(n for n, c in doc["channels"].items() if c["title"] == spec.name)
        channel = doc["channels"][name]
        assert channel["address"] == "{prefix}" + spec.name
        assert channel["bindings"]["kafka"]["partitions"] == spec.partitions
        message = doc["components"]["messages"][name]
        assert message["bindings"]["kafka"]["key"]["type"] == "string"
        ref = message["payload"].get("$ref") or message["payload"]["oneOf"][0]["$ref"]
        assert ref.rsplit("/", 1)[1] in doc["components"]["schemas"]
        headers = message["headers"]["$ref"].rsplit("/", 1)[1]
        assert ("Output" in headers) == (spec.kind is TopicKind.OUTPUT)
    decision = doc["components"]["schemas"]["DecisionDiff"]
    assert {"placement", "seq", "evaluatedAt", "trigger", "inputs", "decisions"} <= set(
        decision["properties"]
    )


def test_docs_asyncapi_writes_the_document(tmp_path: Path) -> None:
    from fleetplace.services.cli import app

    target = tmp_path / "asyncapi.yaml"
    result = CliRunner().invoke(app, ["docs", "asyncapi", "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(target.read_text()) == yaml.safe_load(render())


def test_the_workers_records_round_trip_through_the_payload_models() -> None:
    worker = busy_run(OfflineWorker())
    processor = SchedulerProcessor()
    for diff in worker.diffs:
        assert DecisionDiff.from_value(diff).to_value() == diff
        processor.apply("decisions", diff["placement"], diff)
    for key in processor.published:
        current = processor.placement_decisions(key)
        if current is not None:
            model = PlacementDecisions.model_validate(current)
            assert model.model_dump(mode="json", by_alias=True, exclude_none=True) == current
