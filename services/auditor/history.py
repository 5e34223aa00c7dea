"""The history the auditor works from: every record of the scheduler's inputs and of `decisions`,
read once from the beginning up to a snapshot of the high watermarks.

Offsets come from Fetch responses (`true_end_offsets`), never from ListOffsets or
offsets_for_times, which Tansu gets wrong (kafka-local-broker.md). Records are kept per
partition in offset order; decision records are decoded up front because batching needs their
`inputs` and `evaluatedAt`.
"""

from __future__ import annotations

import bisect
import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from fleetplace.shared.api.ocm import PLACEMENT_LABEL
from fleetplace.shared.api.sigmc import PLACEMENT_ANNOTATION, SEQ_ANNOTATION, SigmcPlacementDecision
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeError, DecodeLimits, decode_object
from fleetplace.shared.bus.envelope import H_SOURCE, parse_time
from fleetplace.shared.bus.kafka import TP, BroadcastReader, true_end_offsets
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import (
    APP_PLACEMENTS,
    APPLICATIONS,
    DECISIONS,
    PLACEMENT_DECISIONS,
    QUEUE_CONFIGS,
    ROLLOUT_DECISIONS,
    ROLLOUT_STATUS,
    ROLLOUTS,
    SIGMC_PLACEMENT_DECISIONS,
    Topics,
    TopicState,
    describe_catalogue,
)
from fleetplace.shared.settings import KafkaSettings

# The scheduler's inputs, as its processor names them (topic names without the prefix).
INPUT_TOPICS = (
    "clusters",
    "cluster-profiles",
    "taints",
    "scores",
    "clustersets",
    "clustersetbindings",
    "placements",
)
# Inputs a deployment made before they existed does not have: read when they exist.
OPTIONAL_INPUTS = ("cluster-profiles",)
# The queue placer's inputs.
QUEUE_INPUTS = (QUEUE_CONFIGS, APPLICATIONS)
# The rollout worker's inputs, then its diff log.
ROLLOUT_TOPICS = (PLACEMENT_DECISIONS, ROLLOUTS, ROLLOUT_STATUS, ROLLOUT_DECISIONS)

Progress = Callable[[int, int], None]
"""Called with (records read so far, records to read)."""


class HistoryError(Exception):
    """The topics cannot be audited (missing, unreadable)."""


