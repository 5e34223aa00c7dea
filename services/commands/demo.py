"""`fleetplace demo`: the whole loop on one machine, checked, in well under a minute.

Starts the embedded broker (unless KAFKA_BOOTSTRAP_SERVERS names a Kafka), creates the topics
under a fresh prefix, publishes the example fleet (demo_fleet.yaml beside this module, which
docs/examples/fleet.yaml links to), starts a scheduler worker and a rollout worker in this process
and plays acts against them: a cluster joins, a label changes, an AddOn score changes, a cluster
becomes unreachable and a toleration runs out, a placement is deleted; then a revision is rolled
out over decision groups (demo_rollout.py): the canary first, the demo's deployer reporting, a soak
ending on a timer, a new revision starting over, a failing canary stopping it; then, when
/usr/bin/prometheus exists, a Prometheus metric steers a placement through a ScoreSource
(demo_scores.py; otherwise those acts say they were skipped). Each act waits for
the decision diffs and rollout diffs it should cause and checks that exactly those were published.
A summary table follows; the exit status is 1 if any act failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fleetplace.services.commands.demo_acts import (
    Act,
    ActResult,
    ExpectedDiff,
    describe_change,
    now_seconds,
    unmatched,
    upsert,
)
from fleetplace.services.commands.demo_inventory import EDGE, edge_placement, inventory, profile
from fleetplace.services.commands.demo_rollout import (
    API,
    CANARY,
    DEADLINE,
    SOAK_S,
    DemoDeployer,
    ExpectedRolloutDiff,
    Recheck,
    describe_rollout_diff,
    parse_rollout_diff,
    rollout_document,
    rollout_line,
)
from fleetplace.services.commands.output import table_console
from fleetplace.services.rollout.worker import RolloutWorker
from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import BroadcastReader, make_admin, make_producer, send_all, start_client
from fleetplace.shared.bus.publish import (
    PlannedRecord,
    load_documents,
    plan_document,
    to_outgoing,
)
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import PLACEMENTS, TAINTS, Topics, ensure_topics
from fleetplace.shared.logging import configure_logging
from fleetplace.shared.settings import KafkaSettings, Settings, describe

if TYPE_CHECKING:
    from fleetplace.services.commands.demo_hub import DemoHub
    from fleetplace.services.commands.demo_scores import DemoScores

# Package data, installed with the command (docs/examples/fleet.yaml links to it for readers).
FLEET_FILE = Path(__file__).resolve().with_name("demo_fleet.yaml")
UNREACHABLE = "cluster.open-cluster-management.io/unreachable"
# The acts end within this budget even when one hangs, so that with the broker's start and the
# workers' and the control plane's stop the whole demo ends within a minute (it plays in about 30 s).
BUDGET_S = 45.0
# After the expected diffs arrived, keep listening this long for diffs that should not come.
SETTLE_S = 0.5

WEB, ANALYTICS, MONITORING = "apps/web", "apps/analytics", "apps/monitoring"


def describe_diff(diff: Mapping[str, Any]) -> str:
    if "rollout" in diff:
        return describe_rollout_diff(diff)
    return describe_change(
        str(diff.get("placement")),
        diff.get("added") or (),
        diff.get("removed") or (),
        bool(diff.get("deleted", False)),
    )


# ---- the acts, on the example fleet ----------------------------------------------------------


class ExampleFleet:
    """The documents of the example fleet, by kind and key, to derive each act's change from."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.planned: list[PlannedRecord] = []
        self._by_key: dict[tuple[str, str], Mapping[str, Any]] = {}
        for doc in load_documents([str(path)]):
            for record in plan_document(doc):
                self.planned.append(record)
                self._by_key[(str(doc.body["kind"]), record.key)] = doc.body

    def get(self, kind: str, key: str) -> dict[str, Any]:
        """A deep copy of one object, to change without touching the fleet."""
        try:
            return copy.deepcopy(dict(self._by_key[(kind, key)]))
        except KeyError:
            raise BusError(
                f"{self.path}: no {kind} {key!r}: the demo's acts need the example fleet"
            ) from None

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self._by_key if k == kind)

    def toleration_seconds(self, placement: str, key: str) -> int:
        for toleration in self.get("Placement", placement)["spec"].get("tolerations") or []:
            if toleration.get("key") == key and toleration.get("tolerationSeconds") is not None:
                return int(toleration["tolerationSeconds"])
        raise BusError(f"{self.path}: {placement} has no tolerationSeconds for {key}")


