"""The `fleetplace simulate` contract: inputs it accepts, the JSON lines it prints, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from fleetplace.services.cli import app

from .piped import assert_lines_fit_content
from .placement.builders import (
    addon,
    addon_score,
    ago,
    bound_set,
    cluster,
    own_decision,
    placement,
    policy,
    taint,
    toleration,
)

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "tests" / "placement" / "data" / "ocm-seed-article.json"
NOW = "2026-03-01T12:00:00Z"
KEYS = {
    "name",
    "placement",
    "decisions",
    "decisionGroups",
    "scores",
    "requeueAfterSeconds",
    "numberOfSelectedClusters",
    "conditions",
    "explain",
}


def objects(**spec: Any) -> list[dict[str, Any]]:
    return [*bound_set(cluster("c1"), cluster("c2"), cluster("c3")), placement(spec)]


def scenario(name: str = "s1", **spec: Any) -> dict[str, Any]:
    return {"name": name, "now": NOW, "placement": "ns1/placement1", "objects": objects(**spec)}


def simulate(*args: str, stdin: str | None = None) -> tuple[int, list[dict[str, Any]], str]:
    result = CliRunner().invoke(app, ["simulate", *args], input=stdin)
    lines = [orjson.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return result.exit_code, lines, result.stderr


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def test_scenario_file(tmp_path: Path) -> None:
    code, lines, _ = simulate(write(tmp_path / "s.json", scenario(numberOfClusters=2)))
    assert code == 0
    (line,) = lines
    assert set(line) >= KEYS
    assert line["name"] == "s1"
    assert line["placement"] == "ns1/placement1"
    assert line["decisions"] == ["c1", "c2"]
    assert line["decisionGroups"] == [{"groupName": "", "groupIndex": 0, "clusters": ["c1", "c2"]}]
    assert line["scores"] == {"c1": 100, "c2": 100, "c3": 100}
    assert line["requeueAfterSeconds"] is None
    assert line["numberOfSelectedClusters"] == 2
    assert line["conditions"] == [
        {
            "type": "PlacementMisconfigured",
            "status": "False",
            "reason": "Succeedconfigured",
            "message": "Placement configurations check pass",
        },
        {
            "type": "PlacementSatisfied",
            "status": "True",
            "reason": "AllDecisionsScheduled",
            "message": "All cluster decisions scheduled",
        },
    ]
    assert line["explain"]["c3"]["selected"] is False
    assert line["explain"]["c3"]["total"] == 100


def test_array_of_scenarios_gives_one_line_each_in_order(tmp_path: Path) -> None:
    code, lines, _ = simulate(write(tmp_path / "s.json", [scenario("a", numberOfClusters=1), scenario("b")]))
    assert code == 0
    assert [(line["name"], line["decisions"]) for line in lines] == [("a", ["c1"]), ("b", ["c1", "c2", "c3"])]


def test_the_seed_file_matches_its_expectations() -> None:
    code, lines, _ = simulate(str(SEED))
    assert code == 0
    seeds = json.loads(SEED.read_text())
    assert len(lines) == len(seeds)
    for line, seed in zip(lines, seeds, strict=True):
        expect = seed["expect"]
        assert line["name"] == seed["name"]
        for key in (
            "decisions",
            "decisionGroups",
            "scores",
            "requeueAfterSeconds",
            "numberOfSelectedClusters",
        ):
            assert line[key] == expect[key], (seed["name"], key)
        assert [{k: c[k] for k in ("type", "status", "reason")} for c in line["conditions"]] == expect[
            "conditions"
        ]


def test_multi_document_yaml_with_placement_and_now(tmp_path: Path) -> None:
    docs = [
        *bound_set(
            cluster("c1", taints=[taint("k", added="2026-03-01T11:59:50Z")]),
            cluster("c2"),
        ),
        own_decision(["c1"]),
        placement({"tolerations": [toleration("k", "Exists", seconds=30)]}),
        placement({"numberOfClusters": 1}, name="other"),
    ]
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code, lines, _ = simulate(str(path), "--placement", "ns1/placement1", "--now", NOW)
    assert code == 0
    (line,) = lines
    assert line["placement"] == "ns1/placement1"
    assert line["decisions"] == ["c1", "c2"]
    assert line["requeueAfterSeconds"] == 20  # timeAdded 11:59:50 + 30 s, from 12:00:00; an integer
    # without --placement every placement is evaluated, in key order
    code, lines, _ = simulate(str(path), "--now", NOW)
    assert [line["placement"] for line in lines] == ["ns1/other", "ns1/placement1"]


def test_now_decides_expiry(tmp_path: Path) -> None:
    docs = [
        *bound_set(cluster("c1"), cluster("c2")),
        addon_score("c1", "demo", {"s": 50}, valid_until="2026-03-01T12:00:00Z"),
        placement({"numberOfClusters": 1, "prioritizerPolicy": policy("Exact", addon("demo", "s", 1))}),
    ]
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    _, at_deadline, _ = simulate(str(path), "--now", "2026-03-01T12:00:00Z")
    _, after, _ = simulate(str(path), "--now", "2026-03-01T12:00:01Z")
    # c1 wins either way (by its score, then by name order): the scores show the expiry, which
    # counts only strictly after validUntil
    assert at_deadline[0]["decisions"] == ["c1"]
    assert at_deadline[0]["scores"] == {"c1": 50, "c2": 0}
    assert after[0]["decisions"] == ["c1"]  # both 0 after expiry: name order
    assert after[0]["scores"] == {"c1": 0, "c2": 0}


def test_a_kubernetes_list_document(tmp_path: Path) -> None:
    path = write(tmp_path / "list.json", {"apiVersion": "v1", "kind": "List", "items": objects()})
    code, lines, _ = simulate(path, "--now", NOW)
    assert code == 0
    assert lines[0]["decisions"] == ["c1", "c2", "c3"]


def test_a_directory_runs_its_files_in_name_order(tmp_path: Path) -> None:
    write(tmp_path / "b.json", scenario("second"))
    write(tmp_path / "a.json", scenario("first", numberOfClusters=1))
    (tmp_path / "notes.txt").write_text("not a scenario")
    code, lines, _ = simulate(str(tmp_path))
    assert code == 0
    assert [line["name"] for line in lines] == ["first", "second"]


def test_stdin() -> None:
    code, lines, _ = simulate("-", stdin=json.dumps(scenario(numberOfClusters=1)))
    assert code == 0
    assert lines[0]["decisions"] == ["c1"]


def test_table_output_renders() -> None:
    result = CliRunner().invoke(app, ["simulate", "-", "--output", "table"], input=json.dumps(scenario()))
    assert result.exit_code == 0
    assert "ns1/placement1" in result.stdout
    assert "AllDecisionsScheduled" in result.stdout
    for name in ("c1", "c2", "c3"):
        assert name in result.stdout


def simulate_process(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`fleetplace simulate ARGS` as its own process, its stdout a pipe."""
    return subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", "simulate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


