"""The plugin framework: a status, the per-run context, and the Filter/Prioritizer protocols.

Each scheduling concern is one small plugin module (OCM's `pkg/placement/plugins` layout); the
scheduler is a loop over a filter list and a weighted prioritizer list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement.fleet import Fleet

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
        own: Mapping[str, int],  # spec §4.2 "D": this placement's current decisions (name -> count)
        options: Any = None,
        scratch: dict[str, Any] | None = None,
    ) -> None:
        self.placement = placement
        self.fleet = fleet
        self.now = now
        self.own = own
        self.options = options
        self.scratch: dict[str, Any] = {} if scratch is None else scratch

    def __repr__(self) -> str:
        meta = self.placement.metadata
        return f"ScheduleContext(placement={meta.namespace}/{meta.name}, now={self.now.isoformat()})"

    @property
    def now_ts(self) -> float:
        ts = self.scratch.get("now_ts")
        if ts is None:
            ts = self.now.timestamp()
            self.scratch["now_ts"] = ts
        return float(ts)


class FilterResult:
    """What a filter kept (one per filter per run: a plain class)."""

    def __init__(self, slots: IntArray, status: Status = SUCCESS) -> None:
        self.slots = slots
        self.status = status


class Filter(Protocol):
    name: str

    def filter(self, ctx: ScheduleContext, slots: IntArray) -> FilterResult: ...

    def reason(self, ctx: ScheduleContext, cluster: str) -> str | None:
        """Why this filter rejects the cluster (None: it passes). For explanations only."""
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
    name: str

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult: ...
