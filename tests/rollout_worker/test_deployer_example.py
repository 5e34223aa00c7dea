"""docs/examples/deployer.py closes a rollout's loop on the broker and applies nothing twice."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from fleetplace.shared.bus.topics import Topics
from tests.rollout_worker.builders import placement_decisions, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for
from tests.rollout_worker.test_deployer import CANARY_FIRST, GROUPS

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "deployer.py"


def example(broker: str, topics: Topics, state: Path, *more: str, exit_status: int = 0) -> list[str]:
    args = ["apps/web", "--bootstrap", broker, "--prefix", topics.prefix, "--state", str(state), *more]
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args, "--poll", "0.05", "--until-settled"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == exit_status, done.stdout + done.stderr
    return done.stdout.splitlines()


async def test_the_example_deployer_completes_a_canary_rollout_and_resumes_without_reapplying(
    broker: str, topics: Topics, tmp_path: Path
) -> None:
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY_FIRST))
        lines = await asyncio.to_thread(example, broker, topics, tmp_path)
        applied = [line.split()[1] for line in lines if line.startswith("apply")]
        assert applied[0] == "c1" and sorted(applied) == ["c1", "c2", "c3", "c4", "c5"]
        assert lines[-1] == "apps/web v1: complete"
        assert (tmp_path / "apps" / "web" / "c5").read_text() == "v1"  # its state: under --state

        again = await asyncio.to_thread(example, broker, topics, tmp_path)
        # restarted: it read its own reports back and applied nothing
        assert not any(line.startswith("apply") for line in again)
        assert again[-1] == "apps/web v1: complete"


async def test_the_example_deployer_exits_one_when_the_rollout_breaches(
    broker: str, topics: Topics, tmp_path: Path
) -> None:
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY_FIRST))
        lines = await asyncio.to_thread(example, broker, topics, tmp_path, "--fail", "c1", exit_status=1)
        assert lines[-1] == "apps/web v1: maxFailures breached"
