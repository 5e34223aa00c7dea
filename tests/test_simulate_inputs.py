"""What `fleetplace simulate` reads: a fleet over several files, the worker's admission by
default, strict fields, scenario `expect`, and the output formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fleetplace.services.cli import app

from .placement.builders import bound_set, builtin, cluster, memory_cluster, placement, policy

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "tests" / "placement" / "data" / "ocm-seed-article.json"
NOW = "2026-03-01T12:00:00Z"


def simulate(*args: str, stdin: str | None = None) -> tuple[int, list[dict[str, Any]], str]:
    result = CliRunner().invoke(app, ["simulate", "--now", NOW, *args], input=stdin)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return result.exit_code, lines, result.stderr


def dump(path: Path, *docs: Any) -> str:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def memory_fleet() -> list[dict[str, Any]]:
    return bound_set(
        memory_cluster("c1", "60Mi"), memory_cluster("c2", "80Mi"), memory_cluster("c3", "100Mi")
    )


# ---- one fleet over several files ---------------------------------------------------------------


def two_files(tmp_path: Path) -> tuple[str, str]:
    clusters = dump(tmp_path / "clusters.yaml", *bound_set(cluster("c1"), cluster("c2"), cluster("c3")))
    placements = dump(tmp_path / "placement.yaml", placement({"numberOfClusters": 2}))
    return clusters, placements


def test_object_files_given_together_are_one_fleet(tmp_path: Path) -> None:
    clusters, placements = two_files(tmp_path)
    code, lines, err = simulate(clusters, placements)
    assert code == 0, err
    (line,) = lines
    assert line["placement"] == "ns1/placement1"
    assert line["decisions"] == ["c1", "c2"]


def test_a_directory_of_object_files_is_one_fleet(tmp_path: Path) -> None:
    two_files(tmp_path)
    code, lines, err = simulate(str(tmp_path))
    assert code == 0, err
    assert [line["decisions"] for line in lines] == [["c1", "c2"]]


def test_repeated_f_and_stdin_join_the_same_fleet(tmp_path: Path) -> None:
    clusters, placements = two_files(tmp_path)
    code, lines, _ = simulate("-f", clusters, "-f", placements)
    assert code == 0
    assert lines[0]["decisions"] == ["c1", "c2"]
    code, lines, _ = simulate("-f", "-", placements, stdin=Path(clusters).read_text())
    assert code == 0
    assert lines[0]["decisions"] == ["c1", "c2"]


def test_scenario_files_stay_one_evaluation_each_beside_a_pooled_fleet(tmp_path: Path) -> None:
    clusters, placements = two_files(tmp_path)
    scenario = {"name": "s", "now": NOW, "objects": [*bound_set(cluster("x1")), placement()]}
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    code, lines, _ = simulate(clusters, str(path), placements)
    assert code == 0
    assert [(line["name"], line["decisions"]) for line in lines] == [(None, ["c1", "c2"]), ("s", ["x1"])]


# ---- the worker's admission by default ----------------------------------------------------------


def test_a_score_coordinate_without_type_is_defaulted_as_the_worker_does(tmp_path: Path) -> None:
    documented = {
        "numberOfClusters": 2,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}, "weight": 1}],
        },
    }
    path = dump(tmp_path / "fleet.yaml", *memory_fleet(), placement(documented))
    code, lines, err = simulate(path)
    assert code == 0, err
    assert lines[0]["decisions"] == ["c2", "c3"]
    assert lines[0]["conditions"][0]["reason"] == "Succeedconfigured"
    # as written (no API server), the coordinate has no type: OCM's controller calls it misconfigured
    code, lines, _ = simulate(path, "--as-written")
    assert code == 0
    assert lines[0]["decisions"] == []
    assert lines[0]["conditions"][0]["status"] == "True"


def test_weight_eleven_is_refused_by_default_and_scored_as_written(tmp_path: Path) -> None:
    spec = {"prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", 11))}
    path = dump(tmp_path / "fleet.yaml", *memory_fleet(), placement(spec))
    code, lines, err = simulate(path)
    assert code == 2
    assert "fleet.yaml#5" in err and "weight" in err
    assert lines == []
    code, lines, _ = simulate(path, "--as-written")
    assert code == 0
    assert lines[0]["scores"]["c3"] == 1100


def test_a_scenario_is_as_written_unless_it_asks_for_admission(tmp_path: Path) -> None:
    spec = {"prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory"))}  # no weight
    scenario = {
        "name": "w",
        "now": NOW,
        "placement": "ns1/placement1",
        "objects": [*memory_fleet(), placement(spec)],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    _, lines, _ = simulate(str(path))
    assert lines[0]["scores"]["c3"] == 0  # weight 0 as written
    path.write_text(json.dumps({**scenario, "admission": True}))
    _, lines, _ = simulate(str(path))
    assert lines[0]["scores"]["c3"] == 100  # the API server's default weight 1
    path.write_text(json.dumps(scenario))
    _, lines, _ = simulate(str(path), "--admission")
    assert lines[0]["scores"]["c3"] == 100


def test_the_conformance_samples_give_their_expect_through_the_cli() -> None:
    code, lines, err = simulate(str(SEED))
    assert code == 0, err
    seeds = json.loads(SEED.read_text())
    assert [line["name"] for line in lines] == [seed["name"] for seed in seeds]
    assert not [line for line in lines if "expectMismatch" in line]


def test_a_scenario_whose_expect_does_not_match_exits_1(tmp_path: Path) -> None:
    seeds = json.loads(SEED.read_text())
    wrong = {**seeds[0], "expect": {**seeds[0]["expect"], "decisions": ["nowhere"]}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps([seeds[1], wrong]))
    code, lines, err = simulate(str(path))
    assert code == 1
    assert "expectMismatch" not in lines[0]
    assert lines[1]["expectMismatch"] == [
        f'decisions: expected ["nowhere"], got {json.dumps(lines[1]["decisions"], separators=(",", ":"))}'
    ]
    assert seeds[0]["name"] in err


# ---- unknown fields, apiVersions, duplicate keys -------------------------------------------------

TYPO = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {namespace: ns1, name: placement1}
spec:
  numberOfCluster: 2
  predicate: []
"""


