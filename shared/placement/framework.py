"""The plugin framework: a status, the per-run context, and the Filter/Prioritizer protocols.

Each scheduling concern is one small plugin module (OCM's `pkg/placement/plugins` layout); the
scheduler is a loop over a filter list and a weighted prioritizer list. A plugin declares what it
reads of the clusters (`Reads`: the worker re-evaluates a placement when that changes), when time
alone changes its answer (`requeue`), and a prioritizer may offer a fast form shared across
placements (`SharedScores`). The prioritizers themselves are listed in `plugins.registry`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement.fleet import Fleet, SharedTable
from fleetplace.shared.placement.reads import Reads

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Code(StrEnum):
    SUCCESS = "Success"
    WARNING = "Warning"
    ERROR = "Error"
    MISCONFIGURED = "Misconfigured"


ABORTING = frozenset({Code.ERROR, Code.MISCONFIGURED})


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    plugin: str = ""
    message: str = ""
    # whether the run stops here: read several times per run, so set once
    aborts: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "aborts", self.code in ABORTING)


SUCCESS = Status()


class ScheduleContext:
    """Everything one scheduling run reads; built once per run, shared by the plugins (a plain
    class: one per run)."""

    def __init__(
        self,
        placement: Placement,
        fleet: Fleet,
        now: datetime,
        own: Mapping[str, int],  # this placement's current decisions (name -> count of its PDs naming it)
        options: Any = None,
        lineage: Hashable | None = None,
    ) -> None:
        self.placement = placement
        self.fleet = fleet
        self.now = now
        self.own = own
        self.options = options
        # what the current candidate array was derived from (the eligible sets, then each filter
        # that narrowed it alike for every placement), the key under which placements share what
        # is computed from it; None: the array is this placement's alone
        self.lineage = lineage
        self._now_ts: float | None = None

    def __repr__(self) -> str:
        meta = self.placement.metadata
        return f"ScheduleContext(placement={meta.namespace}/{meta.name}, now={self.now.isoformat()})"

    @property
    def now_ts(self) -> float:
        if self._now_ts is None:
            self._now_ts = self.now.timestamp()
        return self._now_ts


class FilterResult:
    """What a filter kept (one per filter per run: a plain class). A filter that keeps every
    candidate returns the array it was given; one that narrows it alike for every placement
    (the same array for the same input) names it by a `lineage` (see `ScheduleContext.lineage`)."""

    def __init__(self, slots: IntArray, status: Status = SUCCESS, lineage: Hashable | None = None) -> None:
        self.slots = slots
        self.status = status
        self.lineage = lineage


@dataclass(frozen=True, slots=True)
class Requeue:
    """When a plugin's verdict or score changes by the passage of time alone, so that the
    placement must run again then."""

    at: datetime
    trigger: str  # the DecisionDiff trigger kind of that run ("toleration-expired", "score-expired")
    reported: bool = True  # part of OCM's requeueAfter; False: a timer fleetplace adds beyond OCM


class Filter(Protocol):
    name: str

    def filter(self, ctx: ScheduleContext, slots: IntArray) -> FilterResult: ...

    def reason(self, ctx: ScheduleContext, cluster: str) -> str | None:
        """Why this filter rejects the cluster (None: it passes). For explanations only."""
        ...

    def reads(self, placement: Placement) -> Reads:
        """The cluster fields this placement's verdicts depend on."""
        ...

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        """When time alone changes this filter's verdicts, judged against the clusters `decided`
        (the placement's decision of that run); `slots` are the post-filter clusters."""
        ...


class ScoreResult:
    """One prioritizer's scores of a run (one per prioritizer per run: a plain class)."""

    def __init__(
        self,
        scores: IntArray,  # aligned with the post-filter slots
        has_entry: BoolArray | None = None,  # None: every cluster has an entry
        status: Status = SUCCESS,
    ) -> None:
        self.scores = scores
        self.has_entry = has_entry
        self.status = status

    def __repr__(self) -> str:
        return f"ScoreResult(scores={self.scores!r}, has_entry={self.has_entry!r}, status={self.status!r})"


class Prioritizer(Protocol):
    """One score coordinate's plugin: raw scores of the post-filter clusters (weighted by the
    scheduler), what it reads, its requeue time, and optionally its shared fast form."""

    name: str

    @property
    def reads(self) -> Reads:
        """The cluster fields its scores depend on."""
        ...

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult: ...

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        """As `Filter.requeue`; most prioritizers have none."""
        ...

    def shared(self) -> SharedScores | None:
        """The fast form used when every prioritizer of a placement has one (see `totals`);
        None: scored one placement at a time."""
        ...


class SharedScores(Protocol):
    """A prioritizer whose scores are a *base* that every placement with the same candidates and
    the same `key` shares, differing for a placement only at the clusters it already decided.

    `base` is computed once per candidates, key and state; `patch` gives one placement's scores at
    its own clusters; `rebased` says which base scores moved when the state the base reads
    beyond the fleet (`version`) changed, so that a base is patched instead of rebuilt.
    `totals.py` holds every use of it to `score` run one placement at a time."""

    def key(self, ctx: ScheduleContext) -> Hashable:
        """What the base depends on besides the candidates and the state (0 when nothing)."""
        ...

    def version(self, fleet: Fleet) -> int:
        """The version of what the base reads besides the fleet, the scores and `now`."""
        ...

    def base(self, ctx: ScheduleContext, slots: IntArray, key: Hashable) -> ScoreResult: ...

    def rebased(self, fleet: Fleet, key: Hashable, since: int) -> dict[str, int] | None:
        """The clusters whose base score may have changed since `version` was `since`, with their
        base score now; None when that is unknown (the base is rebuilt)."""
        ...

    def patch(self, ctx: ScheduleContext, key: Hashable, own: Sequence[str]) -> list[int] | None:
        """This placement's scores at its own clusters `own`; None: the base's."""
        ...


@dataclass(slots=True)
class PlacementIndependent:
    """The shared form of a prioritizer whose scores do not depend on the placement at all (the
    same for every placement with these candidates): its base is its scores."""

    prioritizer: Prioritizer

    def key(self, ctx: ScheduleContext) -> Hashable:
        return 0

    def version(self, fleet: Fleet) -> int:
        return 0

    def base(self, ctx: ScheduleContext, slots: IntArray, key: Hashable) -> ScoreResult:
        return independent_score(self.prioritizer, ctx, slots)

    def rebased(self, fleet: Fleet, key: Hashable, since: int) -> dict[str, int] | None:
        return {}

    def patch(self, ctx: ScheduleContext, key: Hashable, own: Sequence[str]) -> list[int] | None:
        return None


class _IndependentScores:
    """Scores of placement-independent prioritizers, shared by every placement with the same
    candidates while the fleet, the AddOn scores and `now` stay."""

    def __init__(self) -> None:
        # (candidates' lineage, prioritizer name) -> its scores
        self.scores: SharedTable[ScoreResult] = SharedTable(SHARED_SCORES_KEPT)


SHARED_SCORES_KEPT = 4096


def independent_score(prioritizer: Prioritizer, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
    """`prioritizer.score`, shared with every placement whose candidates have the same lineage."""
    if ctx.lineage is None:
        return prioritizer.score(ctx, slots)
    fleet = ctx.fleet
    stamp = (fleet.version, fleet.score_version, ctx.now_ts)
    kept = fleet.memo(_IndependentScores).scores
    key = (ctx.lineage, prioritizer.name)
    found = kept.find(key, stamp)
    return found if found is not None else kept.keep(key, stamp, prioritizer.score(ctx, slots))