def build_acts(
    fleet: ExampleFleet, topics: Topics, taint_times: list[datetime], deployer: DemoDeployer
) -> list[Act]:
    """The script. The expected diffs follow from the example fleet (see fleet.yaml's comments)."""
    west_2 = fleet.get("ManagedCluster", "west-1")
    west_2["metadata"]["name"] = "west-2"
    west_2["status"]["allocatable"]["cpu"] = "28"
    west_2["status"]["capacity"]["cpu"] = "32"

    east_1 = fleet.get("ManagedCluster", "east-1")
    east_1["metadata"]["labels"]["env"] = "staging"

    edge_2_score = fleet.get("AddOnPlacementScore", "edge-2/resource-usage")
    edge_2_score["status"]["scores"] = [{"name": "cpuAvailable", "value": 90}]

    def unreachable() -> list[OutgoingRecord]:
        added = now_seconds()
        taint_times.append(added)
        taint = {
            "key": UNREACHABLE,
            "effect": "NoSelect",
            "timeAdded": added.isoformat().replace("+00:00", "Z"),
        }
        return to_outgoing([PlannedRecord("demo", TAINTS, "west-2", {"taints": [taint]})], topics)

    def delete_analytics() -> list[OutgoingRecord]:
        return to_outgoing([PlannedRecord("demo", PLACEMENTS, ANALYTICS, None)], topics, delete=True)

    grace = fleet.toleration_seconds(WEB, UNREACHABLE)
    return [
        Act(
            "worker starts",
            f"{fleet.path.name} is on the bus; the scheduler worker reads it and decides every placement "
            "(a rollout worker starts beside it, with no rollout yet)",
            lambda: to_outgoing(fleet.planned, topics) + upsert(topics, *inventory(now_seconds()))(),
            (
                ExpectedDiff(WEB, ("east-1", "west-1"), trigger="placement"),
                ExpectedDiff(ANALYTICS, ("east-2",), trigger="placement"),
                ExpectedDiff(
                    MONITORING, ("east-1", "east-2", "edge-1", "edge-2", "west-1"), trigger="placement"
                ),
                ExpectedDiff(API, ("east-1", "east-2", "edge-1", "edge-2"), trigger="placement"),
            ),
            timeout_s=30.0,
            starts_worker=True,
        ),
        Act(
            "cluster added",
            "west-2 joins with 28 allocatable CPUs: web wants the biggest prod clusters",
            upsert(topics, west_2),
            (
                ExpectedDiff(WEB, ("west-2",), ("west-1",), trigger="cluster"),
                ExpectedDiff(MONITORING, ("west-2",), trigger="cluster"),
            ),
        ),
        Act(
            "label changed",
            "east-1 is relabelled env=staging: it no longer matches web's predicate",
            upsert(topics, east_1),
            (ExpectedDiff(WEB, ("west-1",), ("east-1",), trigger="cluster"),),
        ),
        Act(
            "AddOn score changed",
            "edge-2's resource-usage addon now reports cpuAvailable 90: analytics follows the score",
            upsert(topics, edge_2_score),
            (ExpectedDiff(ANALYTICS, ("edge-2",), ("east-2",), trigger="score"),),
        ),
        Act(
            "cluster unreachable",
            f"a health checker taints west-2 {UNREACHABLE}: monitoring leaves at once, "
            f"web tolerates it for {grace} s",
            unreachable,
            (ExpectedDiff(MONITORING, (), ("west-2",), trigger="taint"),),
        ),
        Act(
            "toleration expired",
            f"no event: web's {grace} s toleration runs out on a timer and the workload moves",
            lambda: [],
            (ExpectedDiff(WEB, ("east-2",), ("west-2",), trigger="toleration-expired"),),
            timeout_s=grace + 10.0,
            detail=lambda: f"toleration deadline {taint_times[-1] + timedelta(seconds=grace):%H:%M:%S} UTC",
        ),
        Act(
            "placement deleted",
            "apps/analytics is deleted (a tombstone): subscribers get a final diff",
            delete_analytics,
            (ExpectedDiff(ANALYTICS, (), ("edge-2",), trigger="placement", deleted=True),),
        ),
        *inventory_acts(topics),
        *rollout_acts(fleet, topics, deployer),
    ]