@contextmanager
def collection_paused(*, freeze: bool = True) -> Iterator[None]:
    """Keep the cyclic GC off a history while it is built, and after. Its ~100,000 records and
    decoded diffs all live on, but the collector, triggered by allocation counts, would rescan
    the growing heap again and again (about half the cost of building it), then scan it once
    more per generation when let loose. What is built is frozen instead (`gc.freeze`, as `audit`
    does for the walk; its `gc.unfreeze` hands everything back to the collector). Without
    `freeze`, for work whose objects are short-lived: the collector is only held off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


@dataclass(slots=True, eq=True, repr=False)
class DecisionRecord:
    """One DecisionDiff as read from `decisions`, with where it is and who wrote it (read-only
    by convention; unhashable: it holds a dict)."""

    key: str
    partition: int
    offset: int
    source: str  # the CloudEvents source: one scheduler instance
    value: Mapping[str, Any]
    seq: int
    evaluated_at: str  # as written: part of the batch identity
    now: datetime
    inputs: tuple[tuple[str, int], ...]  # sorted `inputs` items

    def __repr__(self) -> str:
        return f"DecisionRecord(key={self.key!r}, seq={self.seq}, where={self.where!r})"

    @property
    def deleted(self) -> bool:
        return bool(self.value.get("deleted", False))

    @property
    def trigger(self) -> Mapping[str, Any]:
        trigger = self.value.get("trigger")
        return trigger if isinstance(trigger, Mapping) else {}

    @property
    def where(self) -> str:
        return f"decisions/{self.partition}@{self.offset}"


@dataclass(frozen=True, slots=True)
class InvalidDecision:
    """A record on `decisions` that is not a DecisionDiff: nothing a worker publishes."""

    key: str | None
    partition: int
    offset: int
    error: str


@dataclass
class BatchFields:
    """What the diffs of one evaluation batch all carry (`inputs`, `evaluatedAt`, the source),
    parsed once per history and shared by its records: sorting a watermark of a few dozen
    partitions for every diff was most of the cost of reading `decisions`."""

    inputs: dict[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]] = field(default_factory=dict)
    times: dict[str, datetime] = field(default_factory=dict)
    sources: dict[bytes, str] = field(default_factory=dict)

    def sorted_inputs(self, inputs: dict[str, Any]) -> tuple[tuple[str, int], ...] | None:
        """The items sorted, shared by every diff of a batch; None if an offset is not an int."""
        items = tuple(inputs.items())
        for item in items:  # every time: True and 1.0 would find 1's entry
            if type(item[1]) is not int:
                return None
        found = self.inputs.get(items)
        if found is None:
            ordered = tuple(sorted(items))
            found = self.inputs[items] = self.inputs.setdefault(ordered, ordered)
        return found

    def time(self, text: str) -> datetime:
        found = self.times.get(text)
        if found is None:
            found = self.times[text] = parse_time(text)
        return found

    def source(self, raw: bytes | None) -> str:
        if raw is None:
            return ""
        found = self.sources.get(raw)
        if found is None:
            found = self.sources[raw] = raw.decode("utf-8", "replace")
        return found


def parse_decision(
    record: Record, limits: DecodeLimits = DEFAULT_LIMITS, batch_fields: BatchFields | None = None
) -> DecisionRecord | None:
    """A DecisionRecord, or None for a tombstone; ValueError (or DecodeError) says what is wrong.
    `batch_fields` shares what the diffs of a batch have in common (a fresh one when not given)."""
    shared = batch_fields if batch_fields is not None else BatchFields()
    value = decode_object(record.value, limits)
    if value is None:
        return None
    key = value.get("placement")
    seq = value.get("seq")
    evaluated_at = value.get("evaluatedAt")
    inputs = value.get("inputs")
    if not isinstance(key, str) or key != record.key:
        raise ValueError(f"placement {key!r} does not match the record key {record.key!r}")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise ValueError(f"seq must be a positive integer, got {seq!r}")
    if not isinstance(evaluated_at, str):
        raise ValueError("evaluatedAt is missing")
    ordered = shared.sorted_inputs(inputs) if isinstance(inputs, dict) else None
    if ordered is None:
        raise ValueError("inputs must map '<topic>/<partition>' to offsets")
    return DecisionRecord(
        key,
        record.partition,
        record.offset,
        shared.source(record.header(H_SOURCE)),
        value,
        seq,
        evaluated_at,
        shared.time(evaluated_at),
        ordered,
    )


@dataclass(repr=False)
class History:
    """Input records per partition (offset order) and the parsed decision records."""

    partitions: dict[TP, list[Record]] = field(default_factory=dict)
    decisions: list[DecisionRecord] = field(default_factory=list)
    invalid: list[InvalidDecision] = field(default_factory=list)
    app_placements: list[Record] = field(default_factory=list)
    sigmc: list[Record] = field(default_factory=list)  # SIG-MC slices: their reasons are checked
    ends: dict[TP, int] = field(default_factory=dict)  # snapshot high watermarks (short names)
    records_read: int = 0
    _offsets: dict[TP, list[int]] = field(default_factory=dict)
    _at: dict[tuple[int, int], DecisionRecord] = field(default_factory=dict)
    _by_seq: dict[tuple[str, int], DecisionRecord] | None = None
    _batch_fields: BatchFields = field(default_factory=BatchFields)
    _unsealed: set[TP] = field(default_factory=set)  # partitions added to since the last seal
    _sealed_decisions: int = 0  # how many decisions the last seal sorted

    def __repr__(self) -> str:
        # not the records: asyncio.run formats the repr of its main task, result included, when
        # it restores the SIGINT handler (Python 3.11), which took seconds for 100,000 records
        return f"History({self.records_read} records, {len(self.decisions)} decisions)"

    @classmethod
    def of(
        cls,
        records: Iterable[Record],
        prefix: str = "",
        limits: DecodeLimits = DEFAULT_LIMITS,
    ) -> History:
        """A history from records in any order (tests and tools; `read_history` for a broker)."""
        history = cls()
        with collection_paused():
            for record in records:
                history.add(record, prefix, limits)
        history.seal()
        return history

    def add(self, record: Record, prefix: str = "", limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        topic = record.topic[len(prefix) :] if prefix and record.topic.startswith(prefix) else record.topic
        self.records_read += 1
        if topic == DECISIONS:
            try:
                parsed = parse_decision(record, limits, self._batch_fields)
            except (DecodeError, ValueError) as e:
                self.invalid.append(InvalidDecision(record.key, record.partition, record.offset, str(e)))
                parsed = None
            if parsed is not None:
                self.decisions.append(parsed)
                self._at[(parsed.partition, parsed.offset)] = parsed
            # decisions are scheduler inputs too (Balance, the checkpoint): keep the raw record
        elif topic == APP_PLACEMENTS:
            self.app_placements.append(record)
            return
        elif topic == SIGMC_PLACEMENT_DECISIONS:
            self.sigmc.append(record)
            return
        tp = (topic, record.partition)
        self.partitions.setdefault(tp, []).append(record)
        self._unsealed.add(tp)

    def seal(self) -> None:
        """Sort what was added since the last seal; call it after the last `add` (the explorer,
        which keeps adding, calls it after each batch: only the partitions that grew are sorted)."""
        for tp in self._unsealed:
            records = self.partitions[tp]
            records.sort(key=lambda r: r.offset)
            self._offsets[tp] = [r.offset for r in records]
        self._unsealed.clear()
        if len(self.decisions) != self._sealed_decisions:
            self.decisions.sort(key=lambda d: (d.partition, d.offset))
            self._sealed_decisions = len(self.decisions)
            self._by_seq = None

    # ---- lookups -------------------------------------------------------------------------
    def recorded_reasons(
        self, limits: DecodeLimits = DEFAULT_LIMITS
    ) -> dict[tuple[str, int], dict[str, str]]:
        """(placement, seq) -> cluster -> the reason the SIG-MC slices written for that decision
        give (slices carry their decision's seq); empty without the SIG-MC topic."""
        out: dict[tuple[str, int], dict[str, str]] = {}
        for record in self.sigmc:
            if record.value is None:
                continue
            try:
                piece = SigmcPlacementDecision.model_validate(decode_object(record.value, limits))
            except (DecodeError, ValidationError):
                continue
            meta = piece.metadata
            seq = meta.annotations.get(SEQ_ANNOTATION, "")
            # the label is the placement's name unless it had to be shortened (docs/names.md)
            placement = meta.annotations.get(PLACEMENT_ANNOTATION) or meta.labels.get(PLACEMENT_LABEL)
            if not seq.isdigit() or placement is None:
                continue
            reasons = out.setdefault((f"{meta.namespace}/{placement}", int(seq)), {})
            for entry in piece.decisions:
                reasons[entry.cluster_profile_ref.name] = entry.reason
        return out

    def records(self, tp: TP) -> list[Record]:
        return self.partitions.get(tp, [])

    def index_of(self, tp: TP, offset: int) -> int:
        """How many records of the partition lie below `offset`."""
        return bisect.bisect_left(self._offsets.get(tp, []), offset)

    def decision_at(self, partition: int, offset: int) -> DecisionRecord | None:
        """The parsed decision record at a `decisions` offset (None: a tombstone or not a diff)."""
        return self._at.get((partition, offset))

    def decision(self, key: str, seq: int) -> DecisionRecord | None:
        """The (first) record of a placement's seq."""
        if self._by_seq is None:
            by_seq: dict[tuple[str, int], DecisionRecord] = {}
            for d in self.decisions:
                by_seq.setdefault((d.key, d.seq), d)
            self._by_seq = by_seq
        return self._by_seq.get((key, seq))

    def gaps(self) -> dict[TP, int]:
        """Partitions whose offsets are not contiguous from 0: compaction or deletion removed
        records, so older states cannot be rebuilt exactly. Value: the first missing offset."""
        out: dict[TP, int] = {}
        for tp, offsets in self._offsets.items():
            for i, offset in enumerate(offsets):
                if offset != i:
                    out[tp] = i
                    break
        return out


async def read_history(
    kafka: KafkaSettings | str,
    topics: Topics,
    *,
    limits: DecodeLimits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> History:
    """Read the scheduler's inputs and `decisions` — and, if `app-placements` exists, it and the
    queue placer's inputs; if the rollout topics exist, them — from the beginning up to the
    high watermarks measured at start."""
    statuses = {s.spec.name: s for s in await describe_catalogue(kafka, topics)}
    missing = [
        name
        for name in (*INPUT_TOPICS, DECISIONS)
        if statuses[name].state is TopicState.MISSING and name not in OPTIONAL_INPUTS
    ]
    if missing:
        raise HistoryError(
            f"topics do not exist under prefix {topics.prefix!r}: {', '.join(topics.name(m) for m in missing)}"
        )
    wanted = [t for t in (*INPUT_TOPICS, DECISIONS) if statuses[t].state is not TopicState.MISSING]
    if statuses[SIGMC_PLACEMENT_DECISIONS].state is not TopicState.MISSING:
        wanted.append(SIGMC_PLACEMENT_DECISIONS)
    if statuses[APP_PLACEMENTS].state is not TopicState.MISSING:
        # queue placements, and what they were placed from
        wanted += [t for t in QUEUE_INPUTS if statuses[t].state is not TopicState.MISSING]
        wanted.append(APP_PLACEMENTS)
    if all(statuses[t].state is not TopicState.MISSING for t in ROLLOUT_TOPICS):
        wanted += ROLLOUT_TOPICS  # rollouts, and what they were decided from
    history = History()
    await read_topics(kafka, topics, wanted, history, limits=limits, progress=progress)
    return history


async def read_topics(
    kafka: KafkaSettings | str,
    topics: Topics,
    names: Sequence[str],
    history: History,
    *,
    limits: DecodeLimits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> None:
    """Add every record of these topics (names without the prefix), from the beginning up to the
    high watermarks measured at start, to `history`, and seal it."""
    reader = BroadcastReader(kafka, topics.names(list(names)), max_records=50_000)
    await reader.start()
    try:
        ends = await true_end_offsets(kafka, reader.partitions)
        history.ends.update({(topics.unprefixed(t), p): n for (t, p), n in ends.items()})
        await read_into(
            reader, history, ends, topics.prefix, limits, progress=progress, total=sum(ends.values())
        )
    finally:
        await reader.stop()
    history.seal()


async def read_into(
    reader: BroadcastReader,
    history: History,
    stops: Mapping[TP, int],
    prefix: str,
    limits: DecodeLimits = DEFAULT_LIMITS,
    *,
    progress: Progress | None = None,
    total: int = 0,
    give_up_when_stuck: bool = False,
) -> None:
    """Add every record of the reader's partitions below `stops` (full topic names) to `history`
    (unsealed). Partitions absent from `stops`, and each one once it gets there, are paused.
    `give_up_when_stuck`: a HistoryError when a partition stops moving short of its stop (the
    reader's `stuck`), instead of waiting for it."""
    wanted = {tp: n for tp, n in stops.items() if n > 0}
    idle = [tp for tp in reader.partitions if tp not in wanted]
    if idle:
        reader.pause(idle)
    remaining = set(wanted)
    with collection_paused():
        while remaining:
            batch = await reader.poll()
            for record in batch.records:
                if record.offset < wanted.get((record.topic, record.partition), 0):
                    history.add(record, prefix, limits)
            done = {tp for tp in remaining if reader.watermark.next_offset(*tp) >= wanted[tp]}
            if done:
                reader.pause(done)
                remaining -= done
            if progress is not None:
                progress(history.records_read, total)
            if batch.caught_up:
                break  # at the end of everything (offsets past the last record, e.g. control records)
            if give_up_when_stuck and (stuck := [tp for tp in reader.stuck() if tp in remaining]):
                raise HistoryError(
                    f"{', '.join(f'{t}/{p}' for t, p in stuck)}: no records short of the end read"
                )
