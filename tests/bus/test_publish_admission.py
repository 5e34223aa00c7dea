"""`fleetplace publish` checks exactly what the scheduler worker admits, names every bad document,
and sends nothing when any is bad; unknown fields are errors unless relaxed, as with kubectl."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from fleetplace.services.commands import bus as bus_commands
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.publish import ROUTES, Document, PublishInputError, plan_records
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import CATALOGUE, Topics, ensure_topics

G = "cluster.open-cluster-management.io"
PLACEMENT = f"""\
apiVersion: {G}/v1beta1
kind: Placement
metadata: {{namespace: ns1, name: %s}}
spec:
%s
"""
BAD_FILES = {
    "weight11.yaml": PLACEMENT
    % (
        "weight",
        "  prioritizerPolicy:\n    mode: Exact\n    configurations:\n"
        "      - {scoreCoordinate: {type: BuiltIn, builtIn: Steady}, weight: 11}",
    ),
    "unknownfield.yaml": PLACEMENT % ("typo", "  numberOfCluster: 2"),
    "negnum.yaml": f"""\
apiVersion: {G}/v1alpha1
kind: AddOnPlacementScore
metadata: {{namespace: cluster1, name: usage}}
status:
  scores: [{{name: cpu, value: -150}}]
""",
    "badcel.yaml": PLACEMENT
    % (
        "cel",
        "  predicates:\n    - requiredClusterSelector:\n        celSelector:\n"
        "          celExpressions: ['cluster.metadata.labels[']",
    ),
}
GOOD = f"""\
apiVersion: {G}/v1
kind: ManagedCluster
metadata: {{name: cluster1}}
spec: {{hubAcceptsClient: true}}
"""


def _cli() -> typer.Typer:
    app = typer.Typer()
    bus_commands.register(app)
    return app


def write_all(tmp_path: Path) -> list[str]:
    (tmp_path / "good.yaml").write_text(GOOD)
    paths = [str(tmp_path / "good.yaml")]
    for name, text in BAD_FILES.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    return paths


async def _read_everything(broker: str, topics: Topics) -> list[Record]:
    async with BroadcastReader(broker, topics.names()) as reader:
        return await reader.read_to_end()


@pytest.mark.integration
@pytest.mark.parametrize("dry_run", [False, True])
def test_the_four_bad_files_publish_nothing_and_each_is_named(
    broker: str, topic_prefix: str, tmp_path: Path, dry_run: bool
) -> None:
    topics = Topics(topic_prefix)
    asyncio.run(ensure_topics(broker, topics))
    args = ["publish", *write_all(tmp_path), "-b", broker, "--prefix", topic_prefix]
    result = CliRunner().invoke(_cli(), [*args, "--dry-run"] if dry_run else args)
    assert result.exit_code == 2, result.output
    err = result.stderr
    assert "weight11.yaml#0: Placement 'ns1/weight': spec.prioritizerPolicy.configurations[0].weight" in err
    assert "unknownfield.yaml#0: Placement 'ns1/typo': spec.numberOfCluster: unknown field" in err
    assert "negnum.yaml#0: AddOnPlacementScore 'cluster1/usage': status.scores[0].value" in err
    # a CEL expression that does not compile is admitted, as by the API server; the scheduler
    # will call the placement Misconfigured, and publish says so
    assert "badcel.yaml#0: Placement 'ns1/cel'" in err and "Misconfigured" in err
    assert "published" not in result.stdout
    assert asyncio.run(_read_everything(broker, topics)) == []


def test_warn_and_ignore_relax_unknown_fields_but_not_admission(tmp_path: Path) -> None:
    (tmp_path / "typo.yaml").write_text(BAD_FILES["unknownfield.yaml"])
    (tmp_path / "weight.yaml").write_text(BAD_FILES["weight11.yaml"])
    typo = str(tmp_path / "typo.yaml")
    warned = CliRunner().invoke(_cli(), ["publish", typo, "--dry-run", "--validate", "warn"])
    assert warned.exit_code == 0, warned.output
    assert "warning:" in warned.stderr and "spec.numberOfCluster" in warned.stderr
    ignored = CliRunner().invoke(_cli(), ["publish", "-f", typo, "--dry-run", "--validate=ignore"])
    assert ignored.exit_code == 0
    assert "numberOfCluster" not in ignored.stderr
    weight = CliRunner().invoke(
        _cli(), ["publish", str(tmp_path / "weight.yaml"), "--dry-run", "--validate=ignore"]
    )
    assert weight.exit_code == 2


def test_unknown_api_versions_and_duplicate_keys_are_errors() -> None:
    v9 = GOOD.replace(f"{G}/v1", f"{G}/v9")
    result = CliRunner().invoke(_cli(), ["publish", "-", "--dry-run"], input=v9)
    assert result.exit_code == 2
    assert f"'{G}/v9' does not serve ManagedCluster" in result.stderr
    duplicated = GOOD + "spec: {hubAcceptsClient: false}\n"
    result = CliRunner().invoke(_cli(), ["publish", "-", "--dry-run"], input=duplicated)
    assert result.exit_code == 2
    assert "line 5, column 1: duplicate key 'spec'" in result.stderr


def test_an_object_copied_from_a_hub_has_no_unknown_field() -> None:
    hub = {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {
            "name": "cluster1",
            "uid": "0b3c",
            "resourceVersion": "1234",
            "generation": 2,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["cluster.open-cluster-management.io/api-resource-cleanup"],
            "managedFields": [{"manager": "registration", "operation": "Update"}],
        },
        "spec": {
            "hubAcceptsClient": True,
            "leaseDurationSeconds": 60,
            "managedClusterClientConfigs": [{"url": "https://c1:6443", "caBundle": "LS0t"}],
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi"},
            "capacity": {"cpu": "4", "memory": "8Gi"},
            "conditions": [{"type": "ManagedClusterConditionAvailable", "status": "True"}],
            "version": {"kubernetes": "v1.30.0"},
            "clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "AWS"}],
        },
    }
    (record,) = plan_records([Document("hub.yaml#0", hub)])
    assert record.key == "cluster1"


def test_every_bad_document_is_named_not_only_the_first() -> None:
    docs = [
        Document(
            f"f.yaml#{i}",
            {
                "kind": "Placement",
                "metadata": {"namespace": "ns", "name": f"p{i}"},
                "spec": {"sortBy": "Bogus"},
            },
        )
        for i in range(3)
    ]
    with pytest.raises(PublishInputError) as caught:
        plan_records(docs)
    assert [line.split(":")[0] for line in str(caught.value).splitlines()] == [
        "f.yaml#0",
        "f.yaml#1",
        "f.yaml#2",
    ]


def test_every_route_goes_to_a_catalogue_topic() -> None:
    assert {route.topic for route in ROUTES.values()} <= {spec.name for spec in CATALOGUE}


ENUM_TYPOS = PLACEMENT % (
    "typos",
    """  prioritizerPolicy:
    mode: Addtive
    configurations:
      - {scoreCoordinate: {type: BuiltIn, builtIn: Balence}, weight: 2}
      - {scoreCoordinate: {type: BuiltIn, builtIn: Nonesuch}, weight: 0}
  tolerations: [{key: gpu, operator: Exist}, {key: ssd}]
  predicates:
    - requiredClusterSelector:
        labelSelector:
          matchExpressions: [{key: tier, operator: in, values: [gold]}]
        claimSelector:
          matchExpressions: [{key: region, operator: Exists}]""",
)


def test_a_typo_in_a_string_enum_is_sent_with_a_warning_naming_field_and_value(tmp_path: Path) -> None:
    """OCM's API takes these fields as any string, so the placement is admitted and sent (exit 0),
    as with CEL that does not compile; publish warns about each value the scheduler cannot read."""
    (tmp_path / "typos.yaml").write_text(ENUM_TYPOS)
    result = CliRunner().invoke(
        _cli(), ["publish", str(tmp_path / "typos.yaml"), "--dry-run", "--prefix", "p."]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "p.placements\tns1/typos\tupsert\n"
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    subject = f"warning: {tmp_path / 'typos.yaml'}#0: Placement 'ns1/typos': "
    assert all(w.startswith(subject) for w in warnings), warnings
    found = {w[len(subject) :].partition(":")[0]: w for w in warnings}
    assert sorted(found) == [
        "spec.predicates[0].requiredClusterSelector.labelSelector.matchExpressions[0].operator",
        "spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn",
        "spec.prioritizerPolicy.mode",
        "spec.tolerations[0].operator",
    ]
    assert (
        "'Addtive' is not one of Additive, Exact (did you mean 'Additive'?)"
        in found["spec.prioritizerPolicy.mode"]
    )
    assert "Misconfigured" in found["spec.prioritizerPolicy.mode"]
    assert (
        "(did you mean 'In'?)"
        in found["spec.predicates[0].requiredClusterSelector.labelSelector.matchExpressions[0].operator"]
    )
    assert "tolerates nothing" in found["spec.tolerations[0].operator"]


def test_a_set_selector_operator_typo_is_warned() -> None:
    body = {
        "apiVersion": f"{G}/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": "gold"},
        "spec": {
            "clusterSelector": {
                "selectorType": "LabelSelector",
                "labelSelector": {
                    "matchExpressions": [{"key": "tier", "operator": "NotInn", "values": ["x"]}]
                },
            }
        },
    }
    warned: list[str] = []
    plan_records([Document("set.yaml#0", body)], warn=warned.append)
    (message,) = warned
    assert message.startswith(
        "set.yaml#0: ManagedClusterSet 'gold': spec.clusterSelector.labelSelector.matchExpressions[0].operator: "
        "'NotInn' is not one of In, NotIn, Exists, DoesNotExist (did you mean 'NotIn'?)"
    )
