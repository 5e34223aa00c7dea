"""`fleetplace publish`: documents in, records on the right topics with the contract's keys."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from fleetplace.services.commands import bus as bus_commands
from fleetplace.shared.bus.envelope import Envelope
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.publish import (
    Document,
    InputKind,
    PublishInputError,
    documents,
    load_documents,
    plan_records,
)
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, ensure_topics
from tests.piped import assert_lines_fit_content

FLEET_YAML = """\
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: cluster1
  labels: {cluster.open-cluster-management.io/clusterset: set1}
spec: {hubAcceptsClient: true}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: set1}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {namespace: ns1, name: set1}
spec: {clusterSet: set1}
---
apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: AddOnPlacementScore
metadata: {namespace: cluster1, name: resource-usage}
status:
  scores: [{name: cpuAvailable, value: 66}]
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {namespace: ns1, name: demo}
spec: {numberOfClusters: 1, clusterSets: [set1]}
---
partitions:
  - name: DEFAULT
    queues: [{name: root, submitacl: "*"}]
    placementrules: [{name: provided, create: true}]
  - name: gpu
    queues: [{name: root}]
"""

EXPECTED = [
    ("clusters", "cluster1"),
    ("clustersets", "set1"),
    ("clustersetbindings", "ns1/set1"),
    ("scores", "cluster1/resource-usage"),
    ("placements", "ns1/demo"),
    ("queue-configs", "default"),
    ("queue-configs", "gpu"),
]


def _cli() -> typer.Typer:
    app = typer.Typer()
    bus_commands.register(app)
    return app


def test_multi_document_yaml_is_routed_by_kind_with_contract_keys() -> None:
    planned = plan_records(documents(FLEET_YAML, "fleet.yaml"))
    assert [(p.topic, p.key) for p in planned] == EXPECTED
    assert planned[5].value is not None and planned[5].value["name"] == "DEFAULT"


def test_json_array_k8s_list_and_json_lines_are_read() -> None:
    cluster = {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster"}
    items = [{**cluster, "metadata": {"name": f"c{i}"}} for i in range(3)]
    as_list = orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}).decode()
    as_array = orjson.dumps(items).decode()
    as_lines = "\n".join(orjson.dumps(i).decode() for i in items) + "\n"
    for text in (as_list, as_array, as_lines):
        docs = list(documents(text, "in.json"))
        assert [d.where for d in docs] == ["in.json#0", "in.json#1", "in.json#2"]
        assert [p.key for p in plan_records(docs)] == ["c0", "c1", "c2"]


def test_applications_need_the_kind_flag_and_are_keyed_by_application_id() -> None:
    lines = '{"applicationID": "app-1", "user": "u", "queue": "root.a"}\n{"applicationID": "app-2", "user": "v"}\n'
    docs = list(documents(lines, "apps.jsonl"))
    with pytest.raises(
        PublishInputError, match=r"apps.jsonl#0: unknown kind None \(an application\? use --kind"
    ):
        plan_records(docs)
    planned = plan_records(docs, InputKind.APPLICATION)
    assert [(p.topic, p.key) for p in planned] == [("applications", "app-1"), ("applications", "app-2")]


def test_yunikorn_configmap_is_a_queue_config() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {"queues.yaml": "partitions: [{name: '', queues: []}]"},
    }
    planned = plan_records([Document("cm.yaml#0", doc)])
    assert [(p.topic, p.key) for p in planned] == [("queue-configs", "default")]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"kind": "Deployment", "metadata": {"name": "x"}}, r"f.yaml#4: unknown kind 'Deployment'"),
        (
            {"kind": "Placement", "metadata": {"name": "x"}},
            r"f.yaml#4: Placement 'x': metadata.namespace is missing",
        ),
        ({"kind": "ManagedCluster", "metadata": {}}, r"f.yaml#4: ManagedCluster: metadata.name is missing"),
        (["nested"], r"f.yaml#4: expected an object"),
    ],
)
def test_bad_documents_are_named_by_file_and_index(doc: object, message: str) -> None:
    docs = [*load_like(FLEET_YAML, 4), Document("f.yaml#4", doc)]
    with pytest.raises(PublishInputError, match=message):
        plan_records(docs)


def load_like(text: str, n: int) -> list[Document]:
    return [Document(f"f.yaml#{i}", d.body) for i, d in enumerate(list(documents(text, "f.yaml"))[:n])]


def test_directories_expand_to_their_yaml_and_json_files_in_order(tmp_path: Path) -> None:
    docs = list(documents(FLEET_YAML, "x"))
    (tmp_path / "b.yaml").write_text("---\n".join(orjson.dumps(d.body).decode() + "\n" for d in docs[2:5]))
    (tmp_path / "a.json").write_text(orjson.dumps([d.body for d in docs[:2]]).decode())
    (tmp_path / "notes.txt").write_text("ignored")
    loaded = load_documents([str(tmp_path)])
    assert [d.where for d in loaded] == [f"{tmp_path}/a.json#0", f"{tmp_path}/a.json#1"] + [
        f"{tmp_path}/b.yaml#{i}" for i in range(3)
    ]
    assert [(p.topic, p.key) for p in plan_records(loaded)] == EXPECTED[:5]


def test_invalid_ocm_object_is_rejected_before_sending_but_deletes_skip_validation() -> None:
    doc = Document("p.yaml#0", {"kind": "Placement", "metadata": {"namespace": "ns", "name": "p"}, "spec": 5})
    with pytest.raises(PublishInputError, match=r"p\.yaml#0: Placement 'ns/p': spec"):
        plan_records([doc])
    assert [p.key for p in plan_records([doc], validate=False)] == ["ns/p"]


async def _read_all(broker: str, topics: Topics) -> list[Record]:
    names = [topics.name(t) for t in {t for t, _ in EXPECTED}]
    async with BroadcastReader(broker, names) as reader:
        return await reader.read_to_end()


@pytest.mark.integration
def test_publish_command_sends_everything_and_delete_sends_tombstones(
    broker: str, topic_prefix: str, tmp_path: Path
) -> None:
    topics = Topics(topic_prefix)
    asyncio.run(ensure_topics(broker, topics))
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET_YAML)
    runner = CliRunner()
    args = ["publish", str(path), "--bootstrap", broker, "--prefix", topic_prefix]

    result = runner.invoke(_cli(), args)
    assert result.exit_code == 0, result.output
    assert "published 7 records" in result.output
    records = asyncio.run(_read_all(broker, topics))
    assert sorted((topics.unprefixed(r.topic), r.key) for r in records) == sorted(EXPECTED)
    for record in records:
        envelope = Envelope.from_headers(record.headers)
        assert envelope.type == "io.fleetplace." + topics.unprefixed(record.topic)
        assert record.value is not None and orjson.loads(record.value)

    result = runner.invoke(_cli(), [*args, "--delete"])
    assert result.exit_code == 0, result.output
    records = asyncio.run(_read_all(broker, topics))
    tombstones = [(topics.unprefixed(r.topic), r.key) for r in records if r.value is None]
    assert sorted(tombstones) == sorted(EXPECTED)


@pytest.mark.integration
def test_publish_of_a_bad_document_exits_2_and_sends_nothing(
    broker: str, topic_prefix: str, tmp_path: Path
) -> None:
    topics = Topics(topic_prefix)
    asyncio.run(ensure_topics(broker, topics))
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET_YAML + "---\nkind: Foo\nmetadata: {name: x}\n")
    result = CliRunner().invoke(
        _cli(), ["publish", str(path), "--bootstrap", broker, "--prefix", topic_prefix]
    )
    assert result.exit_code == 2
    assert f"{path}#6: unknown kind 'Foo'" in result.output
    assert asyncio.run(_read_all(broker, topics)) == []


@pytest.mark.integration
def test_publish_refuses_to_auto_create_topics(broker: str, topic_prefix: str, tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET_YAML)
    result = CliRunner().invoke(
        _cli(), ["publish", str(path), "--bootstrap", broker, "--prefix", topic_prefix]
    )
    assert result.exit_code == 1
    assert "topics create" in result.output


def test_publish_without_a_broker_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET_YAML)
    result = CliRunner().invoke(_cli(), ["publish", str(path)])
    assert result.exit_code == 2
    assert "KAFKA_BOOTSTRAP_SERVERS" in result.output


def test_publish_reads_stdin_and_dry_run_sends_nothing() -> None:
    result = CliRunner().invoke(_cli(), ["publish", "-", "--dry-run", "--prefix", "p."], input=FLEET_YAML)
    assert result.exit_code == 0, result.output
    lines = [line.split("\t") for line in result.output.splitlines()]
    assert [(topic, key) for topic, key, _ in lines] == [("p." + t, k) for t, k in EXPECTED]


@pytest.mark.integration
def test_topics_commands_create_and_list(broker: str, topic_prefix: str) -> None:
    runner = CliRunner()
    common = ["--bootstrap", broker, "--prefix", topic_prefix, "--output", "json"]
    listed = runner.invoke(_cli(), ["topics", "list", *common])
    assert listed.exit_code == 0, listed.output
    assert {t["state"] for t in orjson.loads(listed.stdout)} == {"missing"}
    created = runner.invoke(_cli(), ["topics", "create", "--partitions", "4", *common])
    assert created.exit_code == 0, created.output
    by_name = {t["name"]: t for t in orjson.loads(created.stdout)}
    assert by_name["placements"]["partitions"] == by_name["decisions"]["partitions"] == 4
    assert {t["state"] for t in by_name.values()} == {"created"}
    listed = runner.invoke(_cli(), ["topics", "list", *common])
    assert {t["state"] for t in orjson.loads(listed.stdout)} == {"exists"}  # the existing count is the plan
    listed = runner.invoke(_cli(), ["topics", "create", "--partitions", "6", *common])
    assert {t["name"] for t in orjson.loads(listed.stdout) if t["state"] == "mismatch"} == {
        "placements",
        "decisions",
        "placement-decisions",
        "sigmc-placement-decisions",
        "applications",
        "app-placements",
        "rollouts",
        "rollout-status",
        "rollout-decisions",
        "rollout-state",
    }
    assert "warning: " + topic_prefix + "placements has 4 partitions, planned 6" in listed.stderr
    table = runner.invoke(_cli(), ["topics", "list", *common[:-2]])
    assert table.exit_code == 0 and "rollout-decisions" in table.stdout, table.output
    assert_lines_fit_content(table.stdout)


def test_unparseable_file_is_named() -> None:
    with pytest.raises(
        PublishInputError, match=r"bad\.jsonl: not valid JSON, JSON Lines or YAML: as JSON Lines: line 2"
    ):
        list(documents('{"applicationID": "a"}\n{"applicationID": \n', "bad.jsonl"))


def test_publish_reads_every_file_and_names_every_bad_one(tmp_path: Path) -> None:
    """A truncated file, a binary one and a typo in a third: all three named, nothing planned."""
    good = tmp_path / "good.yaml"
    good.write_text(FLEET_YAML)
    trunc = tmp_path / "trunc.yaml"
    trunc.write_text(FLEET_YAML[:80] + "\n  labels: {a: [")
    binary = tmp_path / "logo.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    typo = tmp_path / "typo-placement.yaml"
    typo.write_text(
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n"
        "metadata: {namespace: ns1, name: p}\nspec: {numberOfClusterz: 1}\n"
    )
    args = ["publish", "--dry-run", str(good), str(trunc), str(binary), str(typo), "--prefix", "p."]
    result = CliRunner().invoke(_cli(), args)
    assert result.exit_code == 2
    assert result.stdout == ""
    errors = result.stderr
    assert f"{trunc}: not valid" in errors
    assert f"{binary}: cannot read: not UTF-8 at byte 0 (0x89)" in errors
    assert f"{typo}#0" in errors and "numberOfClusterz" in errors
    assert str(good) not in errors
