"""docs/examples/deployer.py runs against the broker and resumes without deploying twice."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from fleetplace.shared.bus.topics import Topics, ensure_topics
from tests.subscriber.test_subscriber import diff, produce

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "deployer.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deployer_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_deployer_acts_once_per_change_across_restarts(
    broker: str, topic_prefix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topics = Topics(topic_prefix)
    asyncio.run(ensure_topics(broker, topics))
    deployer = _example()
    state = tmp_path / "state.json"
    args = ["--bootstrap", broker, "--prefix", topic_prefix, "--state", str(state), "--once"]

    asyncio.run(produce(broker, topics, [diff("ns1/web", 1, ["c1", "c2"], [])]))
    deployer.main(args)
    assert capsys.readouterr().out.splitlines() == ["deploy   ns1/web -> c1", "deploy   ns1/web -> c2"]

    deployer.main(args)  # restarted, nothing new
    assert capsys.readouterr().out == ""

    asyncio.run(produce(broker, topics, [diff("ns1/web", 2, ["c2", "c3"], ["c1", "c2"])]))
    deployer.main(args)
    assert capsys.readouterr().out.splitlines() == ["undeploy ns1/web -> c1", "deploy   ns1/web -> c3"]
    saved = json.loads(state.read_text())
    assert saved["deployed"] == {"ns1/web": ["c2", "c3"]}
    assert saved["position"]["applied"] == {"ns1/web": 2}