def inventory_acts(topics: Topics) -> list[Act]:
    """A fleet known only as ClusterProfiles, placed; then one control plane turns unhealthy."""

    def unhealthy() -> list[OutgoingRecord]:
        return upsert(topics, profile("dublin", False, now_seconds()))()

    return [
        Act(
            "inventory placed",
            "three clusters known only as ClusterProfiles (KEP-4322, as OCM's hub writes them) are "
            "on the bus since act 1: inventory/edge takes the two with the most free CPU",
            upsert(topics, edge_placement()),
            (ExpectedDiff(EDGE, ("dublin", "oslo"), trigger="placement"),),
        ),
        Act(
            "control plane unhealthy",
            "dublin's ControlPlaneHealthy turns False (OCM's unavailable taint): edge moves to lisbon",
            unhealthy,
            (ExpectedDiff(EDGE, ("lisbon",), ("dublin",), trigger="cluster"),),
        ),
    ]


def rollout_acts(fleet: ExampleFleet, topics: Topics, deployer: DemoDeployer) -> list[Act]:
    """A revision rolled out over apps/api's decision groups (canary: edge-1; the rest: east-1,
    east-2, edge-2), the demo playing the deployer (demo_rollout.py)."""
    fleet.get("Placement", API)  # the acts are written for the example fleet's api placement
    rest = ("east-1", "east-2", "edge-2")

    def report(status: str, revision: str, message: str) -> Callable[[], list[OutgoingRecord]]:
        return lambda: [deployer.report(CANARY, status, revision, now_seconds(), message)]

    def after(status: str, wait: timedelta, label: str) -> Recheck:
        return Recheck(label, lambda: deployer.last_since(status) + wait)

    soak = timedelta(seconds=SOAK_S)
    return [
        Act(
            "rollout started",
            f"Rollout {API} v1: ProgressivePerGroup over api's decision groups, canary mandatory",
            upsert(topics, rollout_document("v1")),
            (ExpectedRolloutDiff(API, "v1", (CANARY,), trigger="rollout"),),
            timeout_s=20.0,  # the first act the rollout worker must be ready for (its group joined)
        ),
        Act(
            "canary applied",
            f"the demo's deployer applies v1 to {CANARY} and reports Progressing",
            report("Progressing", "v1", "applied"),
            (
                ExpectedRolloutDiff(
                    API, "v1", trigger="status", recheck=after("Progressing", DEADLINE, "its deadline")
                ),
            ),
        ),
        Act(
            "canary healthy",
            f"the deployer reports {CANARY} Succeeded: it soaks {SOAK_S} s before the next group starts",
            report("Succeeded", "v1", "healthy"),
            (ExpectedRolloutDiff(API, "v1", trigger="status", recheck=after("Succeeded", soak, "soak end")),),
        ),
        Act(
            "soak over",
            "no event: the soak ends on the rollout worker's timer and the rest of api gets v1",
            lambda: [],
            (ExpectedRolloutDiff(API, "v1", rest, (CANARY,), trigger="recheck"),),
            timeout_s=SOAK_S + 5.0,
            detail=lambda: f"soak ends {deployer.last_since('Succeeded') + soak:%H:%M:%S} UTC",
        ),
        Act(
            "new revision",
            "v2 is published before v1 is done: v1's reports count for nothing, it starts over",
            upsert(topics, rollout_document("v2")),
            (ExpectedRolloutDiff(API, "v2", (CANARY,), rest, trigger="rollout"),),
        ),
        Act(
            "canary failed",
            f"the deployer reports {CANARY} Failed on v2: a mandatory group tolerates no failure",
            report("Failed", "v2", "crash-looping"),
            (
                ExpectedRolloutDiff(
                    API,
                    "v2",
                    trigger="status",
                    breach=True,
                    recheck=after("Failed", DEADLINE, "its deadline"),
                ),
            ),
            detail=lambda: "maxFailures is breached: the rollout stops, the rest of api is not given v2",
        ),
    ]


