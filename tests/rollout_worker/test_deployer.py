"""`RolloutDeployer` against a rollout worker on the embedded broker: the loop closes."""

from __future__ import annotations

import asyncio
import itertools
import threading

import pytest

from fleetplace.shared.api.rollouts import RolloutState
from fleetplace.shared.bus.deployer import Health, Reported, RolloutDeployer, settled
from fleetplace.shared.bus.topics import Topics
from tests.rollout_worker.builders import placement_decisions, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for

pytestmark = pytest.mark.integration

GROUPS = [("canary", ["c1"]), ("wave", ["c2", "c3"]), ("rest", ["c4", "c5"])]
CANARY_FIRST = {
    "type": "ProgressivePerGroup",
    "progressivePerGroup": {"mandatoryDecisionGroups": [{"groupName": "canary"}], "progressDeadline": "10m"},
}
GROUP_OF = {c: g for g, cs in GROUPS for c in cs}


class FakeCluster:
    """Records what was applied, in order; a cluster turns healthy on the second health check."""

    def __init__(self, failing: frozenset[str] = frozenset(), broken: frozenset[str] = frozenset()) -> None:
        self.failing = failing  # apply raises
        self.broken = broken  # applies, then the health check says Failed
        self.applied: list[str] = []
        self.checks: dict[str, int] = {}
        self.lock = threading.Lock()

    async def apply(self, cluster: str) -> None:
        self.applied.append(cluster)
        if cluster in self.failing:
            raise RuntimeError("image pull failed")

    def healthy(self, cluster: str) -> Health | bool:  # a plain function: run in a thread
        with self.lock:
            self.checks[cluster] = self.checks.get(cluster, 0) + 1
            if cluster in self.broken:
                return Health.FAILED
            return self.checks[cluster] >= 2


async def deploy(
    broker: str, topics: Topics, fake: FakeCluster, timeout: float = 60.0
) -> tuple[RolloutDeployer, RolloutState | None]:
    deployer = RolloutDeployer(
        broker, "apps/web", fake.apply, fake.healthy, prefix=topics.prefix, poll_interval=0.05
    )
    final = await asyncio.wait_for(deployer.run(until=settled), timeout)
    return deployer, final


async def start_rollout(bus: RolloutBus) -> None:
    await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
    await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY_FIRST))


async def test_the_deployer_rolls_out_canary_first_group_by_group_until_complete(
    broker: str, topics: Topics
) -> None:
    fake = FakeCluster()
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await start_rollout(bus)
        deployer, final = await deploy(broker, topics, fake)
        assert final is not None and final.complete and not final.max_failure_breach
        assert sorted(fake.applied) == ["c1", "c2", "c3", "c4", "c5"]  # each exactly once
        # one group at a time, in index order, the mandatory canary first
        assert [GROUP_OF[c] for c in fake.applied] == ["canary", "wave", "wave", "rest", "rest"]
        assert dict(deployer.reported) == {c: Reported("v1", "Succeeded") for c in GROUP_OF}
        assert all(n >= 2 for n in fake.checks.values())  # polled until healthy, not taken on apply
        await bus.wait_for(lambda: bool((bus.last("apps/web") or {}).get("complete")), what="complete diff")


# each test gets its own FakeCluster: a shared instance would carry one broker's run into the next
@pytest.mark.parametrize(
    "failing, broken",
    [(frozenset({"c1"}), frozenset()), (frozenset(), frozenset({"c1"}))],
    ids=["apply-raises", "health-says-failed"],
)
async def test_a_failing_canary_breaches_and_stops_the_rollout(
    broker: str, topics: Topics, failing: frozenset[str], broken: frozenset[str]
) -> None:
    fake = FakeCluster(failing=failing, broken=broken)
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await start_rollout(bus)
        deployer, final = await deploy(broker, topics, fake)
        assert final is not None and final.max_failure_breach and not final.complete
        assert deployer.reported["c1"] == Reported("v1", "Failed")
        # the rollout stays stopped: a deployer that keeps following it applies nothing more
        again = FakeCluster()
        follower = RolloutDeployer(
            broker, "apps/web", again.apply, again.healthy, prefix=topics.prefix, poll_interval=0.05
        )
        # ten steps with the state read, then it returns: a pause and stop() instead let a slowly
        # starting follower be stopped before its first step, so it could apply nothing anyway
        steps = itertools.count(1)
        last = await asyncio.wait_for(follower.run(until=lambda _: next(steps) >= 10), 60)
        assert fake.applied == ["c1"] and again.applied == []
        assert last is not None and last.clusters == ("c1",) and last.max_failure_breach


async def test_a_restarted_deployer_resumes_without_applying_a_succeeded_cluster_again(
    broker: str, topics: Topics
) -> None:
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await start_rollout(bus)
        first = FakeCluster()
        stopping: list[RolloutDeployer] = []

        def healthy_then_stop(cluster: str) -> bool:
            answer = first.healthy(cluster)
            if answer is True:
                stopping[0].stop()  # stopped after the canary's Succeeded is reported
            return answer is True

        deployer = RolloutDeployer(
            broker, "apps/web", first.apply, healthy_then_stop, prefix=topics.prefix, poll_interval=0.05
        )
        stopping.append(deployer)
        await asyncio.wait_for(deployer.run(), 60)
        assert first.applied == ["c1"] and deployer.reported["c1"] == Reported("v1", "Succeeded")

        second = FakeCluster()
        restarted, final = await deploy(broker, topics, second)
        assert final is not None and final.complete
        assert sorted(second.applied) == ["c2", "c3", "c4", "c5"]  # c1 not applied again
        assert restarted.applied == 4