def test_piped_tables_are_as_wide_as_their_content() -> None:
    """The example fleet's every placement, through a real pipe: rules as wide as their titles,
    tables as wide as their cells (the rule was once drawn across 100,000 columns)."""
    done = simulate_process("docs/examples/fleet.yaml", "-o", "table")
    assert done.returncode == 0, done.stderr
    assert "apps/web" in done.stdout and "┏" in done.stdout
    assert_lines_fit_content(done.stdout)


def test_bad_placement_field_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    bad = scenario()
    bad["objects"][-1]["spec"]["numberOfClusters"] = "abc"
    path = write(tmp_path / "bad.json", bad)
    code, lines, err = simulate(path)
    assert code == 2
    assert "bad.json" in err
    assert "numberOfClusters" in err
    assert lines == []  # stdout carries results only


def test_one_bad_scenario_does_not_stop_the_others(tmp_path: Path) -> None:
    bad = scenario("bad")
    bad["objects"][-1]["spec"]["numberOfClusters"] = "abc"
    code, lines, _ = simulate(write(tmp_path / "s.json", [scenario("good"), bad]))
    assert code == 2
    assert [line["name"] for line in lines] == ["good"]
    assert "decisions" in lines[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["missing.json"], "missing.json"),
        (["-", "--now", "yesterday"], "--now"),
        (["-", "--output", "xml"], "--output"),
        (["-", "--placement", "no-slash"], "--placement"),
        (["-", "--placement", "ns1/absent"], "ns1/absent"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args: list[str], needle: str) -> None:
    code, _, err = simulate(*args, stdin=json.dumps(scenario()))
    assert code == 2
    assert needle in err


def test_unknown_kind_exits_2(tmp_path: Path) -> None:
    bad = scenario()
    bad["objects"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    code, _, err = simulate(write(tmp_path / "s.json", bad))
    assert code == 2
    assert "ConfigMap" in err


def test_the_installed_entry_point_reads_stdin() -> None:
    text = json.dumps(scenario(tolerations=[toleration("k", "Exists", seconds=30)]))
    done = simulate_process("-", stdin=text)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decisions"] == ["c1", "c2", "c3"]


def test_requeue_after_seconds_counts_from_now(tmp_path: Path) -> None:
    sc = scenario(tolerations=[toleration("k", "Exists", seconds=100)])
    sc["objects"] = [
        *bound_set(cluster("c1", taints=[taint("k", added=ago(40))])),
        own_decision(["c1"]),
        sc["objects"][-1],
    ]
    code, lines, _ = simulate(write(tmp_path / "s.json", sc))
    assert code == 0
    assert lines[0]["requeueAfterSeconds"] == 60


@pytest.mark.parametrize("output", ["table", "sig-mc", "json", "yaml"])
def test_a_broken_file_prints_nothing_on_stdout_and_its_error_once(tmp_path: Path, output: str) -> None:
    """Piped into `kubectl apply` without pipefail, any stdout would hide the failure."""
    bad = scenario()
    bad["objects"][-1]["spec"]["numberOfClusters"] = "abc"
    broken = write(tmp_path / "broken.json", bad)
    done = simulate_process(broken, "-o", output)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("numberOfClusters") == 1, done.stderr


def test_sig_mc_writes_no_list_when_one_of_the_files_fails(tmp_path: Path) -> None:
    bad = scenario("bad")
    bad["objects"][-1]["spec"]["numberOfClusters"] = "abc"
    done = simulate_process(write(tmp_path / "s.json", [scenario("good"), bad]), "-o", "sig-mc")
    assert (done.returncode, done.stdout) == (2, "")
    assert "numberOfClusters" in done.stderr
