"""The fleet: the materialised state a placement is scheduled against.

This is the one state store the engine reads. It holds the clusters (one slot each, with the
per-cluster numbers the prioritizers need as numpy columns), cluster sets, bindings, AddOn
scores and the current decisions, each change bumping a version (`version` for clusters and
sets, `score_version` for AddOn scores, `decisions.version` for decisions).

Besides that state it keeps *memos*: what runs derive and share across placements (set
membership masks, candidate lists, score columns, and each plugin's own tables, reached through
`memo`). A memo records the versions it was computed at and is recomputed when they moved, so
scheduling fills memos but never changes the state; `forget_derived` drops them all.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from fleetplace.shared.api.ocm import (
    CLUSTERSET_LABEL,
    PLACEMENT_LABEL,
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
    Taint,
)
from fleetplace.shared.placement.quantity import InvalidQuantity, approximate_float
from fleetplace.shared.placement.selectors import CompiledSelector, SelectorError, compile_label_selector

__all__ = ["ClusterInfo", "DecisionStore", "Fleet", "SetSelectorError"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
# Decision writes remembered, so that what Balance derived from the counts can be patched
# instead of recomputed when a few placements changed their decisions since.
JOURNAL = 64
DERIVED_KEPT = 256  # entries per `SharedTable` before it is swept
T = TypeVar("T")
M = TypeVar("M")


class SharedTable(Generic[T]):
    """One memo of values that placements share: each kept under a key naming what it was derived
    from (e.g. the candidates' lineage, see `ScheduleContext.lineage`) with the stamp of versions
    it read; a value whose stamp moved is computed again. A full table is swept whole (most of
    its entries are then of older versions)."""

    def __init__(self, limit: int = DERIVED_KEPT) -> None:
        self._entries: dict[Hashable, tuple[Hashable, T]] = {}
        self._limit = limit

    def find(self, key: Hashable, stamp: Hashable) -> T | None:
        """The value kept under `key` if it was derived at `stamp`, else None (compute it and
        `keep` it)."""
        hit = self._entries.get(key)
        return hit[1] if hit is not None and hit[0] == stamp else None

    def keep(self, key: Hashable, stamp: Hashable, value: T) -> T:
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[key] = (stamp, value)
        return value

    def forget(self, key: Hashable) -> None:
        self._entries.pop(key, None)


class SetSelectorError(Exception):
    """A ManagedClusterSet whose selector cannot be evaluated: the placement's sync fails and its
    decisions stay as they are."""


def _resource(cluster: ManagedCluster, key: str) -> float | None:
    """A cluster has data for a resource iff both its allocatable and its capacity carry the key."""
    alloc = cluster.status.allocatable.get(key)
    if alloc is None or key not in cluster.status.capacity:
        return None
    try:
        return approximate_float(alloc)
    except InvalidQuantity:
        return None


class _ChangeLog:
    """(version, slot) changes in version order, halved when it grows long."""

    def __init__(self) -> None:
        self._entries: list[tuple[int, int]] = []
        self._base = 0  # the oldest version whose changes it still holds

    def add(self, version: int, slot: int, capacity: int) -> None:
        entries = self._entries
        entries.append((version, slot))
        if len(entries) > 4 * max(capacity, 1024):
            self._base = entries[len(entries) // 2][0]
            del entries[: len(entries) // 2]

    def since(self, version: int) -> list[int] | None:
        """Slots changed after `version`, or None when the log no longer reaches that far."""
        if version < self._base:
            return None
        out: list[int] = []
        for v, s in reversed(self._entries):
            if v <= version:
                break
            out.append(s)
        return out


@dataclass(slots=True)
class ClusterInfo:
    """What scheduling needs of one ManagedCluster version, computed once per cluster record
    (equal by value; unhashable: it holds dicts)."""

    name: str
    labels: Mapping[str, str]
    claims: Mapping[str, str]
    terminating: bool
    taints: tuple[Taint, ...]
    cpu: float | None
    memory: float | None
    obj: ManagedCluster = field(repr=False)
    raw: Mapping[str, Any] | None = field(repr=False)

    @classmethod
    def of(cls, cluster: ManagedCluster, raw: Mapping[str, Any] | None = None) -> ClusterInfo:
        claims: dict[str, str] = {}
        for claim in cluster.status.cluster_claims:  # a later claim of the same name overwrites
            claims[claim.name] = claim.value
        meta = cluster.metadata
        return cls(
            meta.name,
            meta.labels,
            claims,
            meta.deletion_timestamp is not None,
            tuple(cluster.spec.taints),
            _resource(cluster, "cpu"),
            _resource(cluster, "memory"),
            cluster,
            raw,
        )


@dataclass
class _SetView:
    obj: ManagedClusterSet
    selector: CompiledSelector | None  # None: exclusive label set
    error: str | None
    mask: BoolArray | None = None
    mask_version: int = -1


class DecisionStore:
    """Decisions of every placement, as PlacementDecision-like sources.

    A *source* is one PlacementDecision object (or, in the worker, the whole current decision of
    one placement). Balance counts cluster names over all sources; Steady, NoSelectIfNew and the
    requeue read the sources of one placement.
    """

    def __init__(self) -> None:
        self._sources: dict[str, tuple[str, str | None, tuple[str, ...]]] = {}
        self.total: Counter[str] = Counter()
        self._own: dict[tuple[str, str], Counter[str]] = {}
        self._at: dict[int, set[str]] = {}  # count -> the names with that count
        self._by_owner: dict[tuple[str, str], set[str]] = {}
        self.version = 0
        self._top = 0
        self._top_version = -1
        # (version after a write, the names it counted in or out): what moved since a version
        self._journal: deque[tuple[int, Sequence[str]]] = deque(maxlen=JOURNAL)

    def _bump(self, name: str, delta: int) -> None:
        # dict methods, not Counter's Python-level __missing__/__delitem__ (this runs per name moved)
        old = self.total.get(name, 0)
        new = old + delta
        if old:
            names = self._at[old]
            names.discard(name)
            if not names:
                del self._at[old]
        if new:
            self.total[name] = new
            at = self._at.get(new)
            if at is None:
                self._at[new] = {name}
            else:
                at.add(name)
        else:
            self.total.pop(name, None)

    def put(
        self, source: str, namespace: str, placement: str | None, clusters: Iterable[str]
    ) -> tuple[Sequence[str], Sequence[str]]:
        """Replace a source; returns the names whose count went down and up (with repeats).

        A placement's new decision mostly keeps its old clusters: with the same owner and no
        repeated names, only the names that differ are counted again."""
        names = tuple(clusters)
        old = self._sources.get(source)
        if old == (namespace, placement, names):
            return (), ()  # unchanged: the version stays, and so does everything derived from it
        if old is not None and old[:2] == (namespace, placement):
            before, after = set(old[2]), set(names)
            if len(before) == len(old[2]) and len(after) == len(names):
                gone = [n for n in old[2] if n not in after]
                came = [n for n in names if n not in before]
                self._sources[source] = (namespace, placement, names)
                self._move(namespace, placement, gone, came)
                return gone, came
        gone_all = self.remove(source)
        self._sources[source] = (namespace, placement, names)
        if placement:
            self._by_owner.setdefault((namespace, placement), set()).add(source)
        self._move(namespace, placement, (), names)
        return gone_all, names

    def remove(self, source: str) -> Sequence[str]:
        """Drop a source; returns its names (their counts went down)."""
        old = self._sources.pop(source, None)
        if old is None:
            return ()
        namespace, placement, names = old
        if placement:
            owned = self._by_owner.get((namespace, placement))
            if owned is not None:
                owned.discard(source)
                if not owned:
                    del self._by_owner[(namespace, placement)]
        self._move(namespace, placement, names, ())
        return names

    def _move(self, namespace: str, placement: str | None, gone: Sequence[str], came: Sequence[str]) -> None:
        """Count `gone` out and `came` in, globally and for the owning placement."""
        own = None
        if placement:
            own = self._own.get((namespace, placement))
            if own is None:
                own = self._own[(namespace, placement)] = Counter()
        for n in gone:
            self._bump(n, -1)
            if own is not None:
                own[n] -= 1
                if not own[n]:
                    own.pop(n)
        for n in came:
            self._bump(n, 1)
            if own is not None:
                own[n] += 1
        if placement and not own:
            del self._own[(namespace, placement)]
        self.version += 1
        self._journal.append((self.version, (*gone, *came)))

    def changed_since(self, version: int) -> set[str] | None:
        """The names whose count may differ from what it was at `version`; None when that is
        too far back to tell (the caller recounts everything)."""
        if version == self.version:
            return set()
        journal = self._journal
        if version > self.version or not journal or journal[0][0] > version + 1:
            return None
        out: set[str] = set()
        for at, names in reversed(journal):
            if at <= version:
                break
            out.update(names)
        return out

    def own(self, namespace: str, placement: str) -> Mapping[str, int]:
        """Cluster name -> occurrences in this placement's own PDs (label = its name)."""
        return self._own.get((namespace, placement), {})

    def max_count_excluding(self, own: Mapping[str, int]) -> int:
        """The highest count over all counted names, this placement's own PDs taken out (what
        Balance normalises by)."""
        if not self._at:
            return 0
        top = max(self._at) if self._top_version != self.version else self._top
        self._top, self._top_version = top, self.version
        if not own or not self._at[top] <= own.keys():
            return top  # a name at the top count is not this placement's
        best = 0
        for name, k in own.items():
            best = max(best, self.total.get(name, 0) - k)
        reduced: Counter[int] = Counter(self.total[name] for name in own)
        for count in sorted(self._at, reverse=True):
            if count <= best:
                break
            if len(self._at[count]) - reduced.get(count, 0) > 0:
                return count
        return best

    def sources_of(self, namespace: str, placement: str) -> list[str]:
        """Every source labelled with this placement in its namespace."""
        return sorted(self._by_owner.get((namespace, placement), ()))

    def only_source(self, namespace: str, placement: str, source: str) -> bool:
        """Whether `source` is the one source labelled with this placement."""
        owned = self._by_owner.get((namespace, placement))
        return owned is not None and len(owned) == 1 and source in owned

    def get(self, source: str) -> tuple[str, str | None, tuple[str, ...]] | None:
        return self._sources.get(source)

    def clusters_of(self, source: str) -> tuple[str, ...]:
        entry = self._sources.get(source)
        return entry[2] if entry else ()

    def sources(self) -> Iterator[tuple[str, tuple[str, str | None, tuple[str, ...]]]]:
        return iter(self._sources.items())


@dataclass
class _ScoreColumn:
    version: int  # the fleet version it reflects: slots touched since then are brought up to date
    values: IntArray
    present: BoolArray
    valid_until: FloatArray
    expires: bool  # any score object of this column carries a validUntil


@dataclass
class Fleet:
    """All state the engine reads; mutate it with `upsert`/`delete`, read it with `schedule`."""

    clusters: dict[str, ClusterInfo] = field(default_factory=dict)
    sets: dict[str, _SetView] = field(default_factory=dict)
    bindings: dict[str, dict[str, ManagedClusterSetBinding]] = field(default_factory=dict)
    scores: dict[tuple[str, str], AddOnPlacementScore] = field(default_factory=dict)
    # per score object: validUntil as a timestamp (inf: none) and its values by score name
    _score_data: dict[tuple[str, str], tuple[float, dict[str, int]]] = field(default_factory=dict)
    placements: dict[str, Placement] = field(default_factory=dict)
    decisions: DecisionStore = field(default_factory=DecisionStore)
    pds: dict[str, PlacementDecision] = field(default_factory=dict)

    # slots ---------------------------------------------------------------------------------
    version: int = 0
    score_version: int = 0
    _capacity: int = 0
    _slot: dict[str, int] = field(default_factory=dict)
    _names: list[str | None] = field(default_factory=list)
    _free: list[int] = field(default_factory=list)
    _log: _ChangeLog = field(default_factory=_ChangeLog)  # every slot change
    # the changes that can move a label or claim selector's verdict: labels or claims changed, a
    # slot taken or freed (most cluster updates are status heartbeats, which leave them alone)
    _label_log: _ChangeLog = field(default_factory=_ChangeLog)
    _rank_version: int = -1
    _names_version: int = 0
    alive: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    terminating: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    tainted: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    tainted_names: set[str] = field(default_factory=set)  # the clusters `tainted` marks
    cpu: FloatArray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    cpu_has: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    memory: FloatArray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    memory_has: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    decision_count: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _rank: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    names: npt.NDArray[np.object_] = field(default_factory=lambda: np.zeros(0, dtype=np.object_))
    _score_columns: dict[tuple[str, str], _ScoreColumn] = field(default_factory=dict)
    _candidates: dict[tuple[str, ...], tuple[int, IntArray]] = field(default_factory=dict)
    _decision_count_version: int = -1
    _names_shared: bool = False
    _memos: dict[type, object] = field(default_factory=dict)  # memo class -> its one instance

    # ---- slots ----------------------------------------------------------------------------
    def _grow(self) -> None:
        new = max(16, self._capacity * 2)

        def grow(a: npt.NDArray[Any], fill: Any = 0) -> npt.NDArray[Any]:
            b = np.full(new, fill, dtype=a.dtype)
            b[: self._capacity] = a
            return b

        self.alive = grow(self.alive, False)
        self.terminating = grow(self.terminating, False)
        self.tainted = grow(self.tainted, False)
        self.cpu = grow(self.cpu, 0.0)
        self.cpu_has = grow(self.cpu_has, False)
        self.memory = grow(self.memory, 0.0)
        self.memory_has = grow(self.memory_has, False)
        self.decision_count = grow(self.decision_count, 0)
        self._rank = grow(self._rank, 0)
        self.names = grow(self.names, None)
        self._names.extend([None] * (new - self._capacity))
        self._free.extend(range(new - 1, self._capacity - 1, -1))
        self._capacity = new
        self.forget_derived()

    def forget_derived(self) -> None:
        """Drop everything derived across placements (score columns, candidate lists, selector and
        plugin caches), so that the next schedule computes it all again. The per-cluster columns,
        which are part of a cluster's own version, stay."""
        self._score_columns.clear()
        self._candidates.clear()
        self._memos.clear()
        for s in self.sets.values():
            s.mask = None

    def _own_names(self) -> npt.NDArray[np.object_]:
        # copy-on-write: results keep a reference to `names` instead of copying it per run
        if self._names_shared:
            self.names = self.names.copy()
            self._names_shared = False
        return self.names

    def names_snapshot(self) -> npt.NDArray[np.object_]:
        """slot -> cluster name, frozen for as long as the caller holds it."""
        self._names_shared = True
        return self.names

    @property
    def capacity(self) -> int:
        return self._capacity

    def memo(self, kind: type[M]) -> M:
        """The fleet's one instance of the memo class `kind` (made on first use). A plugin keeps
        what it derives across placements in a memo class of its own module; each entry carries
        the versions it is valid for."""
        found = self._memos.get(kind)
        if found is None:
            found = self._memos[kind] = kind()
        return found  # type: ignore[return-value]  # made by kind() above

    def slot_of(self, name: str) -> int | None:
        return self._slot.get(name)

    def name_of(self, slot: int) -> str:
        name = self._names[slot]
        assert name is not None
        return name

    def _touch(self, slot: int, relabelled: bool = True) -> None:
        self.version += 1
        self._log.add(self.version, slot, self._capacity)
        if relabelled:
            self._label_log.add(self.version, slot, self._capacity)

    def changed_since(self, version: int) -> list[int] | None:
        """Slots changed after `version`, or None when the log no longer reaches that far."""
        return self._log.since(version)

    def labels_changed_since(self, version: int) -> list[int] | None:
        """Slots whose labels or claims may differ from what they were at `version` (taken, freed
        or relabelled since), or None when the log no longer reaches that far. What a label or
        claim selector concludes about every other slot still holds."""
        return self._label_log.since(version)

    @property
    def rank(self) -> IntArray:
        """Position of each slot in byte-wise name order (ties in scores break by name)."""
        if self._rank_version != self._names_version:
            live = [(n, i) for i, n in enumerate(self._names) if n is not None]
            live.sort()
            for r, (_, i) in enumerate(live):
                self._rank[i] = r
            self._rank_version = self._names_version
        return self._rank

    # ---- clusters ------------------------------------------------------------------------
    def upsert_cluster(self, cluster: ManagedCluster, raw: Mapping[str, Any] | None = None) -> None:
        info = ClusterInfo.of(cluster, raw)
        name = info.name
        slot = self._slot.get(name)
        # the version the slot's columns hold (None: a new slot, every column is written)
        old = self.clusters.get(name) if slot is not None else None
        relabelled = old is None or old.labels != info.labels or old.claims != info.claims
        if slot is None:
            if not self._free:
                self._grow()
            slot = self._free.pop()
            self._slot[name] = slot
            self._names[slot] = name
            self._own_names()[slot] = name
            self._names_version += 1
            self.alive[slot] = True
            self.decision_count[slot] = self.decisions.total.get(name, 0)
        self.clusters[name] = info
        # a new version changes few columns, and a numpy item write costs more than a comparison
        if old is None or old.terminating != info.terminating:
            self.terminating[slot] = info.terminating
        if old is None or bool(old.taints) != bool(info.taints):
            self.tainted[slot] = bool(info.taints)
            if info.taints:
                self.tainted_names.add(name)
            else:
                self.tainted_names.discard(name)
        if old is None or old.cpu != info.cpu:
            self.cpu[slot] = info.cpu or 0.0
            self.cpu_has[slot] = info.cpu is not None
        if old is None or old.memory != info.memory:
            self.memory[slot] = info.memory or 0.0
            self.memory_has[slot] = info.memory is not None
        self._touch(slot, relabelled)

    def delete_cluster(self, name: str) -> None:
        slot = self._slot.pop(name, None)
        self.clusters.pop(name, None)
        if slot is None:
            return
        self._names[slot] = None
        self._own_names()[slot] = None
        self._names_version += 1
        self.alive[slot] = False
        self.tainted[slot] = False
        self.tainted_names.discard(name)
        self.cpu_has[slot] = False
        self.memory_has[slot] = False
        self.decision_count[slot] = 0
        self._free.append(slot)
        self._touch(slot)

    # ---- sets and bindings ---------------------------------------------------------------
    def upsert_set(self, cset: ManagedClusterSet) -> None:
        sel = cset.spec.cluster_selector
        selector: CompiledSelector | None = None
        error: str | None = None
        if sel.selector_type in ("", "ExclusiveClusterSetLabel"):
            selector = None
        elif sel.selector_type == "LabelSelector":
            try:
                selector = compile_label_selector(sel.label_selector, null_means_nothing=True)
            except SelectorError as e:
                error = str(e)
        else:
            error = f"selector type {sel.selector_type!r} is not supported"
        self.sets[cset.metadata.name] = _SetView(cset, selector, error)
        self.version += 1
        self._candidates.clear()

    def delete_set(self, name: str) -> None:
        if self.sets.pop(name, None) is not None:
            self.version += 1
            self._candidates.clear()

    def upsert_binding(self, binding: ManagedClusterSetBinding) -> None:
        self.bindings.setdefault(binding.metadata.namespace, {})[binding.metadata.name] = binding

    def delete_binding(self, namespace: str, name: str) -> None:
        ns = self.bindings.get(namespace)
        if ns is not None:
            ns.pop(name, None)
            if not ns:
                del self.bindings[namespace]

    def set_members(self, name: str) -> BoolArray:
        """The set's members (its exclusive label, or its label selector), as a mask over slots
        (terminating clusters included)."""
        view = self.sets[name]
        if view.error is not None:
            raise SetSelectorError(view.error)
        if view.mask is not None and view.mask_version == self.version:
            return view.mask
        changed = self.labels_changed_since(view.mask_version) if view.mask is not None else None
        if view.mask is None or changed is None or len(view.mask) != self._capacity:
            if view.selector is not None and view.selector.is_everything:  # every cluster
                view.mask, view.mask_version = self.alive.copy(), self.version
                return view.mask
            mask = np.zeros(self._capacity, dtype=np.bool_)
            slots: Iterable[int] = self._slot.values()
        else:
            mask = view.mask
            slots = set(changed)
        for s in slots:
            n = self._names[s]
            if n is None:
                mask[s] = False
                continue
            labels = self.clusters[n].labels
            if view.selector is None:
                mask[s] = labels.get(CLUSTERSET_LABEL) == name
            else:
                mask[s] = view.selector.matches(labels)
        view.mask, view.mask_version = mask, self.version
        return mask

    def sets_of_cluster(self, labels: Mapping[str, str]) -> list[str]:
        """The sets a cluster with these labels belongs to (for the worker's fan-out)."""
        out = []
        for name, view in self.sets.items():
            if view.error is not None:
                raise SetSelectorError(view.error)
            if view.selector is None:
                if labels.get(CLUSTERSET_LABEL) == name:
                    out.append(name)
            elif view.selector.matches(labels):
                out.append(name)
        return out

    def candidates(self, eligible: tuple[str, ...]) -> IntArray:
        """The union of the eligible sets' members, minus terminating clusters."""
        hit = self._candidates.get(eligible)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        mask = np.zeros(self._capacity, dtype=np.bool_)
        for name in eligible:
            if name in self.sets:
                mask |= self.set_members(name)
        mask &= self.alive & ~self.terminating
        slots = mask.nonzero()[0].astype(np.int64)
        self._candidates[eligible] = (self.version, slots)
        return slots

    # ---- scores --------------------------------------------------------------------------
    def upsert_score(self, score: AddOnPlacementScore) -> None:
        key = (score.metadata.namespace, score.metadata.name)
        self.scores[key] = score
        until = score.status.valid_until
        # the last item of a name wins, as a dict built in order keeps it
        self._score_data[key] = (
            until.timestamp() if until is not None else np.inf,
            {item.name: item.value for item in score.status.scores},
        )
        self._score_touched(score.metadata.namespace)

    def delete_score(self, cluster: str, resource: str) -> None:
        if self.scores.pop((cluster, resource), None) is not None:
            del self._score_data[(cluster, resource)]
            self._score_touched(cluster)

    def _score_touched(self, cluster: str) -> None:
        self.score_version += 1
        slot = self._slot.get(cluster)
        if slot is not None:
            self._touch(slot, relabelled=False)  # CEL `scores()` results depend on it

    def score_column(self, resource: str, score_name: str) -> _ScoreColumn:
        """AddOn scores of every slot for one coordinate.

        Kept up to date slot by slot: a score object changing, and a cluster taking or leaving a
        slot, touch that slot (`_touch`), so only the slots touched since the column was last
        read are looked up again; the whole column is rebuilt only when the change log no longer
        reaches back that far or the slots were reallocated."""
        key = (resource, score_name)
        col = self._score_columns.get(key)
        if col is not None and len(col.values) == self._capacity:
            if col.version == self.version:
                return col
            changed = self.changed_since(col.version)
            if changed is not None:
                for slot in set(changed):
                    self._score_cell(col, slot, resource, score_name)
                col.version = self.version
                col.expires = bool(np.isfinite(col.valid_until).any())
                return col
        col = _ScoreColumn(
            self.version,
            np.zeros(self._capacity, dtype=np.int64),
            np.zeros(self._capacity, dtype=np.bool_),
            np.full(self._capacity, np.inf, dtype=np.float64),
            False,
        )
        slots: list[int] = []
        values: list[int] = []
        untils: list[float] = []
        for (cluster, res), (until, by_name) in self._score_data.items():
            if res != resource:
                continue
            held = self._slot.get(cluster)
            if held is not None:
                slots.append(held)
                values.append(by_name.get(score_name, 0))
                untils.append(until)
        if slots:
            at = np.asarray(slots, dtype=np.int64)
            col.values[at] = values
            col.present[at] = True
            col.valid_until[at] = untils
        col.expires = bool(np.isfinite(col.valid_until).any())
        self._score_columns[key] = col
        return col

    def _score_cell(self, col: _ScoreColumn, slot: int, resource: str, score_name: str) -> None:
        name = self._names[slot]
        data = self._score_data.get((name, resource)) if name is not None else None
        if data is None:
            col.values[slot], col.present[slot], col.valid_until[slot] = 0, False, np.inf
            return
        until, by_name = data
        col.values[slot], col.present[slot], col.valid_until[slot] = by_name.get(score_name, 0), True, until

    def score_items(self, cluster: str, resource: str) -> list[tuple[str, int]] | None:
        obj = self.scores.get((cluster, resource))
        if obj is None:
            return None
        return [(i.name, i.value) for i in obj.status.scores]

    # ---- decisions -----------------------------------------------------------------------
    def decision_counts(self) -> IntArray:
        """Per-slot count of the cluster's name over all decisions (Balance)."""
        if self._decision_count_version != self.decisions.version:
            self.decision_count[:] = 0
            for name, n in self.decisions.total.items():
                slot = self._slot.get(name)
                if slot is not None:
                    self.decision_count[slot] = n
            self._decision_count_version = self.decisions.version
        return self.decision_count

    def set_decisions(
        self, source: str, namespace: str, placement: str | None, clusters: Iterable[str]
    ) -> None:
        """Replace one decision source, keeping the per-slot counts in step incrementally."""
        fresh = self._decision_count_version == self.decisions.version
        gone, came = self.decisions.put(source, namespace, placement, clusters)
        if fresh and self._decision_count_version != self.decisions.version:
            self._count(gone, -1)
            self._count(came, 1)
            self._decision_count_version = self.decisions.version

    def remove_decisions(self, source: str) -> None:
        fresh = self._decision_count_version == self.decisions.version
        gone = self.decisions.remove(source)
        if fresh:
            self._count(gone, -1)
            self._decision_count_version = self.decisions.version

    def _count(self, names: Sequence[str], delta: int) -> None:
        counts, slot_of = self.decision_count, self._slot
        for name in names:
            slot = slot_of.get(name)
            if slot is not None:
                counts[slot] += delta

    def upsert_pd(self, pd: PlacementDecision) -> None:
        key = f"{pd.metadata.namespace}/{pd.metadata.name}"
        self.pds[key] = pd
        label = pd.metadata.labels.get(PLACEMENT_LABEL) or None
        self.set_decisions(
            "pd:" + key, pd.metadata.namespace, label, (d.cluster_name for d in pd.status.decisions)
        )

    # ---- placements ----------------------------------------------------------------------
    def upsert_placement(self, placement: Placement) -> None:
        self.placements[placement.key] = placement

    def delete_placement(self, key: str) -> None:
        self.placements.pop(key, None)
