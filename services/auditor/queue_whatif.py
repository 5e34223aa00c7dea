"""Queue rules what-if: which recorded applications a new config would send elsewhere or refuse.

The recorded placements (`app-placements`, in the order the placer made them) are placed again,
in that order, by one `QueuePlacer` built from the new config — the worker's engine. The new
config stands for every partition it configures, for the whole history: each application meets
the tree as the new rules would have grown it up to that application (the configured queues and
the queues the new rules created for the applications before it). Applications of partitions
the new config does not configure keep their configs, and so their answers: they are counted,
not placed.

An answer is the queue, or "rejected". An application whose queue and rejection stay the same is
unchanged even when another rule now finds that queue, or a rejection now has another reason.
`--since`/`--last` narrow what is reported, never what is replayed: the applications before the
window still create the queues the window's applications find.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from fleetplace.services.auditor.history import History, collection_paused
from fleetplace.services.auditor.queues import PlacementRecord, placements_in_order
from fleetplace.shared.api.queues import ApplicationSubmission, PlacementOutcome
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.envelope import format_time, parse_time
from fleetplace.shared.queueing import QueueingConfig, QueuePlacer
from fleetplace.shared.wording import plain, problems

DEFAULT_PARTITION = "default"

Progress = Callable[[int, int], None]
"""Called with (applications placed so far, applications to place)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """Where an application went (or that it was refused), and the rule that decided."""

    queue: str | None
    rule: str | None = None  # the rule type, `recovery` or `default-queue`; None when rejected
    rule_index: int | None = None  # its place in the rule list, when known
    reason: str | None = None  # the rejection code
    detail: str = ""  # the rejection in a sentence
    why: tuple[str, ...] = ()  # each rule that passed the application over, and why

    @property
    def rejected(self) -> bool:
        return self.queue is None

    @classmethod
    def of(cls, outcome: PlacementOutcome, why: Sequence[str] = ()) -> Answer:
        if outcome.queue is None:
            passed_over = tuple(line for line in why if line != outcome.detail)
            return cls(None, reason=str(outcome.reason), detail=outcome.detail, why=passed_over)
        return cls(outcome.queue, outcome.rule, outcome.rule_index)

    @classmethod
    def from_record(cls, value: Mapping[str, Any]) -> Answer:
        """The answer an `app-placements` record (or a `queues place` line) gives."""
        queue = value.get("queue")
        if value.get("rejected") or not isinstance(queue, str):
            reason, detail = value.get("reason"), value.get("detail")
            return cls(None, reason=str(reason) if reason else None, detail=str(detail or ""))
        rule = value.get("rule")
        return cls(queue, str(rule) if rule is not None else None)

    @property
    def rule_label(self) -> str:
        if self.rule is None:
            return "—"
        return self.rule if self.rule_index is None else f"{self.rule} (rule {self.rule_index})"

    def to_json(self) -> dict[str, Any]:
        if self.queue is None:
            return {"rejected": True, "reason": self.reason, "detail": self.detail, "why": list(self.why)}
        return {"queue": self.queue, "rule": self.rule, "ruleIndex": self.rule_index}


@dataclass(frozen=True, slots=True)
class RecordedApplication:
    """One application as it was submitted, the answer it got, when, and where that is written."""

    application: ApplicationSubmission
    answer: Answer
    evaluated_at: datetime | None
    where: str


class Change(StrEnum):
    MOVED = "moved"
    NEWLY_REJECTED = "newly-rejected"
    NEWLY_ACCEPTED = "newly-accepted"


@dataclass(frozen=True, slots=True)
class ChangedApplication:
    application: str
    partition: str
    user: str
    change: Change
    before: Answer
    after: Answer
    evaluated_at: datetime | None
    where: str

    def to_json(self) -> dict[str, Any]:
        return {
            "applicationID": self.application,
            "partition": self.partition,
            "user": self.user,
            "change": str(self.change),
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "evaluatedAt": None if self.evaluated_at is None else format_time(self.evaluated_at),
            "record": self.where,
        }


@dataclass
class QueueWhatIf:
    """The applications whose answer changes, in placing order, and the tallies."""

    partitions: tuple[str, ...]
    reported: int = 0  # applications in the window (placed again and compared)
    unchanged: int = 0
    replayed: int = 0  # applications placed again, before the window included
    not_evaluated: int = 0  # applications of partitions the new config does not configure
    changes: list[ChangedApplication] = field(default_factory=list)
    queues_created: list[tuple[str, str]] = field(default_factory=list)  # (partition, path)
    unreadable: list[str] = field(default_factory=list)

    def count(self, change: Change) -> int:
        return sum(1 for c in self.changes if c.change is change)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def summary(self) -> dict[str, Any]:
        return {
            "applications": self.reported,
            "unchanged": self.unchanged,
            "moved": self.count(Change.MOVED),
            "newlyRejected": self.count(Change.NEWLY_REJECTED),
            "newlyAccepted": self.count(Change.NEWLY_ACCEPTED),
            "queuesCreated": len(self.queues_created),
            "notEvaluated": self.not_evaluated,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "partitions": list(self.partitions),
            "summary": self.summary(),
            "changes": [c.to_json() for c in self.changes],
            "queuesCreated": [{"partition": p, "queue": q} for p, q in self.queues_created],
            "unreadable": self.unreadable,
        }


def _change(before: Answer, after: Answer) -> Change:
    """How an answer changed (the queues differ: at most one of them is a rejection)."""
    if before.rejected:
        return Change.NEWLY_ACCEPTED
    if after.rejected:
        return Change.NEWLY_REJECTED
    return Change.MOVED