# ---- running it ------------------------------------------------------------------------------


class DecisionFeed:
    """Every DecisionDiff on `decisions` and every rollout diff on `rollout-decisions`, in arrival
    order (a global-table source in a task)."""

    def __init__(self, kafka: KafkaSettings, topics: Topics) -> None:
        self._reader = BroadcastReader(
            kafka, [topics.decisions, topics.rollout_decisions], poll_timeout_ms=50
        )
        self._task: asyncio.Task[None] | None = None
        self.diffs: list[dict[str, Any]] = []

    async def start(self) -> None:
        await self._reader.start()
        self._task = asyncio.create_task(self._read())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._reader.stop()

    async def _read(self) -> None:
        while True:
            batch = await self._reader.poll()
            for record in batch.records:
                value = decode_object(record.value)
                if value is not None:
                    self.diffs.append(value)

    def latest(self, field: str = "placement") -> dict[str, dict[str, Any]]:
        """The last diff per placement (or per rollout, with field="rollout")."""
        out: dict[str, dict[str, Any]] = {}
        for diff in self.diffs:
            if field in diff:
                out[str(diff[field])] = diff
        return out


def _print_diff(console: Console, diff: Mapping[str, Any], ok: bool) -> None:
    mark = "" if ok else " [bold red]unexpected[/bold red]"
    if "rollout" in diff:
        rollout, head, change, now = rollout_line(diff)
        console.print(
            f"   [bold]rollout {escape(rollout)}[/bold] [dim]{escape(head)}[/dim] "
            f"{escape(change)} → {escape(now)}{mark}"
        )
        return
    trigger = diff.get("trigger") or {}
    changes = [f"[green]+{escape(c)}[/green]" for c in diff.get("added") or ()]
    changes += [f"[red]−{escape(c)}[/red]" for c in diff.get("removed") or ()]
    now = "deleted" if diff.get("deleted") else ", ".join(diff.get("decisions") or ()) or "(none)"
    console.print(
        f"   [bold]{escape(str(diff['placement']))}[/bold] seq {diff['seq']} "
        f"[dim]({escape(str(trigger.get('kind')))} {escape(str(trigger.get('key')))})[/dim] "
        f"{' '.join(changes)} → {escape(now)}{mark}"
    )


