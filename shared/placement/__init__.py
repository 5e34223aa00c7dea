"""The OCM placement scheduling engine: pure functions over a Fleet, with `now` passed in."""

from fleetplace.shared.placement.engine import PlacementEngine, apply_object, fleet_of
from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.scheduler import ScheduleResult, schedule

__all__ = ["Fleet", "PlacementEngine", "ScheduleResult", "apply_object", "fleet_of", "schedule"]