def what_if_queues(
    recorded: Sequence[RecordedApplication],
    config: QueueingConfig,
    *,
    partition: str | None = None,
    since: datetime | None = None,
    last: int | None = None,
    progress: Progress | None = None,
    freeze: bool = True,
) -> QueueWhatIf:
    """Place `recorded` (in placing order) again under `config` and compare the answers.

    `partition` limits the what-if to one of the config's partitions; `since` reports the
    applications recorded at or after that time, `last` the last N of those replayed. `freeze`:
    what the run built is frozen out of the cyclic GC afterwards (a command that exits next);
    a long-running server passes False, so each run's placer is freed with its result.
    ValueError when `partition` is not one of the config's.
    """
    if partition is not None and partition not in config.partitions:
        raise ValueError(f"the config does not configure partition {partition!r}")
    wanted = tuple(config.partitions) if partition is None else (partition,)
    out = QueueWhatIf(wanted)
    placer = QueuePlacer(config)
    replay = [r for r in recorded if (r.application.partition or DEFAULT_PARTITION) in wanted]
    out.not_evaluated = len(recorded) - len(replay)
    first_reported = max(0, len(replay) - last) if last is not None else 0
    recorded_queues = {(r.application.partition or DEFAULT_PARTITION, r.answer.queue) for r in replay}
    created: dict[tuple[str, str], None] = {}  # an insertion-ordered set
    # what the loop builds lives on (changes, the placer's queues): keep the collector off it
    with collection_paused(freeze=freeze):
        for i, entry in enumerate(replay):
            app = entry.application
            outcome = placer.place(app)
            out.replayed += 1
            if progress is not None and (i % 4096 == 0 or i == len(replay) - 1):
                progress(i + 1, len(replay))
            if i < first_reported or (
                since is not None and (entry.evaluated_at is None or entry.evaluated_at < since)
            ):
                continue
            out.reported += 1
            queue = (app.partition or DEFAULT_PARTITION, outcome.queue or "")
            if outcome.created and queue not in recorded_queues:
                created[queue] = None
            before = entry.answer
            if outcome.queue == before.queue:
                out.unchanged += 1
                continue
            # a changed answer: say which rules passed it over when it is now refused
            after = Answer.of(outcome, placer.explain(app) if outcome.queue is None else ())
            out.changes.append(
                ChangedApplication(
                    app.application_id,
                    app.partition or DEFAULT_PARTITION,
                    app.user,
                    _change(before, after),
                    before,
                    after,
                    entry.evaluated_at,
                    entry.where,
                )
            )
    out.queues_created = list(created)
    return out


class RecordedReader:
    """Turns placements (in placing order) into recorded applications; the answers the records
    repeat are kept once each (placed answers only: rejections carry details)."""

    def __init__(self) -> None:
        self._answers: dict[tuple[object, object], Answer] = {}

    def read(self, p: PlacementRecord) -> RecordedApplication:
        """ValueError (where, and why) when the record's application is not a valid submission."""
        value = p.value
        where = f"app-placements/{p.record.partition}@{p.record.offset}"
        try:
            application = ApplicationSubmission.model_validate(value.get("application"))
        except ValidationError as e:
            raise ValueError(f"{where}: its application is not a valid submission: {problems(e)}") from None
        if value.get("rejected"):
            answer = Answer.from_record(value)
        else:
            seen = (value.get("queue"), value.get("rule"))
            answer = self._answers.get(seen) or self._answers.setdefault(seen, Answer.from_record(value))
        return RecordedApplication(application, answer, p.now, where)


def recorded_applications(
    history: History, limits: DecodeLimits = DEFAULT_LIMITS
) -> tuple[list[RecordedApplication], list[str]]:
    """The history's placements in placing order, each with the submission it carries; and the
    records that cannot be used (where, and why)."""
    out: list[RecordedApplication] = []
    reader = RecordedReader()
    with collection_paused():
        placements, unreadable = placements_in_order(history, limits)
        for p in placements:
            try:
                out.append(reader.read(p))
            except ValueError as e:
                unreadable.append(str(e))
    return out, unreadable


def recorded_from_lines(
    lines: Iterable[tuple[str, Mapping[str, Any]]], current: QueueingConfig | None
) -> list[RecordedApplication]:
    """Applications from a file, in file order: `app-placements` records (with their
    `application`), or plain submissions, whose answers are then placed afresh under `current`.
    Each entry is (where, decoded line); raises ValueError naming the line and the field."""
    out: list[RecordedApplication] = []
    placer = QueuePlacer(current) if current is not None else None
    for where, value in lines:
        if "application" in value:
            submission: Any = value["application"]
            answer: Answer | None = Answer.from_record(value)
            raw_time = value.get("evaluatedAt")
        else:
            submission, answer, raw_time = value, None, None
        try:
            application = ApplicationSubmission.model_validate(submission)
        except ValidationError as e:
            first = e.errors()[0]
            field_path = ".".join(str(part) for part in first["loc"]) or "(record)"
            raise ValueError(f"{where}: {field_path}: {plain(first)}") from None
        if answer is None:
            if placer is None:
                raise ValueError(
                    f"{where}: a submission without its recorded answer: give --current CONFIG "
                    "(the config it was placed under), or app-placements records"
                )
            answer = Answer.of(placer.place(application))
        evaluated_at = _time(raw_time, where) if isinstance(raw_time, str) else None
        out.append(RecordedApplication(application, answer, evaluated_at, where))
    return out


def _time(text: str, where: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError:
        raise ValueError(f"{where}: evaluatedAt: not an RFC 3339 time: {text!r}") from None


__all__ = [
    "Answer",
    "Change",
    "ChangedApplication",
    "QueueWhatIf",
    "RecordedApplication",
    "RecordedReader",
    "recorded_applications",
    "recorded_from_lines",
    "what_if_queues",
]
