"""The demo's score-source acts without Prometheus: both say they were skipped, and why."""

from __future__ import annotations

import pytest

from fleetplace.services.commands import demo_scores
from fleetplace.services.commands.demo_scores import DemoScores, score_acts
from fleetplace.shared.settings import KafkaSettings, Settings


def test_without_prometheus_the_acts_are_skipped_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_scores, "prometheus_missing", lambda: "no /usr/bin/prometheus (install it)")
    scores = DemoScores(Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:9"), topic_prefix="d."))
    acts = score_acts(scores)
    assert [a.title for a in acts] == ["scores from Prometheus", "metric changed"]
    assert all(a.skipped == "no /usr/bin/prometheus (install it)" for a in acts)
    assert all(a.expected == () and a.setup is None and a.records() == [] for a in acts)
