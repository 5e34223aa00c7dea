"""Engine options that go beyond OCM. With the defaults, every decision equals OCM's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PreferNoSelect = Literal["ignore", "penalize"]


@dataclass(frozen=True, slots=True)
class EngineOptions:
    # OCM accepts the PreferNoSelect taint effect but treats it as tolerated; "penalize" adds a
    # TaintToleration prioritizer (weight 1 in Additive mode) scoring -100 for such clusters.
    prefer_no_select: PreferNoSelect = "ignore"


DEFAULT_OPTIONS = EngineOptions()
