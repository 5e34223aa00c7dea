"""The demo's summary: skipped acts shown and counted apart from passed ones, and a table that
wraps in an 80-column terminal instead of cutting words."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from fleetplace.services.commands.demo import summary_table, verdict
from fleetplace.services.commands.demo_acts import ActResult, ExpectedDiff
from fleetplace.services.commands.demo_hub import DemoHub, hub_acts
from fleetplace.services.commands.demo_rollout import ExpectedRolloutDiff, describe_rollout_diff
from fleetplace.shared.settings import KafkaSettings, Settings

BREACHED: dict[str, Any] = {
    "schemaVersion": 1,
    "rollout": "apps/api",
    "seq": 6,
    "revision": "v2",
    "evaluatedAt": "2026-01-01T00:00:01Z",
    "trigger": {"kind": "status", "key": "apps/api/edge-1"},
    "clusters": ["edge-1"],
    "added": [],
    "removed": [],
    "placements": [],
    "maxFailureBreach": True,
    "nextRecheckAt": None,
    "complete": False,
    "answerDigest": "0",
    "inputs": {},
}
MOVED = {"placement": "apps/monitoring", "added": ["east-1", "east-2", "edge-1", "edge-2", "west-1"]}
WHY = "no /usr/bin/prometheus (apt-get install prometheus)"


def played(title: str, *seen: dict[str, Any]) -> ActResult:
    expected = (ExpectedRolloutDiff("apps/api", "v2", breach=True), ExpectedDiff("apps/monitoring"))
    return ActResult(title, expected, seen, 0.25, True)


def skipped(title: str) -> ActResult:
    return ActResult(title, (), (), 0.0, True, skipped=WHY)


def rendered(results: list[ActResult], total: int, width: int = 80) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(summary_table(results, total))
    return out.getvalue()


def test_skipped_acts_are_counted_apart_and_never_as_passed() -> None:
    results = [
        played("canary failed", BREACHED),
        skipped("scores from Prometheus"),
        skipped("metric changed"),
    ]
    assert verdict(results, 3) == (True, "1 acts passed, 2 skipped")
    assert verdict(results[:1], 1) == (True, "all 1 acts passed")
    failed = ActResult("cluster added", (), (), 1.0, False)
    assert verdict([failed, *results[1:]], 3) == (False, "0 of 3 acts passed, 2 skipped")
    assert verdict(results[:2], 3) == (False, "1 of 3 acts passed, 1 skipped")  # one not played


def test_a_skipped_act_is_marked_skipped_in_the_table_not_passed() -> None:
    table = rendered([played("canary failed", BREACHED), skipped("metric changed")], 2, width=200)
    row = next(line for line in table.splitlines() if "metric changed" in line)
    assert "skipped" in row and "✔" not in row
    assert "✔" in next(line for line in table.splitlines() if "canary failed" in line)


def test_in_80_columns_the_table_wraps_and_cuts_no_word() -> None:
    table = rendered([played("canary failed", BREACHED, MOVED), skipped("scores from Prometheus")], 3)
    assert max(len(line) for line in table.splitlines()) <= 80
    assert "…" not in table, table
    words = {w.strip(",") for line in table.splitlines() for w in line.replace("│", " ").split()}
    for word in describe_rollout_diff(BREACHED).replace(",", " ").split():
        assert word in words, f"{word!r} is not whole in:\n{table}"


def test_without_the_control_plane_the_hub_acts_are_skipped_naming_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEETPLACE_HUB_BINARIES", str(tmp_path))  # a folder without the binaries
    demo_hub = DemoHub(Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:9")))
    assert demo_hub.skipped is not None
    assert str(tmp_path / "kube-apiserver") in demo_hub.skipped and "make hub-binaries" in demo_hub.skipped
    acts = hub_acts(demo_hub, lambda: "2026-12-01T00:00:00Z")
    assert [(a.title, a.skipped) for a in acts] == [
        ("decided on the hub", demo_hub.skipped),
        ("tainted on the hub", demo_hub.skipped),
    ]
    demo_hub.boot()  # nothing to start: no control plane is looked for