def test_unknown_fields_are_errors_by_default_naming_every_field(tmp_path: Path) -> None:
    clusters = dump(tmp_path / "clusters.yaml", *bound_set(cluster("c1"), cluster("c2"), cluster("c3")))
    (tmp_path / "typo.yaml").write_text(TYPO)
    code, _, err = simulate(clusters, str(tmp_path / "typo.yaml"))
    assert code == 2
    assert "typo.yaml#0" in err
    assert "spec.numberOfCluster: unknown field" in err
    assert "spec.predicate: unknown field" in err


@pytest.mark.parametrize(("mode", "warned"), [("warn", True), ("ignore", False)])
def test_validate_warn_or_ignore_relaxes_unknown_fields(tmp_path: Path, mode: str, warned: bool) -> None:
    clusters = dump(tmp_path / "clusters.yaml", *bound_set(cluster("c1"), cluster("c2"), cluster("c3")))
    (tmp_path / "typo.yaml").write_text(TYPO)
    code, lines, err = simulate(clusters, str(tmp_path / "typo.yaml"), f"--validate={mode}")
    assert code == 0
    assert lines[0]["decisions"] == ["c1", "c2", "c3"]  # the typo is ignored, as the worker would
    assert ("spec.numberOfCluster" in err) is warned


def test_an_unknown_api_version_is_an_error(tmp_path: Path) -> None:
    doc = placement()
    doc["apiVersion"] = "cluster.open-cluster-management.io/v9"
    code, _, err = simulate(dump(tmp_path / "p.yaml", *bound_set(cluster("c1")), doc))
    assert code == 2
    assert "apiVersion" in err and "v9" in err


def test_a_duplicated_yaml_key_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(
        TYPO.replace(
            "  numberOfCluster: 2\n  predicate: []\n", "  numberOfClusters: 1\n  numberOfClusters: 2\n"
        )
    )
    code, _, err = simulate(str(path))
    assert code == 2
    assert "line 6" in err and "duplicate key 'numberOfClusters'" in err


# ---- output --------------------------------------------------------------------------------------


def test_yaml_output_is_one_document_per_result(tmp_path: Path) -> None:
    clusters, placements = two_files(tmp_path)
    result = CliRunner().invoke(app, ["simulate", "--now", NOW, clusters, placements, "-o", "yaml"])
    assert result.exit_code == 0
    (doc,) = list(yaml.safe_load_all(result.stdout))
    assert doc["decisions"] == ["c1", "c2"]
