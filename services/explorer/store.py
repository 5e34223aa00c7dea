"""The explorer's state store: the history read so far and the state in force now.

Fed by `follow` (services/explorer/source.py) with every record of the scheduler's inputs and of
`decisions`, in the order a BroadcastReader hands them out, and with the rollout topics' records,
which go to the rollout book (services/rollout/book.py), and with the queue placer's topics,
which go to the queue book (services/explorer/queue_book.py). It keeps them in the auditor's
`History`, so an explanation is recomputed exactly as `fleetplace explain` does, and one
`SourceReplay` advanced to the end of what was read, whose fleet is the fleet *now* (the Fleet
and What-if pages) and whose decisions are the decisions in force.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from fleetplace.services.auditor.explain import Explanation
from fleetplace.services.auditor.history import DecisionRecord, History, collection_paused
from fleetplace.services.auditor.replay import SourceReplay
from fleetplace.services.explorer.explainer import Explainer
from fleetplace.services.explorer.queue_book import QUEUE_TOPICS, QueueBook
from fleetplace.services.rollout.book import ROLLOUT_TOPICS, RolloutBook
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.kafka import TP
from fleetplace.shared.bus.records import Record
from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions

# Explanations are recomputed on demand and kept for the pages visited most recently.
EXPLANATIONS_KEPT = 256


T = TypeVar("T")


def _explanation_key(record: DecisionRecord) -> tuple[str, int, int, int]:
    return (record.key, record.seq, record.partition, record.offset)


class ExplorerStore:
    """History, the state now, and a version that rises with every change (what live pages watch)."""

    def __init__(
        self, prefix: str, limits: DecodeLimits = DEFAULT_LIMITS, engine: EngineOptions = DEFAULT_OPTIONS
    ) -> None:
        self.prefix = prefix
        self.limits = limits
        self.engine = engine
        self.history = History()
        self.version = 0
        self.caught_up = False
        self.rollouts_topic_exists = False
        self.rollouts = RolloutBook(limits)
        self.queues_topic_exists = False
        self.queues = QueueBook(limits)
        self._ends: dict[TP, int] = {}  # short topic name -> next offset read
        self._now = SourceReplay(self.history, limits, engine)
        self._timeline: dict[str, list[DecisionRecord]] = {}
        self._explainer = Explainer(self.history, limits, engine)
        self._explanations: OrderedDict[tuple[str, int, int, int], Explanation] = OrderedDict()
        self._changed = asyncio.Event()
        self._computing = asyncio.Lock()

    # ---- feeding ---------------------------------------------------------------------------
    def add(self, records: Iterable[Record]) -> bool:
        """Take records from the source; True when any was new (the version rose)."""
        with collection_paused():
            return self._add(records)

    def _add(self, records: Iterable[Record]) -> bool:
        history = self.history
        added = False
        touched: set[str] = set()  # placements with a new diff
        for record in records:
            topic = record.topic[len(self.prefix) :] if record.topic.startswith(self.prefix) else record.topic
            added = True
            if topic in ROLLOUT_TOPICS:
                self.rollouts.add(topic, record)
                continue
            if topic in QUEUE_TOPICS:
                self.queues.add(record, self.prefix)
                continue
            count = len(history.decisions)
            history.add(record, self.prefix, self.limits)
            if len(history.decisions) > count:
                diff = history.decisions[-1]
                self._timeline.setdefault(diff.key, []).append(diff)
                touched.add(diff.key)
            tp = (topic, record.partition)
            self._ends[tp] = max(self._ends.get(tp, 0), record.offset + 1)
        if not added:
            return False
        history.seal()
        for key in touched:
            self._timeline[key].sort(key=lambda d: (d.seq, d.partition, d.offset))
        self._now.advance(dict(self._ends))
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()
        return True

    def mark_caught_up(self) -> None:
        if not self.caught_up:
            self._park()
            self._caught_up()

    def _park(self) -> None:
        with collection_paused(freeze=False):
            self._explainer.park([diffs[-1] for diffs in self._timeline.values()])

    def _caught_up(self) -> None:
        self.caught_up = True
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    # ---- off the event loop ------------------------------------------------------------------
    # An explanation replays history and an evaluation walks the whole fleet: up to a second at
    # 5,000 clusters × 5,000 placements. They run in a thread, one at a time, while the source
    # waits to add records (nothing they read changes under them); pages that need neither are
    # answered meanwhile.
    async def off_loop(self, work: Callable[[], T]) -> T:
        """`work`, which reads the store, run in a thread while no record is added."""
        async with self._computing:
            return await asyncio.to_thread(work)

    async def feed(self, records: Iterable[Record]) -> bool:
        """`add`, once no computation reads the store."""
        async with self._computing:
            return self.add(records)

    async def catch_up(self) -> None:
        """`mark_caught_up`, with the walk parked off the event loop."""
        if not self.caught_up:
            await self.off_loop(self._park)
            self._caught_up()

    async def explain(self, record: DecisionRecord) -> Explanation:
        """`explanation`, computed off the event loop unless it is kept."""
        found = self._explanations.get(_explanation_key(record))
        if found is not None:
            self._explanations.move_to_end(_explanation_key(record))
            return found
        return await self.off_loop(lambda: self.explanation(record))

    async def wait_change(self, seen: int, timeout: float) -> int:
        """The version once it is past `seen` (or as it is after `timeout` seconds)."""
        if self.version > seen:
            return self.version
        event = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await event.wait()
        return self.version

    # ---- reading ---------------------------------------------------------------------------
    @property
    def fleet(self) -> Fleet:
        fleet: Fleet = self._now.processor.fleet
        return fleet

    def cluster_source(self, cluster: str) -> tuple[str, str | None]:
        """The kind a cluster is read from now, and for a ClusterProfile its namespace."""
        return self._now.processor.cluster_source(cluster)

    def placement_keys(self) -> list[str]:
        """Every placement that exists now or has a decision history."""
        return sorted(set(self.fleet.placements) | set(self._timeline))

    def knows(self, key: str) -> bool:
        """Whether the placement exists now or has a decision history."""
        return key in self.fleet.placements or key in self._timeline

    def timeline(self, key: str) -> list[DecisionRecord]:
        """The placement's diffs in seq order."""
        return self._timeline.get(key, [])

    def latest(self, key: str) -> DecisionRecord | None:
        diffs = self._timeline.get(key)
        return diffs[-1] if diffs else None

    def decided(self) -> Mapping[str, frozenset[str]]:
        """Placement -> the clusters of its latest decision (none once deleted)."""
        return {key: self.decided_by(key) for key in self._timeline}

    def decided_by(self, key: str) -> frozenset[str]:
        """The clusters of the placement's latest decision (none once deleted, or before any)."""
        last = self.latest(key)
        if last is None or last.deleted:
            return frozenset()
        return frozenset(last.value.get("decisions") or ())

    def groups(self, key: str) -> list[Mapping[str, Any]] | None:
        """The placement's decision groups now; None when it has no decision (or was deleted)."""
        last = self.latest(key)
        if last is None or last.deleted:
            return None
        return list(last.value.get("groups") or ())

    def record(self, key: str, seq: int | None) -> DecisionRecord | None:
        """A diff of the placement by seq (the latest when None)."""
        if seq is None:
            return self.latest(key)
        return next((d for d in self._timeline.get(key, ()) if d.seq == seq), None)

    def explanation(self, record: DecisionRecord) -> Explanation:
        """The diff's explanation recomputed from the history, as `fleetplace explain --at` gives it."""
        key = _explanation_key(record)
        found = self._explanations.get(key)
        if found is None:
            with collection_paused(freeze=False):
                found = self._explainer.explain(record)
            self._explanations[key] = found
            while len(self._explanations) > EXPLANATIONS_KEPT:
                self._explanations.popitem(last=False)
        else:
            self._explanations.move_to_end(key)
        return found

    def summary(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "caughtUp": self.caught_up,
            "records": self.history.records_read,
            "placements": len(self.placement_keys()),
            "clusters": len(self.fleet.clusters),
            "rollouts": len(self.rollouts.rollout_keys()),
            "appPlacements": len(self.queues.history.app_placements),
        }