class Demo:
    def __init__(
        self,
        console: Console,
        settings: Settings,
        fleet: ExampleFleet,
        *,
        score_acts: bool = False,
        hub_acts: bool = False,
    ) -> None:
        self.console = console
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.fleet = fleet
        self.taint_times: list[datetime] = []
        self.deployer = DemoDeployer(self.topics)
        self.acts = build_acts(fleet, self.topics, self.taint_times, self.deployer)
        self.scores: DemoScores | None = None
        if score_acts:  # Prometheus steering a placement (demo_scores.py), for `fleetplace demo`
            from fleetplace.services.commands.demo_scores import DemoScores
            from fleetplace.services.commands.demo_scores import score_acts as scores_script

            self.scores = DemoScores(settings)
            self.scores.scheduler_holds = self._scheduler_scores
            self.acts += scores_script(self.scores)
        self.hub: DemoHub | None = None
        if hub_acts:  # a Placement decided on a real API server (demo_hub.py), for `fleetplace demo`
            from fleetplace.services.commands.demo_hub import DemoHub
            from fleetplace.services.commands.demo_hub import hub_acts as hub_script

            self.hub = DemoHub(settings)
            self.acts += hub_script(self.hub, lambda: now_seconds().strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.feed = DecisionFeed(settings.kafka, self.topics)
        self.worker: SchedulerWorker | None = None
        self.rollout_worker: RolloutWorker | None = None
        self._worker_tasks: dict[str, asyncio.Task[None]] = {}
        self._producer: Any = None

    async def run(self) -> list[ActResult]:
        started = time.monotonic()
        await ensure_topics(
            self.settings.kafka, self.topics, replication_factor=self.settings.topic_replication_factor
        )
        self._producer = make_producer(self.settings.kafka)
        await start_client(self._producer)
        await self.feed.start()
        results: list[ActResult] = []
        try:
            if self.hub is not None:
                self.hub.boot()  # the control plane starts while the other acts play
            for number, act in enumerate(self.acts, start=1):
                remaining = BUDGET_S - (time.monotonic() - started)
                result = await self._play(number, act, remaining)
                results.append(result)
                if not result.ok:
                    break
        finally:
            if self.hub is not None:
                await self.hub.stop()
            if self.scores is not None:
                await self.scores.stop()
            await self._stop_worker()
            await self.feed.stop()
            await self._producer.stop()
        return results

    async def _play(self, number: int, act: Act, budget_s: float) -> ActResult:
        console = self.console
        console.print()
        console.rule(f"[bold]{number}. {escape(act.title)}[/bold]", align="left")
        console.print(f"   {escape(act.story)}")
        if act.skipped is not None:
            console.print(f"   [yellow]– skipped: {escape(act.skipped)}[/yellow]")
            return ActResult(act.title, act.expected, (), 0.0, ok=True, skipped=act.skipped)
        if act.detail is not None:
            console.print(f"   [dim]{escape(act.detail())}[/dim]")
        console.print(f"   [dim]expect: {escape('; '.join(e.describe() for e in act.expected))}[/dim]")
        if act.setup is not None:
            await act.setup()
        observed = act.observed or (lambda: self.feed.diffs)
        first = len(observed())
        t0 = time.monotonic()
        records = act.records()
        if records:
            await send_all(self._producer, records)
        if act.starts_worker:
            self._start_worker()
        deadline = t0 + max(0.0, min(act.timeout_s, budget_s))
        shown, met_at = 0, None
        while True:
            seen = list(observed()[first:])
            for diff in seen[shown:]:
                _print_diff(console, diff, any(e.matches(diff) for e in act.expected))
            shown = len(seen)
            missing, unexpected = unmatched(act.expected, seen)
            now = time.monotonic()
            if met_at is None and not missing:
                met_at = now
            if (met_at is not None and now - met_at >= SETTLE_S) or now >= deadline or unexpected:
                break
            self._check_worker()
            await asyncio.sleep(0.02)
        seconds = (met_at if met_at is not None else time.monotonic()) - t0
        ok = not missing and not unexpected
        if ok:
            console.print(f"   [green]✔ as expected[/green] [dim]({seconds:.2f} s)[/dim]")
        else:
            what = [f"missing {e.describe()}" for e in missing] + [
                f"unexpected {describe_diff(d)}" for d in unexpected
            ]
            console.print(f"   [bold red]✘ {escape('; '.join(what))}[/bold red]")
        return ActResult(act.title, act.expected, tuple(seen), seconds, ok)

    def _scheduler_scores(self, resource: str) -> int:
        """How many AddOnPlacementScores of `resource` the demo's scheduler has read."""
        if self.worker is None:
            return 0
        return sum(1 for _, name in self.worker.processor.fleet.scores if name == resource)

    def _start_worker(self) -> None:
        self.worker = SchedulerWorker(self.settings, instance="demo-scheduler")
        self.rollout_worker = RolloutWorker(self.settings, instance="demo-rollout")
        self._worker_tasks = {
            "scheduler": asyncio.create_task(self.worker.run()),
            "rollout": asyncio.create_task(self.rollout_worker.run()),
        }

    def _check_worker(self) -> None:
        for name, task in self._worker_tasks.items():
            if task.done():
                task.result()  # re-raise what stopped it
                raise BusError(f"the {name} worker stopped unexpectedly")

    async def _stop_worker(self) -> None:
        for worker in (self.worker, self.rollout_worker):
            if worker is not None:
                worker.stop()
        for name, task in self._worker_tasks.items():
            try:
                async with asyncio.timeout(10.0):
                    await task
            except Exception as exc:  # the demo's result is already known; say why the stop was untidy
                self.console.print(
                    f"[yellow]warning: the {name} worker did not stop cleanly: {escape(str(exc))}[/yellow]"
                )


def summary_table(results: Sequence[ActResult], total_acts: int) -> Table:
    table = Table(title="fleetplace demo", title_justify="left")
    # in a narrow terminal the text columns wrap between words, and fold a word longer than the
    # column rather than cut it; numbers and marks never break
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("act", overflow="fold")
    table.add_column("expected", overflow="fold")
    table.add_column("seen", overflow="fold")
    table.add_column("diffs", justify="right", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("ok", no_wrap=True)
    for number, r in enumerate(results, start=1):
        if r.skipped is not None:
            table.add_row(str(number), r.title, "", "", "", "", "[yellow]skipped[/yellow]")
            continue
        table.add_row(
            str(number),
            r.title,
            "\n".join(e.describe() for e in r.expected),
            "\n".join(describe_diff(d) for d in r.seen) or "—",
            str(len(r.seen)),
            f"{r.seconds:.2f} s",
            "[green]✔[/green]" if r.ok else "[bold red]✘[/bold red]",
        )
    for number in range(len(results) + 1, total_acts + 1):
        table.add_row(str(number), "[dim]not played[/dim]", "", "", "", "", "[dim]–[/dim]")
    return table


def verdict(results: Sequence[ActResult], total_acts: int) -> tuple[bool, str]:
    """Whether the demo passed, and the line that says so: skipped acts are counted apart, never
    as passed (`15 acts passed, 2 skipped`)."""
    passed = sum(1 for r in results if r.ok and r.skipped is None)
    skipped = sum(1 for r in results if r.skipped is not None)
    ok = len(results) == total_acts and all(r.ok for r in results)
    if ok and not skipped:
        return True, f"all {passed} acts passed"
    also = f", {skipped} skipped" if skipped else ""
    if ok:
        return True, f"{passed} acts passed{also}"
    return False, f"{passed} of {total_acts} acts passed{also}"


def rollouts_table(latest: Mapping[str, Mapping[str, Any]]) -> Table:
    table = Table(title="rollouts now (last diff per rollout)", title_justify="left")
    for column in ("rollout", "seq", "revision", "roll out to now", "maxFailureBreach", "complete"):
        table.add_column(column, overflow="fold")
    for key, value in sorted(latest.items()):
        diff = parse_rollout_diff(value)
        if diff is None:
            continue
        clusters = "deleted" if diff.deleted else ", ".join(diff.clusters) or "(none)"
        table.add_row(
            key,
            str(diff.seq),
            diff.revision,
            clusters,
            str(diff.max_failure_breach).lower(),
            str(diff.complete).lower(),
        )
    return table


def decisions_table(latest: Mapping[str, Mapping[str, Any]]) -> Table:
    table = Table(title="decisions now (last diff per placement)", title_justify="left")
    for column in ("placement", "seq", "clusters"):
        table.add_column(column, overflow="fold")
    for key, diff in sorted(latest.items()):
        clusters = "deleted" if diff.get("deleted") else ", ".join(diff.get("decisions") or ()) or "(none)"
        table.add_row(key, str(diff["seq"]), clusters)
    return table


@contextlib.contextmanager
def _kafka(settings: Settings, console: Console) -> Iterator[tuple[KafkaSettings, bool]]:
    """The configured Kafka, or an embedded broker for the duration (stopped by PID): (kafka, embedded)."""
    if settings.kafka.bootstrap_servers:
        console.print(
            f"Kafka: [bold]{escape(settings.kafka.bootstrap_servers)}[/bold] (KAFKA_BOOTSTRAP_SERVERS)"
        )
        yield settings.kafka, False
        return
    with EmbeddedBroker() as broker:
        console.print(
            f"Kafka: embedded Tansu broker at [bold]{broker.bootstrap}[/bold] (pid {broker.pid}, in memory; "
            "set KAFKA_BOOTSTRAP_SERVERS to use your own Kafka)"
        )
        yield settings.kafka.model_copy(update={"bootstrap_servers": broker.bootstrap}), True


async def _delete_topics(kafka: KafkaSettings, topics: Topics) -> None:
    admin = make_admin(kafka)
    await start_client(admin)
    try:
        await admin.delete_topics(topics.names())
    finally:
        await admin.close()


def _place_applications(console: Console, settings: Settings) -> None:
    """For the explorer's Queues page: a queue placer places the demo's applications
    (demo_queues.py), and what it decided is shown."""
    from fleetplace.services.commands.demo_queues import APPS_FILE, QUEUES_FILE, place_applications

    console.print(
        f"\n[bold]Queues[/bold]: a queue placer places {APPS_FILE.name} under {QUEUES_FILE.name} "
        "(docs/queues-what-if.md)"
    )
    for app, placed in asyncio.run(place_applications(settings)).items():
        queue = "rejected" if placed.get("rejected") else str(placed.get("queue"))
        rule = placed.get("rule") or placed.get("reason") or ""
        console.print(f"   {escape(app)} → {escape(queue)} [dim]({escape(str(rule))})[/dim]")


def run_demo(
    console: Console, base: Settings, fleet_file: Path, keep_topics: bool, explore: bool = False
) -> bool:
    """Play the demo; True when every act passed. `explore`: then serve the explorer on its topics
    until Ctrl-C (services/commands/explorer.py)."""
    from fleetplace.services.commands.explorer import explore_demo, explorer_hint

    fleet = ExampleFleet(fleet_file)
    prefix = f"demo{uuid.uuid4().hex[:8]}."
    started = time.monotonic()
    with _kafka(base, console) as (kafka, embedded):
        settings = base.model_copy(
            update={
                "kafka": kafka,
                "topic_prefix": prefix,
                "scheduler_group_id": f"{prefix}scheduler",
                "rollout_group_id": f"{prefix}rollout",
                "clock": "wall",
                "http_host": "127.0.0.1",
                "http_port": 0,
            }
        )
        console.print(
            f"Topics: prefix [bold]{prefix}[/bold]; fleet: {fleet_file.name} with "
            f"{fleet.count('ManagedCluster')} clusters, {fleet.count('AddOnPlacementScore')} AddOn scores, "
            f"{fleet.count('Placement')} placements; workers: scheduler and rollout, in this process"
        )
        demo = Demo(console, settings, fleet, score_acts=True, hub_acts=True)
        try:
            results = asyncio.run(demo.run())
        finally:
            if not embedded and not (keep_topics or explore):
                with contextlib.suppress(BusError, OSError):
                    asyncio.run(_delete_topics(kafka, demo.topics))
                if demo.hub is not None and demo.hub.skipped is None:
                    with contextlib.suppress(BusError, OSError):
                        asyncio.run(_delete_topics(kafka, demo.hub.topics))
        console.print()
        console.print(rollouts_table(demo.feed.latest("rollout")))
        console.print(decisions_table(demo.feed.latest()))
        if explore:
            _place_applications(console, settings)
            explore_demo(console, settings)
    console.print(summary_table(results, len(demo.acts)))
    ok, line = verdict(results, len(demo.acts))
    elapsed = time.monotonic() - started
    if not explore:
        console.print(explorer_hint(settings, embedded, keep_topics))
    style = "bold green" if ok else "bold red"
    console.print(f"[{style}]{line}[/{style}] in {elapsed:.1f} s")
    return ok


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        fleet_file: Annotated[
            Path, typer.Option("--fleet", help="The example fleet the acts are written for.")
        ] = FLEET_FILE,
        keep_topics: Annotated[
            bool,
            typer.Option("--keep-topics", help="On your own Kafka, keep the demo's topics afterwards."),
        ] = False,
        explore: Annotated[
            bool,
            typer.Option(
                "--explore", help="After the acts, keep the broker and serve the explorer (Ctrl-C stops)."
            ),
        ] = False,
    ) -> None:
        """Watch decisions being made and changed live: broker, topics, worker and fleet in one command.

        Without KAFKA_BOOTSTRAP_SERVERS an embedded broker is started and stopped again. Each act
        checks the decision diffs it causes; the exit status is 1 if any act failed.
        """
        console = table_console()
        try:
            base = Settings()
        except ValidationError as exc:
            typer.echo(f"error: invalid settings in the environment: {describe(exc)}", err=True)
            raise typer.Exit(2) from None
        # The worker runs in this process: keep its log lines for warnings, on stderr.
        configure_logging("warning", "console")
        try:
            ok = run_demo(console, base, fleet_file, keep_topics, explore)
        except BusError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        if not ok:
            raise typer.Exit(1)
