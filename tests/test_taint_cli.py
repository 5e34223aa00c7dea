"""Taints from the command line: `fleetplace taint` and a ClusterTaints document through
`publish` land on the taints topic as the scheduler reads them, and change its decisions."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.services.commands.taint import TaintChange, apply_change, parse_taint
from fleetplace.shared.api.ocm import TaintSet
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.topics import Topics

from .scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_taint_arguments_are_read_the_kubectl_way() -> None:
    assert parse_taint("maint=true:NoSelect") == TaintChange("maint", "true", "NoSelect", False)
    assert parse_taint("example.com/gpu:PreferNoSelect") == TaintChange(
        "example.com/gpu", None, "PreferNoSelect", False
    )
    assert parse_taint("maint:NoSelect-") == TaintChange("maint", None, "NoSelect", True)
    assert parse_taint("maint", remove=True) == TaintChange("maint", None, None, True)
    for bad in ("maint", "maint=x:NoSchedule", ":NoSelect"):
        with pytest.raises(ValueError):
            parse_taint(bad)


def test_adding_replaces_the_same_key_and_effect_and_keeps_its_time_when_unchanged() -> None:
    old = [{"key": "maint", "value": "true", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}]
    same = apply_change(old, parse_taint("maint=true:NoSelect"), NOW)
    assert same == old
    changed = apply_change(old, parse_taint("maint=soon:NoSelect"), NOW)
    assert changed == [
        {"key": "maint", "value": "soon", "effect": "NoSelect", "timeAdded": "2026-03-01T12:00:00Z"}
    ]
    other_effect = apply_change(old, parse_taint("maint=true:PreferNoSelect"), NOW)
    assert [t["effect"] for t in other_effect] == ["NoSelect", "PreferNoSelect"]
    assert apply_change(other_effect, parse_taint("maint-"), NOW) == []


taints = st.lists(
    st.fixed_dictionaries(
        {"key": st.sampled_from(["a", "b", "c"]), "effect": st.sampled_from(["NoSelect", "PreferNoSelect"])}
    ),
    unique_by=lambda t: (t["key"], t["effect"]),
)
changes = st.builds(
    TaintChange,
    key=st.sampled_from(["a", "b", "c"]),
    value=st.none(),
    effect=st.sampled_from(["NoSelect", "PreferNoSelect"]),
    remove=st.booleans(),
)


@given(taints, changes)
def test_a_change_leaves_one_taint_per_key_and_effect_and_does_what_it_says(
    current: list[dict[str, Any]], change: TaintChange
) -> None:
    after = apply_change(current, change, NOW)
    identities = [(t["key"], t["effect"]) for t in after]
    assert len(identities) == len(set(identities))
    assert ((change.key, change.effect) in identities) is not change.remove
    assert {i for i in identities if i != (change.key, change.effect)} == {
        (t["key"], t["effect"]) for t in current if (t["key"], t["effect"]) != (change.key, change.effect)
    }
    TaintSet.model_validate({"taints": after})  # what the scheduler reads


async def _taint_records(broker: str, topics: Topics) -> list[tuple[str | None, Any]]:
    async with BroadcastReader(broker, [topics.name("taints")]) as reader:
        records = await reader.read_to_end()
    return [(r.key, orjson.loads(r.value) if r.value is not None else None) for r in records]


def _invoke(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(app, list(args), input=stdin)


@pytest.mark.integration
async def test_a_taint_from_the_cli_changes_the_schedulers_decision(broker: str, topics: Topics) -> None:
    settings = settings_for(broker, topics.prefix)
    common = ("-b", broker, "--prefix", topics.prefix)
    async with Bus(broker, topics) as bus, running(settings):
        await bus.publish(*base_fleet(), cluster("c1"), cluster("c2"), placement("ns1", "p"))
        await bus.wait_for(lambda: bus.latest().get("ns1/p", {}).get("decisions") == ["c1", "c2"])

        result = await asyncio.to_thread(_invoke, "taint", "c1", "maint=true:NoSelect", *common)
        assert result.exit_code == 0, result.output
        assert "c1: taints maint=true:NoSelect" in result.stdout
        await bus.wait_for(lambda: bus.latest()["ns1/p"]["decisions"] == ["c2"], what="c1 tainted away")
        diff = bus.latest()["ns1/p"]
        assert diff["removed"] == ["c1"] and diff["trigger"] == {"kind": "taint", "key": "c1"}
        (key, value), *_ = await _taint_records(broker, topics)
        assert key == "c1"
        assert [{k: v for k, v in t.items() if k != "timeAdded"} for t in value["taints"]] == [
            {"key": "maint", "value": "true", "effect": "NoSelect"}
        ]
        TaintSet.model_validate(value)

        result = await asyncio.to_thread(_invoke, "taint", "c1", "maint:NoSelect-", *common)
        assert result.exit_code == 0, result.output
        await bus.wait_for(lambda: bus.latest()["ns1/p"]["decisions"] == ["c1", "c2"], what="taint removed")


@pytest.mark.integration
async def test_a_cluster_taints_document_publishes_the_set_the_scheduler_reads(
    broker: str, topics: Topics, tmp_path: Path
) -> None:
    document = """\
apiVersion: fleetplace.dev/v1alpha1
kind: ClusterTaints
metadata: {name: c2}
spec:
  taints:
    - {key: example.com/unhealthy, effect: NoSelect, timeAdded: "2026-03-01T12:00:00Z"}
"""
    (tmp_path / "taints.yaml").write_text(document)
    settings = settings_for(broker, topics.prefix)
    async with Bus(broker, topics) as bus, running(settings):
        await bus.publish(*base_fleet(), cluster("c1"), cluster("c2"), placement("ns1", "p"))
        await bus.wait_for(lambda: bus.latest().get("ns1/p", {}).get("decisions") == ["c1", "c2"])
        args = ("publish", str(tmp_path / "taints.yaml"), "-b", broker, "--prefix", topics.prefix)
        result = await asyncio.to_thread(_invoke, *args)
        assert result.exit_code == 0, result.output
        assert "taints 1" in result.stdout
        await bus.wait_for(lambda: bus.latest()["ns1/p"]["decisions"] == ["c1"], what="c2 tainted away")
    assert await _taint_records(broker, topics) == [
        (
            "c2",
            {
                "taints": [
                    {
                        "key": "example.com/unhealthy",
                        "effect": "NoSelect",
                        "timeAdded": "2026-03-01T12:00:00Z",
                    }
                ]
            },
        )
    ]


def test_a_bad_taint_document_is_refused_naming_the_field() -> None:
    document = """\
apiVersion: fleetplace.dev/v1alpha1
kind: ClusterTaints
metadata: {name: c2}
spec:
  taints: [{key: k, effect: NoSchedule, colour: red}]
"""
    result = _invoke("publish", "-", "--dry-run", stdin=document)
    assert result.exit_code == 2
    assert "spec.taints[0].colour: unknown field" in result.stderr
    assert "spec.taints[0].effect: Unsupported value: 'NoSchedule'" in result.stderr
