"""The examples the docs point at exist, and the example Rollout is one for the example fleet."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import yaml
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.services.commands.demo_rollout import rollout_document
from fleetplace.services.commands.simulate_inputs import read_objects
from fleetplace.services.commands.simulate_scenarios import Scenario, run_scenario
from fleetplace.shared.api.admission import read_object
from fleetplace.shared.api.objects import Validation, documents_of
from fleetplace.shared.api.rollouts import Rollout
from fleetplace.shared.rollout import evaluate_scenario

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 1, 1, tzinfo=UTC)
EXAMPLES = ROOT / "docs" / "examples"
FLEET = EXAMPLES / "fleet.yaml"
ROLLOUT = EXAMPLES / "rollout.yaml"
# a path under docs/examples/, up to its last name character (not a sentence's full stop)
EXAMPLE_PATH = re.compile(r"docs/examples/(?:[\w.-]*/)*[\w.-]*[\w/]")


def _documents() -> list[Path]:
    """README.md, every page under docs/, and the examples' own text (which name each other)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    examples = [p for p in sorted(EXAMPLES.rglob("*")) if p.suffix in (".py", ".yaml", ".json", ".jsonl")]
    return pages + examples


def test_every_docs_examples_path_named_in_the_docs_exists() -> None:
    named = {
        (str(doc.relative_to(ROOT)), path)
        for doc in _documents()
        for path in EXAMPLE_PATH.findall(doc.read_text(encoding="utf-8"))
    }
    assert ("README.md", "docs/examples/fleet.yaml") in named  # the pattern finds what is there
    missing = sorted(f"{doc} names {path}" for doc, path in named if not (ROOT / path).exists())
    assert missing == []


def test_the_example_rollout_passes_publish_admission_beside_the_example_fleet() -> None:
    result = CliRunner().invoke(app, ["publish", "--dry-run", "--prefix", "p.", str(FLEET), str(ROLLOUT)])
    assert result.exit_code == 0, result.output
    assert "p.rollouts\tapps/api\tupsert" in result.stdout.splitlines()


def test_the_example_rollout_is_the_one_the_demo_publishes() -> None:
    assert yaml.safe_load(ROLLOUT.read_text()) == rollout_document("v1")


def test_the_example_rollout_starts_with_the_canary_group_of_its_placement() -> None:
    """Evaluated over the example fleet's decision of the placement it names, the Rollout
    rolls out to the mandatory group's clusters first, and to no other."""
    (doc,) = (d for _, d in documents_of(ROLLOUT.read_text(), str(ROLLOUT), Validation.STRICT))
    rollout, _ = read_object(doc, str(ROLLOUT), admission=True, validation=Validation.STRICT)
    assert isinstance(rollout, Rollout)
    (ref,) = doc["spec"]["placementRefs"]
    strategy = ref["rolloutStrategy"]
    fleet, _ = read_objects(
        list(documents_of(FLEET.read_text(), str(FLEET), Validation.STRICT)), admission=True
    )
    placement = f"{rollout.metadata.namespace}/{ref['name']}"
    (decision,) = run_scenario(Scenario(str(FLEET), None, NOW, placement, fleet), None, NOW)
    groups = decision["decisionGroups"]
    mandatory = {g["groupName"] for g in strategy["progressivePerGroup"]["mandatoryDecisionGroups"]}
    canary = [c for g in groups if g["groupName"] in mandatory for c in g["clusters"]]
    assert canary and len(canary) < len(decision["decisions"])  # a part of the placement's clusters
    line = evaluate_scenario(
        {"now": NOW.isoformat(), "rolloutStrategy": strategy, "decisionGroups": groups, "clusterStatuses": []}
    )
    assert line["error"] is None
    assert [s["clusterName"] for s in line["clustersToRollout"]] == canary
