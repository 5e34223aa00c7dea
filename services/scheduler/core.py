"""The scheduler worker's processor: state stores, trigger fan-out, timers and decision diffs.

No I/O and no clock here: the Kafka shell (`fleetplace.services.scheduler.worker`) feeds decoded records
in, asks for the placements that are due, and publishes what `evaluate` returns. The same
processor therefore runs in the worker, in the auditor and in tests.

Pipeline per record: decode → validate → apply to state → find affected placements (dirty).
Per batch: evaluate each dirty placement once, in namespace/name order → diff against the last
published decision → DecisionDiff (or nothing when nothing changed).
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from fleetplace.shared.api.admission import admit
from fleetplace.shared.api.cluster_profiles import (
    ClusterProfile,
    chosen_document,
    managed_cluster_document,
    winning_namespace,
)
from fleetplace.shared.api.cluster_sources import merged_taints
from fleetplace.shared.api.decisions import SCHEMA_VERSION, DecisionDiff, DecisionGroup, DecisionTrigger
from fleetplace.shared.api.objects import ObjectError, parse_object
from fleetplace.shared.api.ocm import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    ManagedClusterSpec,
    Placement,
    Taint,
    TaintSet,
    decision_page_name,
    placement_label_value,
)
from fleetplace.shared.api.sigmc import PLACEMENT_ANNOTATION, slice_count, slice_names, slices
from fleetplace.shared.placement import PlacementEngine, ScheduleResult
from fleetplace.shared.placement.fleet import ClusterInfo, SetSelectorError
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.placement.reads import ClusterChange, Reads
from fleetplace.shared.placement.reasons import decision_reasons
from fleetplace.shared.placement.scheduler import reads_of

# topic (without prefix) -> the kind its values must be
STATE_TOPICS: dict[str, str] = {
    "clusters": "ManagedCluster",
    "cluster-profiles": "ClusterProfile",
    "scores": "AddOnPlacementScore",
    "clustersets": "ManagedClusterSet",
    "clustersetbindings": "ManagedClusterSetBinding",
    "placements": "Placement",
}


class InvalidRecord(ValueError):
    """A record that cannot be applied; the reason goes to the dead-letter topic."""


@dataclass(frozen=True, slots=True)
class TopicTaints:
    """One cluster's taints from the taints topic, with what merging them into each version of
    the cluster reads, worked out once per taints record rather than once per cluster record."""

    taints: list[Taint]
    keys: frozenset[tuple[str, str]]  # (key, effect): the topic's taint wins over the object's
    docs: tuple[dict[str, Any], ...]  # as written in a ManagedCluster's spec.taints

    @classmethod
    def of(cls, taints: list[Taint]) -> TopicTaints:
        return cls(
            taints,
            frozenset((t.key, t.effect) for t in taints),
            tuple(t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in taints),
        )


def format_time(t: datetime) -> str:
    return (
        t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if t.microsecond == 0
        else t.astimezone(UTC).isoformat().replace("+00:00", "Z")
    )


Trigger = DecisionTrigger  # what made a placement dirty, recorded in its diff


@dataclass(slots=True, repr=False)
class Published:
    """The last decision published for one placement (the checkpoint, from the decisions topic).
    Equal by value; unhashable: it holds dicts."""

    seq: int
    decisions: tuple[str, ...]
    groups: tuple[tuple[str, int, tuple[str, ...]], ...]
    status: Mapping[str, Any]
    deleted: bool = False
    scores: Mapping[str, int] = field(default_factory=dict)
    evaluated_at: float = 0.0
    sort_by_score: bool = False

    def __repr__(self) -> str:
        return f"Published(seq={self.seq}, decisions={self.decisions!r}, deleted={self.deleted})"

    def decision_scores(self) -> dict[str, int]:
        return {c: s for c, s in self.scores.items() if c in set(self.decisions)}

    @classmethod
    def of(cls, diff: DecisionDiff) -> Published:
        """What the checkpoint keeps of a diff; ValueError if its `evaluatedAt` is not a time."""
        return cls(
            diff.seq,
            diff.decisions,
            tuple((g.group_name, g.group_index, g.clusters) for g in diff.groups),
            diff.status,
            diff.deleted,
            diff.scores,
            _timestamp(diff.evaluated_at) if diff.evaluated_at else 0.0,
            diff.sort_by == "Score",
        )

    @classmethod
    def from_diff(cls, value: Mapping[str, Any]) -> Published:
        """`of` a record value; InvalidDecisionDiff (a ValueError) if it is not a DecisionDiff."""
        return cls.of(DecisionDiff.from_value(value))


def _in_force(last: Published | None) -> set[str]:
    """The clusters of the decision in force (none before the first, or once deleted)."""
    return set(last.decisions) if last is not None and not last.deleted else set()


_TIMESTAMPS: dict[str, float] = {}  # evaluatedAt -> POSIX time: every diff of a batch has the same


def _timestamp(text: str) -> float:
    found = _TIMESTAMPS.get(text)
    if found is None:
        found = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        if len(_TIMESTAMPS) >= 4096:
            _TIMESTAMPS.clear()
        _TIMESTAMPS[text] = found
    return found


@dataclass(order=True)
class _Timer:
    at: float
    key: str = field(compare=False)
    kind: str = field(compare=False)


@dataclass
class SchedulerOptions:
    # placements scored by an AddOn are re-evaluated every 5 minutes, as OCM resyncs them: a score
    # can expire (validUntil) without any record arriving
    addon_resync_s: float = 300.0
    full_resync_s: float = 600.0  # like OCM's informer resync
    engine: EngineOptions = DEFAULT_OPTIONS  # beyond-OCM switches (all off: decisions equal OCM's)
    # SIG-MC PlacementDecision slices (`sigmc_changes`), the namespace they reference a
    # ManagedCluster's profile in (empty: the placement's), and reasons in OCM's PlacementDecisions
    sigmc: bool = False
    sigmc_cluster_namespace: str = ""
    ocm_reasons: bool = False


@dataclass(frozen=True, slots=True)
class Pending:
    """What publishing a new decision needs besides the diff: the decision it replaces (None: the
    placement had none) and why each cluster was chosen (empty unless an output shows reasons)."""

    before: Published | None
    reasons: Mapping[str, str]


def _rate_limit_seconds(text: str) -> float:
    """`scoreRateLimit` (`^[0-9]+[hms]$`, CRD default `1m`)."""
    m = re.fullmatch(r"([0-9]+)([hms])", text or "")
    if m is None:
        return 60.0
    return float(int(m.group(1)) * {"h": 3600, "m": 60, "s": 1}[m.group(2)])


def _same_membership(
    last: Published, groups: tuple[tuple[str, int, tuple[str, ...]], ...], status: Mapping[str, Any]
) -> bool:
    """The same clusters in the same groups, whatever their order inside each group."""
    old = [(n, i, frozenset(c)) for n, i, c in last.groups]
    new = [(n, i, frozenset(c)) for n, i, c in groups]
    return old == new and dict(last.status) == dict(status)


def _status_json(result: ScheduleResult) -> dict[str, Any]:
    return {
        "numberOfSelectedClusters": result.number_selected,
        "conditions": [c.to_json() for c in result.conditions],
    }


_SCORES_CALL = re.compile(r"\bscores\s*\(")


def _uses_cel_scores(p: Placement) -> bool:
    for pred in p.spec.predicates:
        cel = pred.required_cluster_selector.cel_selector
        if cel is not None and any(_SCORES_CALL.search(e) for e in cel.cel_expressions):
            return True
    return False


class SchedulerProcessor:
    """State stores + dirty set + timers for the placements this instance owns."""

    def __init__(
        self,
        options: SchedulerOptions | None = None,
        owns: Any = None,
        *,
        fan_out: bool = True,
        admission: bool = True,
        dropped: Callable[[str, list[str]], None] | None = None,
    ) -> None:
        self.options = options or SchedulerOptions()
        # Whether a record's object gets the API server's defaults and validation before it is
        # applied (as the worker does), or is applied exactly as written (`simulate --as-written`).
        self.admission = admission
        # Told the topic and the paths of the unknown fields admission dropped from a record's
        # object (the worker counts them); one callback per topic, made once.
        self._dropped: dict[str, Callable[[list[str]], None]] = (
            {} if dropped is None else {topic: functools.partial(dropped, topic) for topic in STATE_TOPICS}
        )
        # Whether applying a record looks for the placements it affects. Off where nothing is
        # evaluated from the dirty set (the auditor's replay): the search is most of the cost of
        # applying a cluster record, and the state stores are the same either way.
        self.fan_out = fan_out
        self.engine = PlacementEngine(options=self.options.engine)
        self.fleet = self.engine.fleet
        self.published: dict[str, Published] = {}
        # the document each cluster is read from (`cluster_profiles.chosen_document`), and its sources
        self._raw_clusters: dict[str, Mapping[str, Any]] = {}
        self._managed: dict[str, dict[str, Any]] = {}  # name -> admitted ManagedCluster
        self._profiles: dict[str, dict[str, dict[str, Any]]] = {}  # name -> namespace -> document
        self._topic_taints: dict[str, TopicTaints] = {}
        self._bindings_by_set: dict[str, set[str]] = {}  # set name -> namespaces binding it
        self._by_namespace: dict[str, set[str]] = {}
        self._reads: dict[str, Reads] = {}
        self._by_addon: dict[str, set[str]] = {}
        self._cel_scores: set[str] = set()
        self._cel_keys: set[str] = set()  # placements with CEL predicates
        self.dirty: dict[str, Trigger] = {}
        self._order: list[str] | None = None  # the dirty keys sorted, while none is added or dropped
        self._timers: list[_Timer] = []
        self._timer_due: dict[tuple[str, str], float] = {}
        self.owns = owns or (lambda key: True)
        self._last_full_resync: float | None = None
        self._forms: dict[str, tuple[Any, ...]] = {}  # see _published_form
        # per placement with a diff not yet published: see `take_pending`
        self._pending: dict[str, Pending] = {}
        self._wants_reasons = self.options.sigmc or self.options.ocm_reasons

    # ---- applying records -----------------------------------------------------------------
    def apply(self, topic: str, key: str, value: Mapping[str, Any] | None) -> None:
        """Apply one decoded record; raises InvalidRecord (to be dead-lettered) on bad input."""
        if topic == "decisions":
            self._apply_decision(key, value)
        elif topic == "taints":
            self._apply_taints(key, value)
        elif topic in STATE_TOPICS:
            self._apply_state(topic, key, value)
        else:
            raise InvalidRecord(f"topic {topic!r} is not an input of the scheduler")

    def _parse(self, topic: str, key: str, value: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        kind = STATE_TOPICS[topic]
        if value.get("kind") != kind:
            raise InvalidRecord(f"{topic}: expected kind {kind}, got {value.get('kind')!r}")
        try:
            # the API server's defaults and validation, so the bus means what a cluster would
            where = f"{topic}/{key}"
            admitted = (
                admit(value, where, dropped=self._dropped.get(topic)) if self.admission else dict(value)
            )
            obj = parse_object(admitted, where)
        except ObjectError as e:
            raise InvalidRecord(str(e)) from None
        meta = obj.metadata
        expected = (
            f"{meta.namespace}/{meta.name}"
            if topic in ("scores", "clustersetbindings", "placements", "cluster-profiles")
            else meta.name
        )
        if key != expected:
            raise InvalidRecord(f"{topic}: key {key!r} does not match the object ({expected!r})")
        return obj, admitted

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        ns, sep, name = key.partition("/")
        if not sep or not ns or not name or "/" in name:
            raise InvalidRecord(f"key {key!r} is not '<namespace>/<name>'")
        return ns, name

    def _apply_state(self, topic: str, key: str, value: Mapping[str, Any] | None) -> None:
        if value is None:
            self._delete_state(topic, key)
            return
        obj, admitted = self._parse(topic, key, value)
        if isinstance(obj, ManagedCluster):
            self._managed[key] = admitted
            self._refresh_source(key, obj)
        elif isinstance(obj, ClusterProfile):
            meta = obj.metadata
            self._profiles.setdefault(meta.name, {})[meta.namespace] = managed_cluster_document(obj)
            self._refresh_source(meta.name)
        elif isinstance(obj, AddOnPlacementScore):
            self.fleet.upsert_score(obj)
            self._dirty_for_score(obj.metadata.namespace, obj.metadata.name)
        elif isinstance(obj, ManagedClusterSet):
            self.fleet.upsert_set(obj)
            self._dirty_for_set(key, Trigger("clusterset", key))
        elif isinstance(obj, ManagedClusterSetBinding):
            self.fleet.upsert_binding(obj)
            self._bindings_by_set.setdefault(obj.metadata.name, set()).add(obj.metadata.namespace)
            self._dirty_for_binding(obj.metadata.namespace, obj.metadata.name, Trigger("binding", key))
        elif isinstance(obj, Placement):
            self._index_placement(key, obj)
            self.fleet.upsert_placement(obj)
            self.mark(key, Trigger("placement", key))

    def _delete_state(self, topic: str, key: str) -> None:
        if topic == "clusters":
            if self._managed.pop(key, None) is not None:
                self._refresh_source(key)
        elif topic == "cluster-profiles":
            ns, name = self._split(key)
            profiles = self._profiles.get(name)
            if profiles is not None and profiles.pop(ns, None) is not None:
                if not profiles:
                    del self._profiles[name]
                self._refresh_source(name)
        elif topic == "scores":
            ns, name = self._split(key)
            self.fleet.delete_score(ns, name)
            self._dirty_for_score(ns, name)
        elif topic == "clustersets":
            self.fleet.delete_set(key)
            self._dirty_for_set(key, Trigger("clusterset", key))
        elif topic == "clustersetbindings":
            ns, name = self._split(key)
            self.fleet.delete_binding(ns, name)
            self._bindings_by_set.get(name, set()).discard(ns)
            self._dirty_for_binding(ns, name, Trigger("binding", key))
        elif topic == "placements":
            self._split(key)
            gone = self.fleet.placements.get(key)
            if gone is not None:
                self._unindex_placement(key, gone)
            self.fleet.delete_placement(key)
            self.mark(key, Trigger("placement", key))

    def _apply_taints(self, key: str, value: Mapping[str, Any] | None) -> None:
        if value is None:
            self._topic_taints.pop(key, None)
        else:
            try:
                self._topic_taints[key] = TopicTaints.of(TaintSet.model_validate(value).taints)
            except ValidationError as e:
                problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
                raise InvalidRecord(f"taints/{key}: {problems}") from None
        if key in self._raw_clusters:
            before = self.fleet.clusters.get(key)
            self._refresh_cluster(key)
            self._dirty_for_cluster(key, before, "taint")

    def _refresh_source(self, name: str, parsed: ManagedCluster | None = None) -> None:
        """The cluster `name` read again from the source that stands for it (a ManagedCluster, else
        its profile: `chosen_document`), after one of its sources changed. `parsed`: the
        ManagedCluster just applied, already parsed."""
        old = self.fleet.clusters.get(name)
        managed = self._managed.get(name)
        chosen = chosen_document(managed, self._profiles.get(name, {}))
        if chosen is None:
            self._raw_clusters.pop(name, None)
            self.fleet.delete_cluster(name)
        else:
            self._raw_clusters[name] = chosen
            self._refresh_cluster(name, parsed if chosen is managed else None)
        if old is not None or chosen is not None:
            self._dirty_for_cluster(name, old, "cluster")

    def _refresh_cluster(self, name: str, parsed: ManagedCluster | None = None) -> None:
        """Effective taints = spec.taints ∪ the taints topic; the topic wins on key+effect (design).
        `parsed`: the stored object already parsed, used as it is when the topic adds no taints."""
        raw = self._raw_clusters[name]
        topic = self._topic_taints.get(name)
        if (topic is None or not topic.taints) and parsed is not None:
            self.fleet.upsert_cluster(parsed, raw)
            return
        merged: ManagedCluster | None = None
        if topic is not None and topic.taints:
            spec = dict(raw.get("spec") or {})
            spec["taints"] = merged_taints(spec.get("taints"), topic.docs, topic.keys)
            raw = {**raw, "spec": spec}
            if parsed is not None:
                # only the spec differs from the object parsed from the record: parse that alone
                # (a failure, which valid parts cannot give, is left to the whole parse below)
                try:
                    merged = parsed.model_copy(update={"spec": ManagedClusterSpec.model_validate(spec)})
                except ValidationError:
                    merged = None
        obj = merged if merged is not None else parse_object(raw, f"clusters/{name}")
        assert isinstance(obj, ManagedCluster)
        self.fleet.upsert_cluster(obj, raw)

    def holds(self, key: str, seq: int) -> bool:
        """Whether the decision `seq` of this placement (or a later one) is already applied."""
        last = self.published.get(key)
        return last is not None and seq <= last.seq

    def _apply_decision(self, key: str, value: Mapping[str, Any] | None) -> None:
        """Decisions of every placement: Balance reads them all; ours are the checkpoint."""
        if value is None:
            return
        try:
            pub = Published.from_diff(value)
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidRecord(f"decisions/{key}: not a DecisionDiff: {e}") from None
        if self.holds(key, pub.seq):
            return  # already applied (our own record coming back, or a duplicate)
        self.published[key] = pub
        if pub.deleted:
            self.engine.forget(key)
        else:
            self.engine.set_decision(key, pub.decisions)

    # ---- fan-out: the placements a record can change the decision of -----------------------
    def mark(self, key: str, trigger: Trigger) -> None:
        if self.owns(key) and key not in self.dirty:
            self.dirty[key] = trigger
            self._order = None

    def _index_placement(self, key: str, p: Placement) -> None:
        old = self.fleet.placements.get(key)
        if old is not None:
            self._unindex_placement(key, old)
        self._by_namespace.setdefault(p.metadata.namespace, set()).add(key)
        reads = self._reads[key] = reads_of(p, self.options.engine)
        if reads.cel:
            self._cel_keys.add(key)
        for res in reads.addon_resources:
            self._by_addon.setdefault(res, set()).add(key)
        if _uses_cel_scores(p):
            self._cel_scores.add(key)

    def prepare(self, deadline: float) -> bool:
        """Do ahead the CEL predicate verdicts of the dirty placements that have CEL, in evaluation
        order, until `deadline` (time.perf_counter()); True when none is left (see
        `scheduler.prepare`). Placements without CEL cost nothing here."""
        for key in sorted(self.dirty.keys() & self._cel_keys):
            if not self.engine.prepare(key, deadline):
                return False
        return True

    def _unindex_placement(self, key: str, p: Placement) -> None:
        reads = self._reads.pop(key, None)
        self._cel_keys.discard(key)
        self._by_namespace.get(p.metadata.namespace, set()).discard(key)
        for res in reads.addon_resources if reads is not None else ():
            self._by_addon.get(res, set()).discard(key)
        self._cel_scores.discard(key)

    def _dirty_for_binding(
        self, namespace: str, set_name: str, trigger: Trigger, change: ClusterChange | None = None
    ) -> None:
        if not self.fan_out:
            return
        for key in self._by_namespace.get(namespace, ()):
            if key in self.dirty or not self.owns(key):
                continue
            sets = self.fleet.placements[key].spec.cluster_sets
            if (not sets or set_name in sets) and (change is None or change.affects(self._reads[key])):
                self.mark(key, trigger)

    def _dirty_for_set(self, set_name: str, trigger: Trigger, change: ClusterChange | None = None) -> None:
        for ns in sorted(self._bindings_by_set.get(set_name, ())):
            self._dirty_for_binding(ns, set_name, trigger, change)

    def _sets_of(self, labels: Mapping[str, str] | None) -> list[str]:
        if labels is None:
            return []
        try:
            return self.fleet.sets_of_cluster(labels)
        except SetSelectorError:
            # one broken set: fall back to every set (OCM enqueues nothing at all; we do better)
            return list(self.fleet.sets)

    def _dirty_for_cluster(self, name: str, old: ClusterInfo | None, kind: str) -> None:
        """A set whose membership changed enqueues every placement bound to it (as OCM does on a
        cluster event); otherwise, narrower than OCM, only placements that read what changed (see
        `ClusterChange`). The trigger (`kind`, `name`) is made here, only when something changed."""
        if not self.fan_out:
            return
        new = self.fleet.clusters.get(name)
        new_sets = set(self._sets_of(new.labels if new else None))
        old_sets = set(self._sets_of(old.labels if old else None))
        change = ClusterChange.between(old, new)
        if change.nothing:
            return
        trigger = Trigger(kind, name)
        for s in sorted(new_sets | old_sets):
            moved = s in new_sets ^ old_sets
            self._dirty_for_set(s, trigger, None if moved else change)

    def _dirty_for_score(self, cluster: str, resource: str) -> None:
        if not self.fan_out:
            return
        info = self.fleet.clusters.get(cluster)
        if info is None:
            return
        trigger = Trigger("score", f"{cluster}/{resource}")  # the record's key
        namespaces: set[str] = set()
        for s in self._sets_of(info.labels):
            namespaces.update(self._bindings_by_set.get(s, ()))
        for key in sorted(self._by_addon.get(resource, set()) | self._cel_scores):
            if key in self.fleet.placements and self.fleet.placements[key].metadata.namespace in namespaces:
                self.mark(key, trigger)

    # ---- time -----------------------------------------------------------------------------
    def _arm(self, key: str, kind: str, at: float) -> None:
        due = self._timer_due.get((key, kind))
        if due is not None and due <= at:
            return  # a timer armed again keeps its earliest due time, as a delaying work queue does
        self._timer_due[(key, kind)] = at
        heapq.heappush(self._timers, _Timer(at, key, kind))

    def tick(self, now: datetime) -> None:
        """Fire the timers that are due at `now` (whichever clock drives it)."""
        ts = now.timestamp()
        while self._timers and self._timers[0].at <= ts:
            t = heapq.heappop(self._timers)
            if self._timer_due.get((t.key, t.kind)) != t.at:
                continue  # superseded
            del self._timer_due[(t.key, t.kind)]
            if t.key in self.fleet.placements:
                self.mark(t.key, Trigger(t.kind, t.key))
        if self._last_full_resync is None:
            self._last_full_resync = ts
        elif ts - self._last_full_resync >= self.options.full_resync_s:
            self._last_full_resync = ts
            for key in self.fleet.placements:
                self.mark(key, Trigger("resync", key))

    def next_timer(self) -> float | None:
        while (
            self._timers
            and self._timer_due.get((self._timers[0].key, self._timers[0].kind)) != self._timers[0].at
        ):
            heapq.heappop(self._timers)
        return self._timers[0].at if self._timers else None

    def mark_all(self, kind: str = "startup") -> None:
        for key in self.fleet.placements:
            self.mark(key, Trigger(kind, key))
        for key, pub in self.published.items():  # placements deleted while we were away
            if key not in self.fleet.placements and not pub.deleted:
                self.mark(key, Trigger(kind, key))

    def _arm_after(self, key: str, result: ScheduleResult, now: datetime) -> datetime | None:
        """Arm the requeues the run's plugins asked for (each under its trigger kind) and, for a
        placement that reads AddOn scores, the periodic resync; returns the earliest requeue."""
        nxt: datetime | None = None
        for requeue in result.requeues:
            self._arm(key, requeue.trigger, requeue.at.timestamp())
            nxt = requeue.at if nxt is None or requeue.at < nxt else nxt
        if self._reads[key].addon_resources and result.feasible:
            self._arm(key, "resync", now.timestamp() + self.options.addon_resync_s)
        return nxt

    # ---- evaluation -----------------------------------------------------------------------
    def evaluate(
        self,
        now: datetime,
        inputs: Mapping[str, int] | None = None,
        limit: int | None = None,
        enough: Callable[[], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """Evaluate the dirty placements once each, in namespace/name order; return the diffs. A
        placement marked while this instance owned it and given up since (a rebalance) is not
        evaluated: its new owner publishes its decisions.

        A slice of that order: at most `limit` placements, and none after one at which `enough()`
        (the caller's time budget) is true; the next call goes on where this one stopped, so the
        slices together give the diffs of one call."""
        self.tick(now)
        # sorted once per fan-out, not once per slice of it
        order = self._order if self._order is not None else sorted(self.dirty)
        stop = len(order) if limit is None else min(limit, len(order))
        diffs: list[dict[str, Any]] = []
        taken = 0
        while taken < stop:
            key = order[taken]
            taken += 1
            trigger = self.dirty.pop(key)
            if self.owns(key):
                diff = self._evaluate_one(key, trigger, now, inputs or {})
                if diff is not None:
                    diffs.append(diff)
            if enough is not None and enough():
                break
        self._order = order[taken:] or None
        return diffs

    def _evaluate_one(
        self, key: str, trigger: Trigger, now: datetime, inputs: Mapping[str, int]
    ) -> dict[str, Any] | None:
        last = self.published.get(key)
        placement = self.fleet.placements.get(key)
        if placement is None:
            if last is None or last.deleted:
                return None
            gone = self.deletion_diff(key, now, trigger, inputs)
            self._pending[key] = Pending(last, {})
            self.published[key] = Published.of(gone)
            self.engine.forget(key)
            self._forms.pop(key, None)
            return gone.to_value()
        result = self.engine.evaluate(key, now)
        assert result is not None
        if result.skipped is not None:
            return None  # disabled, deleting, or a broken set: the decisions in force stay as they are
        nxt = self._arm_after(key, result, now)
        groups, status = self._published_form(key, result)
        decisions = result.decisions
        if last is not None and not last.deleted:
            same = (
                last.decisions == decisions
                and last.groups == groups
                and (last.status is status or last.status == status)
            )
            if same and (
                placement.spec.sort_by != "Score"
                or last.decision_scores() == result.scores_of(set(decisions))
            ):
                self.engine.commit(result)
                return None
            if placement.spec.sort_by == "Score" and _same_membership(last, groups, status):
                # only scores or their order changed: republish at most once per scoreRateLimit
                limit = _rate_limit_seconds(placement.spec.score_rate_limit)
                due = last.evaluated_at + limit
                if now.timestamp() < due:
                    self._arm(key, "score-rate-limit", due)
                    self.engine.commit(result)
                    return None
        diff = self.decision_diff(key, result, now, trigger, inputs, nxt, (groups, status))
        reasons = decision_reasons(result, placement, self.fleet) if self._wants_reasons else {}
        self._pending[key] = Pending(last, reasons)
        # what from_diff would read back from this diff, without reading it back
        self.published[key] = Published(
            seq=diff.seq,
            decisions=decisions,
            groups=groups,
            scores=diff.scores,
            status=status,
            evaluated_at=now.timestamp(),
            sort_by_score=diff.sort_by == "Score",
        )
        self.engine.commit(result)
        return diff.to_value()

    def decision_diff(
        self,
        key: str,
        result: ScheduleResult,
        now: datetime,
        trigger: Trigger,
        inputs: Mapping[str, int],
        next_requeue: datetime | None = None,
        form: tuple[tuple[tuple[str, int, tuple[str, ...]], ...], dict[str, Any]] | None = None,
    ) -> DecisionDiff:
        """The diff that publishing `result` (of the placement `key`, which exists) makes against
        the decision in force: what the worker publishes and the auditor recomputes. `form`: the
        result's groups and status as `_published_form` gives them, when already at hand."""
        last = self.published.get(key)
        placement = self.fleet.placements[key]
        groups, status = form if form is not None else self._published_form(key, result)
        decisions = result.decisions
        old = _in_force(last)
        new = set(decisions)
        # the scores of the selected clusters and of those added or removed
        scores = result.scores_of(new | old)
        return self._diff(
            key,
            last,
            old,
            new,
            decisions,
            groups,
            scores,
            status,
            now,
            trigger,
            inputs,
            next_requeue,
            placement.metadata.generation,
            sort_by_score=placement.spec.sort_by == "Score",
        )

    def deletion_diff(
        self, key: str, now: datetime, trigger: Trigger, inputs: Mapping[str, int]
    ) -> DecisionDiff:
        """The diff that says the placement `key` is gone."""
        last = self.published.get(key)
        return self._diff(
            key, last, _in_force(last), set(), (), (), {}, {}, now, trigger, inputs, None, 0, deleted=True
        )

    def _published_form(
        self, key: str, result: ScheduleResult
    ) -> tuple[tuple[tuple[str, int, tuple[str, ...]], ...], dict[str, Any]]:
        """The groups and status of a result as a diff carries them. Kept per placement while the
        result's groups and conditions stay: most runs of a fan-out keep them, and then compare
        by identity with what was published."""
        kept = self._forms.get(key)
        if (
            kept is not None
            and kept[0] == result.groups
            and kept[1] == result.conditions
            and kept[2] == result.number_selected
        ):
            return kept[3], kept[4]
        groups = tuple((g.name, g.index, g.clusters) for g in result.groups)
        status = _status_json(result)
        self._forms[key] = (result.groups, result.conditions, result.number_selected, groups, status)
        return groups, status

    @staticmethod
    def _diff(
        key: str,
        last: Published | None,
        old: set[str],  # the clusters of the decision in force
        new: set[str],  # and of this one
        decisions: tuple[str, ...],
        groups: tuple[tuple[str, int, tuple[str, ...]], ...],
        scores: Mapping[str, int],
        status: Mapping[str, Any],
        now: datetime,
        trigger: Trigger,
        inputs: Mapping[str, int],
        next_requeue: datetime | None,
        generation: int,
        *,
        deleted: bool = False,
        sort_by_score: bool = False,
    ) -> DecisionDiff:
        return DecisionDiff(
            placement=key,
            seq=(last.seq + 1) if last is not None else 1,
            evaluated_at=format_time(now),
            trigger=trigger,
            generation=generation,
            added=tuple(sorted(new - old)),
            removed=tuple(sorted(old - new)),
            decisions=tuple(decisions),
            groups=tuple(DecisionGroup(n, i, c) for n, i, c in groups),
            scores=scores,
            status=status,
            next_requeue_at=format_time(next_requeue) if next_requeue is not None else None,
            inputs=inputs,
            deleted=deleted,
            sort_by="Score" if sort_by_score else None,
        )

    def withdraw(self, keys: Iterable[str]) -> None:
        """Take back diffs `evaluate` returned that will not be published (the instance may have
        lost these placements while it computed them): each placement's decision in force is again
        the one its diff replaced, as the state and as what Balance counts. Nothing is marked: an
        instance that withdraws rejoins its group and evaluates everything it owns then."""
        for key in keys:
            pending = self._pending.pop(key, None)
            if pending is None:
                continue
            before = pending.before
            if before is None:
                self.published.pop(key, None)
            else:
                self.published[key] = before
            if before is None or before.deleted:
                self.engine.clear_decision(key)
            else:
                self.engine.set_decision(key, before.decisions)

    # ---- views ----------------------------------------------------------------------------
    def take_pending(self, key: str) -> Pending | None:
        """What the diff `evaluate` just returned for `key` replaced, and its reasons; once."""
        return self._pending.pop(key, None)

    def profile_namespace(self, cluster: str, placement_namespace: str) -> str:
        """The namespace of the ClusterProfile a SIG-MC decision references for `cluster`: the one
        it is read from, or for a ManagedCluster the operator's setting (else the placement's)."""
        profiles = self._profiles.get(cluster)
        if profiles and cluster not in self._managed:
            return winning_namespace(profiles)
        return self.options.sigmc_cluster_namespace or placement_namespace

    def sigmc_changes(self, key: str, pending: Pending | None) -> list[tuple[str, dict[str, Any] | None]]:
        """The SIG-MC slice records (key `namespace/slice`, value or tombstone) that publishing the
        new decision of `key` makes: none when its clusters and groups are those of the decision
        it replaces (a change of status or scores alone), else every slice of the new decision
        and a tombstone for each slice of the old one beyond them."""
        if not self.options.sigmc or pending is None:
            return []
        before, pub = pending.before, self.published.get(key)
        old = before.groups if before is not None and not before.deleted else None
        new = pub.groups if pub is not None and not pub.deleted else None
        if old is not None and new is not None and old == new:
            return []
        ns, _, name = key.partition("/")
        made = (
            slices(key, new, pending.reasons, lambda c: self.profile_namespace(c, ns), pub.seq)
            if new is not None and pub is not None
            else []
        )
        out: list[tuple[str, dict[str, Any] | None]] = [(f"{ns}/{s['metadata']['name']}", s) for s in made]
        stale = slice_names(name, slice_count(old) if old is not None else 0)[len(made) :]
        out.extend((f"{ns}/{n}", None) for n in stale)
        return out

    def placement_decisions(
        self, key: str, reasons: Mapping[str, str] | None = None
    ) -> dict[str, Any] | None:
        """The current decision as OCM PlacementDecision objects (string-valued entries), each
        entry's `reason` filled from `reasons` when the option to show them is on."""
        if not self.options.ocm_reasons:
            reasons = None
        pub = self.published.get(key)
        if pub is None or pub.deleted:
            return None
        ns, _, name = key.partition("/")
        label = placement_label_value(name)
        items = []
        page = 0
        for gname, gindex, clusters in pub.groups:
            chunks = [clusters[i : i + 100] for i in range(0, len(clusters), 100)] or [()]
            for chunk in chunks:
                page += 1
                metadata: dict[str, Any] = {
                    "name": decision_page_name(name, page),
                    "namespace": ns,
                    "labels": {
                        "cluster.open-cluster-management.io/placement": label,
                        "cluster.open-cluster-management.io/decision-group-name": gname,
                        "cluster.open-cluster-management.io/decision-group-index": str(gindex),
                    },
                }
                if label != name:
                    metadata["annotations"] = {PLACEMENT_ANNOTATION: name}
                items.append(
                    {
                        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                        "kind": "PlacementDecision",
                        "metadata": metadata,
                        "status": {"decisions": [self._entry(c, pub, reasons) for c in chunk]},
                    }
                )
        return {"schemaVersion": SCHEMA_VERSION, "placement": key, "seq": pub.seq, "items": items}

    @staticmethod
    def _entry(
        cluster: str, pub: Published, reasons: Mapping[str, str] | None = None
    ) -> dict[str, str | int]:
        """A PlacementDecision entry; `score` (an integer, int64 in the CRD) when scores are
        visible (sortBy Score), and only when it is not zero, as OCM omits a zero score."""
        entry: dict[str, str | int] = {
            "clusterName": cluster,
            "reason": reasons.get(cluster, "") if reasons else "",
        }
        score = pub.scores.get(cluster) if pub.sort_by_score else None
        if score:
            entry["score"] = int(score)
        return entry

    def drop(self, key: str) -> None:
        """Forget a placement this instance no longer owns (its decision stays, for Balance)."""
        gone = self.fleet.placements.get(key)
        if gone is not None:
            self._unindex_placement(key, gone)
        self.fleet.delete_placement(key)
        self._forms.pop(key, None)
        if self.dirty.pop(key, None) is not None:
            self._order = None

    def owned_keys(self) -> Iterable[str]:
        return (k for k in self.fleet.placements if self.owns(k))


def since(now: datetime, seconds: float) -> datetime:
    return now + timedelta(seconds=seconds)
