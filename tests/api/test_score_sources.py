"""ScoreSource documents are checked like every document: admission, strict fields, apiVersion."""

from __future__ import annotations

import pytest

from fleetplace.shared.api.admission import read_score_source
from fleetplace.shared.api.objects import ObjectError
from fleetplace.shared.bus.publish import Document, PublishInputError, plan_records
from tests.scoring.builders import source_doc


def test_a_score_source_goes_to_score_sources_keyed_by_namespace_and_name() -> None:
    doc = source_doc()
    (record,) = plan_records([Document("cpu.yaml#0", doc)])
    assert (record.topic, record.key, record.value) == ("score-sources", "scores/cpu-free", doc)


def test_durations_and_defaults_are_read() -> None:
    src = read_score_source(source_doc(interval="1m30s", valid_for="10m"), "f#0")
    assert (src.spec.interval_s, src.spec.valid_for_s, src.spec.cluster_label) == (90.0, 600.0, "cluster")


@pytest.mark.parametrize(
    ("change", "path", "reason"),
    [
        ({"metadata": {"name": "x"}}, "metadata.namespace", "missing"),
        ({"apiVersion": "fleetplace.dev/v1"}, "apiVersion", "does not serve ScoreSource"),
        ({"spec.normalize": {"min": 10, "max": 1}}, "spec.normalize", "min must be less than max"),
        ({"spec.normalize": {"min": 0, "max": 1, "fleet": True}}, "spec.normalize", "give neither"),
        ({"spec.normalize": {"invert": True}}, "spec.normalize", "give min and max, or fleet"),
        ({"spec.interval": "soon"}, "spec.interval", 'invalid duration "soon"'),
        ({"spec.interval": "500ms"}, "spec", "interval: must be at least 1s"),
        ({"spec.validFor": "30s"}, "spec", "validFor: must be longer than interval"),
        ({"spec.prometheus": {}}, "spec.prometheus", "exactly one of url and endpoint"),
        ({"spec.prometheus": {"url": "prometheus:9090"}}, "spec.prometheus.url", "http:// or https://"),
        ({"spec.score": {"resource": "Usage", "name": "a"}}, "spec.score.resource", "Kubernetes object name"),
        ({"spec.clusterLabel": "cluster-name"}, "spec.clusterLabel", "Prometheus label name"),
        ({"spec.query": ""}, "spec.query", "must not be empty"),
        ({"spec.normalise": {}}, "spec.normalise", "unknown field"),
    ],
)
def test_a_bad_source_is_refused_naming_file_field_and_reason(
    change: dict[str, object], path: str, reason: str
) -> None:
    doc = source_doc()
    for where, value in change.items():
        if where.startswith("spec."):
            doc["spec"][where.removeprefix("spec.")] = value
        else:
            doc[where] = value
    with pytest.raises(PublishInputError) as caught:
        plan_records([Document("sources.yaml#3", doc)])
    message = str(caught.value)
    assert message.startswith("sources.yaml#3: ScoreSource ")
    assert path in message and reason in message, message


def test_reading_a_source_outside_publish_raises_object_error() -> None:
    with pytest.raises(ObjectError, match=r"spec\.score"):
        doc = source_doc()
        del doc["spec"]["score"]
        read_score_source(doc, "w")
