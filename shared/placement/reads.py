"""What a placement's decision reads of the clusters, and what changed in a cluster, in the same
terms: the worker re-evaluates exactly the placements that read what changed.

Every placement reads set membership, whether a cluster is terminating and its taints; a change
to those re-evaluates every placement bound to the cluster's sets. Beyond that, each plugin
declares the fields it reads (`Filter.reads`, `Prioritizer.reads`), and `scheduler.reads_of`
unites them for a placement.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetplace.shared.placement.fleet import ClusterInfo


@dataclass(slots=True)
class Reads:
    """Cluster fields a decision can depend on, beyond set membership, terminating and taints."""

    label_keys: frozenset[str] = frozenset()
    claim_keys: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()  # allocatable resources ("cpu", "memory")
    addon_resources: frozenset[str] = frozenset()  # AddOnPlacementScore resource names
    cel: bool = False  # any field at all (a CEL expression can read anything)
    # every placement's decisions, not only this one's (Balance); they never re-trigger a
    # placement (it would ping-pong), but a run that reads them is not repeatable without them
    other_decisions: bool = False

    def covers(self, other: Reads) -> bool:
        """Whether everything `other` reads is read here too."""
        return (
            other.label_keys <= self.label_keys
            and other.claim_keys <= self.claim_keys
            and other.resources <= self.resources
            and other.addon_resources <= self.addon_resources
            and (self.cel or not other.cel)
            and (self.other_decisions or not other.other_decisions)
        )

    def __or__(self, other: Reads) -> Reads:
        # a placement's plugins mostly read nothing, or what another of them reads: no new value
        if self.covers(other):
            return self
        if other.covers(self):
            return other
        return Reads(
            self.label_keys | other.label_keys,
            self.claim_keys | other.claim_keys,
            self.resources | other.resources,
            self.addon_resources | other.addon_resources,
            self.cel or other.cel,
            self.other_decisions or other.other_decisions,
        )


NOTHING = Reads()


@dataclass(slots=True)
class ClusterChange:
    """What changed in one cluster, in the terms of `Reads`."""

    everything: bool = False  # added, deleted, terminating or taints changed
    label_keys: frozenset[str] = frozenset()
    claim_keys: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    other: bool = False  # any other field (only CEL reads those)

    @property
    def nothing(self) -> bool:
        return not (self.everything or self.label_keys or self.claim_keys or self.resources or self.other)

    @classmethod
    def between(cls, old: ClusterInfo | None, new: ClusterInfo | None) -> ClusterChange:
        if old is None or new is None or old.terminating != new.terminating or old.taints != new.taints:
            return cls(everything=True)
        labels = {k for k in old.labels.keys() | new.labels.keys() if old.labels.get(k) != new.labels.get(k)}
        claims = {k for k in old.claims.keys() | new.claims.keys() if old.claims.get(k) != new.claims.get(k)}
        resources = set()
        if old.cpu != new.cpu:
            resources.add("cpu")
        if old.memory != new.memory:
            resources.add("memory")
        return cls(
            label_keys=frozenset(labels),
            claim_keys=frozenset(claims),
            resources=frozenset(resources),
            other=old.obj != new.obj,
        )

    def affects(self, reads: Reads) -> bool:
        return (
            self.everything
            or (reads.cel and (self.other or bool(self.label_keys) or bool(self.claim_keys)))
            or bool(self.label_keys & reads.label_keys)
            or bool(self.claim_keys & reads.claim_keys)
            or bool(self.resources & reads.resources)
        )
