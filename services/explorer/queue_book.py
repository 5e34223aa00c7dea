"""The queues as the explorer knows them: the queue placer's topics read so far (`queue-configs`,
`app-placements`), the queue tree a placer holds now, and the placements recorded.

The tree comes from the queue placer's own processor, advanced over the records
(services/auditor/queues.py, `QueuePlacerReplay`): no second placer. The recorded placements are
the ones `fleetplace queues what-if` reads (services/auditor/queue_whatif.py), so the Queues
page's what-if answers as the command does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetplace.services.auditor.history import History, collection_paused
from fleetplace.services.auditor.queue_whatif import RecordedApplication, RecordedReader
from fleetplace.services.auditor.queues import QueuePlacerReplay
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.envelope import format_time
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import APP_PLACEMENTS, QUEUE_CONFIGS
from fleetplace.shared.queueing import QueueState
from fleetplace.shared.yaml_text import yaml_document

QUEUE_TOPICS = (QUEUE_CONFIGS, APP_PLACEMENTS)


@dataclass(frozen=True, slots=True)
class PartitionTree:
    """A partition's queues by path (a parent before its children); `configured`: whether the
    rule set in force configures the partition (else it is draining: a reload removed it)."""

    name: str
    configured: bool
    queues: tuple[QueueState, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.name,
            "configured": self.configured,
            "queues": [
                {
                    "queue": q.path,
                    "leaf": q.leaf,
                    "dynamic": q.dynamic,
                    "draining": q.draining,
                    "applications": q.applications,
                }
                for q in self.queues
            ],
        }


def placement_json(entry: RecordedApplication) -> dict[str, Any]:
    """One recorded placement as the API lists it."""
    app, answer = entry.application, entry.answer
    return {
        "applicationID": app.application_id,
        "partition": app.partition or "default",
        "user": app.user,
        **answer.to_json(),
        "evaluatedAt": None if entry.evaluated_at is None else format_time(entry.evaluated_at),
        "record": entry.where,
    }


class QueueBook:
    """The queue topics' records, the processor advanced over them, and the recorded placements
    (brought up to date when asked for after records arrived)."""

    def __init__(self, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.history = History()
        self._replay = QueuePlacerReplay(self.history, limits)
        self._stale = False
        self._reader = RecordedReader()
        self._recorded: list[RecordedApplication] = []
        self._invalid: list[str] = []  # placements whose application is not a valid submission

    def add(self, record: Record, prefix: str) -> None:
        """One record of a queue topic (its full name; `prefix` is the deployment's)."""
        self.history.add(record, prefix, self.limits)
        self._stale = True

    def _refresh(self) -> None:
        if not self._stale:
            return
        # what is built lives on (the tree, the recorded applications): the collector is kept off
        # it as the store keeps it off the history (collection_paused)
        with collection_paused():
            self.history.seal()
            # the placements mirrored now follow those read before, unless the replay started again
            restarted, placements = self._replay.advance()
            if restarted:
                self._reader, self._recorded, self._invalid = RecordedReader(), [], []
            for placement in placements:
                try:
                    self._recorded.append(self._reader.read(placement))
                except ValueError as e:
                    self._invalid.append(str(e))
        self._stale = False

    def recorded(self) -> tuple[list[RecordedApplication], list[str]]:
        """Every recorded placement in placing order (as `recorded_applications` reads them), and
        the records that cannot be used (where, and why)."""
        self._refresh()
        return self._recorded, [*self._replay.unreadable, *self._invalid]

    def trees(self) -> list[PartitionTree]:
        """Each partition's queues now: the configured ones and those placements created (with no
        config read, a placer runs YuniKorn's default one)."""
        self._refresh()
        if not self._replay.processor.partitions and not self._recorded:
            return []  # no config read and nothing placed: no queue placer runs here
        placer = self._replay.processor.placer
        configured = set(placer.config.partitions)
        recorded = {r.application.partition or "default" for r in self._recorded}
        out = []
        for name in sorted(configured | recorded):
            queues = placer.queues(name)
            if queues or name in configured:
                ordered = tuple(queues[path] for path in sorted(queues, key=lambda p: p.split(".")))
                out.append(PartitionTree(name, name in configured, ordered))
        return out

    def config_text(self) -> str:
        """The rule set in force as a YuniKorn config (YAML); "" when no config was read."""
        self._refresh()
        partitions = self._replay.processor.partitions
        if not partitions:
            return ""
        doc = {"partitions": [partitions[k] for k in sorted(partitions)]}
        return yaml_document(doc)
