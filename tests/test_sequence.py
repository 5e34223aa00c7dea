"""`fleetplace simulate --sequence`: the worker's stepwise semantics offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fleetplace.services.commands.simulate_inputs import InputError
from fleetplace.services.commands.simulate_sequence import run_sequence

G = "cluster.open-cluster-management.io"
DATA = Path(__file__).parent / "data"


def cset() -> list[dict[str, Any]]:
    return [
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "s"}},
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": "ns", "name": "s"},
            "spec": {"clusterSet": "s"},
        },
    ]


def cluster(
    name: str, memory: str | None = None, taints: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {f"{G}/clusterset": "s"}},
    }
    if memory:
        obj["status"] = {"allocatable": {"memory": memory}, "capacity": {"memory": "200M"}}
    if taints:
        obj["spec"] = {"taints": taints}
    return obj


def placement(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": "ns", "name": name},
        "spec": spec,
    }


def run(seq: dict[str, Any]) -> list[tuple[int, str, list[str]]]:
    return [(line["step"], line["placement"], line["decisions"]) for line in run_sequence(seq, "seq")]


def test_steady_keeps_the_selection_when_a_tying_cluster_arrives() -> None:
    # memory 60/80/100 then a 4th with 100 MB; Steady keeps {cluster2, cluster3}
    memory = [{"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableMemory"}, "weight": 1}]
    seq = {
        "name": "steady",
        "order": ["ns/p"],
        "initial": {
            "now": "2026-01-01T00:00:00Z",
            "objects": [
                *cset(),
                cluster("cluster1", "60M"),
                cluster("cluster2", "80M"),
                cluster("cluster3", "100M"),
                placement(
                    "p", numberOfClusters=2, prioritizerPolicy={"mode": "Additive", "configurations": memory}
                ),
            ],
        },
        "steps": [
            {"now": "2026-01-01T00:00:00Z"},
            {"now": "2026-01-01T00:01:00Z", "upsert": [cluster("cluster4", "100M")]},
        ],
    }
    lines = list(run_sequence(seq, "seq"))
    assert [line["decisions"] for line in lines] == [["cluster2", "cluster3"], ["cluster2", "cluster3"]]
    assert lines[1]["scores"] == {"cluster1": 0, "cluster2": 200, "cluster3": 300, "cluster4": 200}


def test_no_select_if_new_spares_decided_clusters_until_the_placement_is_recreated() -> None:
    taint = [{"key": "drain", "effect": "NoSelectIfNew", "timeAdded": "2026-01-01T00:00:00Z"}]
    seq = {
        "name": "nsin",
        "order": ["ns/p"],
        "initial": {
            "now": "2026-01-01T00:00:00Z",
            "objects": [*cset(), cluster("c1"), cluster("c2"), placement("p")],
        },
        "steps": [
            {"now": "2026-01-01T00:00:00Z"},
            {
                "now": "2026-01-01T00:00:10Z",
                "upsert": [cluster("c2", taints=taint), cluster("c3", taints=taint)],
            },
            {
                "now": "2026-01-01T00:00:20Z",
                "delete": [{"kind": "Placement", "namespace": "ns", "name": "p"}],
            },
            {"now": "2026-01-01T00:00:30Z", "upsert": [placement("p")]},
        ],
    }
    assert run(seq) == [
        (0, "ns/p", ["c1", "c2"]),
        (1, "ns/p", ["c1", "c2"]),  # c2 already decided: exempt; c3 is new: excluded
        # step 2: the placement is gone, nothing is evaluated
        (3, "ns/p", ["c1"]),  # re-created: its old decisions disappeared, so c2 is new now
    ]


def test_balance_follows_the_evaluation_order_within_a_step() -> None:
    objs = [
        *cset(),
        cluster("c1"),
        cluster("c2"),
        placement("a", numberOfClusters=1),
        placement("b", numberOfClusters=1),
    ]
    steps = [{"now": "2026-01-01T00:00:00Z"}, {"now": "2026-01-01T00:01:00Z"}]
    ab = {
        "name": "ab",
        "order": ["ns/a", "ns/b"],
        "initial": {"now": "2026-01-01T00:00:00Z", "objects": objs},
        "steps": steps,
    }
    ba = {**ab, "name": "ba", "order": ["ns/b", "ns/a"]}
    # the first placement evaluated takes c1 (all Balance 100, name order); the second sees it
    # (Balance c1 = 2*trunc(100*(0.5-1)) = -100, c2 = 100) and takes c2; Steady keeps both after
    assert run(ab) == [(0, "ns/a", ["c1"]), (0, "ns/b", ["c2"]), (1, "ns/a", ["c1"]), (1, "ns/b", ["c2"])]
    assert run(ba) == [(0, "ns/b", ["c1"]), (0, "ns/a", ["c2"]), (1, "ns/b", ["c1"]), (1, "ns/a", ["c2"])]


def test_pd_objects_are_inputs_only_initially_and_then_decisions_carry_forward() -> None:
    pd = {
        "apiVersion": f"{G}/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {"namespace": "ns", "name": "p-decision-1", "labels": {f"{G}/placement": "p"}},
        "status": {"decisions": [{"clusterName": "c2", "reason": ""}]},
    }
    seq = {
        "name": "pd",
        "order": ["ns/p"],
        "initial": {
            "now": "2026-01-01T00:00:00Z",
            "objects": [*cset(), cluster("c1"), cluster("c2"), pd, placement("p", numberOfClusters=1)],
        },
        # a PD upserted in a later step is ignored: the engine's own decision (c2) stands
        "steps": [
            {"now": "2026-01-01T00:00:00Z"},
            {
                "now": "2026-01-01T00:00:01Z",
                "upsert": [{**pd, "status": {"decisions": [{"clusterName": "c1", "reason": ""}]}}],
            },
        ],
    }
    assert run(seq) == [(0, "ns/p", ["c2"]), (1, "ns/p", ["c2"])]  # Steady keeps the initial PD's c2


def test_cli_runs_a_sequence_file_with_toleration_expiry_as_time_moves() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "fleetplace.services.cli",
            "simulate",
            "--sequence",
            str(DATA / "sequence-tolerations.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    # c1 tolerated 10 s, c2 20 s, c3 already past: {c1,c2,c4}; ≈10 s later {c2,c4}; ≈20 s later {c4}; untolerated taint on c4 ⇒ {}
    assert [(x["step"], x["decisions"]) for x in lines] == [
        (0, ["c1", "c2", "c4"]),
        (1, ["c2", "c4"]),
        (2, ["c4"]),
        (3, []),
    ]
    assert lines[1]["requeueAfterSeconds"] == 10  # from the previous decisions: c2's deadline at T+20


def test_bad_sequence_input_names_the_step_and_field(tmp_path: Path) -> None:
    bad = [
        {
            "name": "x",
            "order": [],
            "initial": {"now": "2026-01-01T00:00:00Z", "objects": []},
            "steps": [{"now": "yesterday"}],
        }
    ]
    f = tmp_path / "seq.json"
    f.write_text(json.dumps(bad))
    out = subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", "simulate", "--sequence", str(f)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "steps[0]: now: not an RFC 3339 time" in out.stderr


def _memory_sequence(**configuration: Any) -> dict[str, Any]:
    config = {"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}, **configuration}
    return {
        "name": "memory",
        "initial": {
            "now": "2026-01-01T00:00:00Z",
            "objects": [
                *cset(),
                cluster("c1", "60M"),
                cluster("c2", "100M"),
                placement("p", numberOfClusters=1, prioritizerPolicy={"configurations": [config]}),
            ],
        },
        "steps": [{"now": "2026-01-01T00:00:00Z"}],
    }


def test_objects_are_admitted_as_the_worker_admits_them_unless_as_written() -> None:
    # admission defaults the coordinate's type to BuiltIn and its weight to 1: memory decides;
    # as written the weight is 0, the memory score counts for nothing, and name order decides
    seq = _memory_sequence()
    assert [line["decisions"] for line in run_sequence(seq, "seq")] == [["c2"]]
    assert [line["decisions"] for line in run_sequence(seq, "seq", admission=False)] == [["c1"]]


def test_a_record_the_worker_would_dead_letter_fails_the_sequence_with_the_reason() -> None:
    seq = _memory_sequence(
        weight=11, scoreCoordinate={"type": "BuiltIn", "builtIn": "ResourceAllocatableMemory"}
    )
    with pytest.raises(InputError, match=r"seq\.initial\.objects\[4\]: .*weight: should be in \[-10, 10\]"):
        run_sequence(seq, "seq")
    (line,) = run_sequence(seq, "seq", admission=False)  # as written, weight 11 is taken as it is
    assert line["explain"]["c2"]["prioritizers"]["ResourceAllocatableMemory"] == {"score": 100, "weight": 11}


def test_a_cluster_taints_record_in_a_step_goes_to_the_taints_topic_as_publish_sends_it() -> None:
    taints = {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "ClusterTaints",
        "metadata": {"name": "c2"},
        "spec": {"taints": [{"key": "drain", "effect": "NoSelect"}]},
    }
    seq = {
        "name": "taints",
        "initial": {
            "now": "2026-01-01T00:00:00Z",
            "objects": [*cset(), cluster("c1"), cluster("c2"), placement("p")],
        },
        "steps": [{"now": "2026-01-01T00:00:00Z"}, {"now": "2026-01-01T00:00:01Z", "upsert": [taints]}],
    }
    assert run(seq) == [(0, "ns/p", ["c1", "c2"]), (1, "ns/p", ["c1"])]


def test_an_object_the_scheduler_does_not_consume_fails_the_sequence() -> None:
    rollout = {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "Rollout",
        "metadata": {"namespace": "ns", "name": "r"},
    }
    seq = {"name": "r", "initial": {"now": "2026-01-01T00:00:00Z", "objects": [rollout]}, "steps": []}
    with pytest.raises(InputError, match=r"seq\.initial\.objects\[0\]: .*not an input of the scheduler"):
        run_sequence(seq, "seq")
