"""`rollout simulate`: JSON lines in input order, error lines, expectations, exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import typer
from typer.testing import CliRunner

from fleetplace.services.commands.rollout import register
from tests.piped import assert_lines_fit_content

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "rollout-ocm-unit-sample.json"

GOOD: dict[str, Any] = {
    "name": "good",
    "now": "2022-01-01T00:00:00Z",
    "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 1}},
    "decisionGroups": [
        {"groupName": "", "groupIndex": 0, "clusters": ["a-very-long-cluster-name-" + "x" * 80, "b"]}
    ],
    "clusterStatuses": [],
}
BAD = GOOD | {"name": "bad", "rolloutStrategy": {"type": "Progressive", "progressive": {"maxFailures": "3"}}}


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """Test root."""

    register(app)
    return app


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(data))
    return path


def lines(output: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in output.splitlines() if line.strip()]


def test_json_output_prints_one_line_per_scenario_in_input_order(app: typer.Typer, tmp_path: Path) -> None:
    one = write(tmp_path, "one.json", GOOD)
    many = write(tmp_path, "many.json", [GOOD | {"name": "second"}, GOOD | {"name": "third"}])
    result = CliRunner().invoke(app, ["rollout", "simulate", str(one), str(many), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = lines(result.stdout)
    assert [line["name"] for line in out] == ["good", "second", "third"]
    assert list(out[0]) == [
        "name",
        "clustersToRollout",
        "clustersTimeOut",
        "clustersRemoved",
        "maxFailureBreach",
        "recheckAfterSeconds",
        "error",
    ]


def test_samples_pass_with_exit_zero(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["rollout", "simulate", str(SAMPLES), "--output", "json"])
    assert result.exit_code == 0, result.output
    assert len(lines(result.stdout)) == 10


def test_bad_scenario_gives_an_error_line_and_the_others_go_on(app: typer.Typer, tmp_path: Path) -> None:
    path = write(tmp_path, "mixed.json", [BAD, GOOD])
    result = CliRunner().invoke(app, ["rollout", "simulate", str(path), "-o", "json"])
    assert result.exit_code == 0
    bad, good = lines(result.stdout)
    assert bad["error"].startswith("failed to parse the provided maxFailures:")
    assert bad["clustersToRollout"] == [] and bad["recheckAfterSeconds"] is None
    assert good["error"] is None and len(good["clustersToRollout"]) == 1


def test_mismatched_expectation_is_reported_and_exits_one_after_printing_everything(
    app: typer.Typer, tmp_path: Path
) -> None:
    wrong = GOOD | {"name": "wrong", "expect": {"maxFailureBreach": True, "error": None}}
    path = write(tmp_path, "expect.json", [wrong, GOOD])
    result = CliRunner().invoke(app, ["rollout", "simulate", str(path), "-o", "json"])
    assert result.exit_code == 1
    assert len(lines(result.stdout)) == 2
    assert "wrong: maxFailureBreach" in result.stderr


def test_unreadable_file_names_the_file_and_exits_two(app: typer.Typer, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    result = CliRunner().invoke(app, ["rollout", "simulate", str(missing)])
    assert result.exit_code == 2
    assert str(missing) in result.stderr


@pytest.mark.parametrize("content", [b"{not json", b"42"])
def test_unparseable_file_names_the_file_and_exits_two(
    app: typer.Typer, tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    result = CliRunner().invoke(app, ["rollout", "simulate", str(path)])
    assert result.exit_code == 2
    assert "broken.json" in result.stderr


def test_table_output_does_not_wrap_cluster_names_when_piped(app: typer.Typer, tmp_path: Path) -> None:
    path = write(tmp_path, "one.json", [GOOD, BAD])
    result = CliRunner().invoke(app, ["rollout", "simulate", str(path)])
    assert result.exit_code == 0
    assert GOOD["decisionGroups"][0]["clusters"][0] in result.stdout
    assert "good" in result.stdout and "error:" in result.stdout
    assert_lines_fit_content(result.stdout)


def test_the_table_names_a_group_as_rollout_status_does(app: typer.Typer, tmp_path: Path) -> None:
    canary = GOOD | {
        "decisionGroups": [{"groupName": "canary", "groupIndex": 0, "clusters": ["b"]}],
    }
    result = CliRunner().invoke(app, ["rollout", "simulate", str(write(tmp_path, "c.json", canary))])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if " b " in line)
    assert "canary #0" in row and "(0)" not in row
