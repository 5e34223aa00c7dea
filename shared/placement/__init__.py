"""The OCM placement scheduling engine: pure functions over a Fleet, with `now` passed in."""

from shared.placement.engine import PlacementEngine, apply_object, fleet_of
from shared.placement.fleet import Fleet
from shared.placement.scheduler import ScheduleResult, schedule

__all__ = ["Fleet", "PlacementEngine", "ScheduleResult", "apply_object", "fleet_of", "schedule"]
