"""The OCM placement scheduling engine: `schedule` decides one placement from a Fleet (the state)
and `now`, always the same from the same state; `PlacementEngine` applies changes to the Fleet
and carries decisions forward between runs."""

from fleetplace.shared.placement.engine import PlacementEngine, apply_object, fleet_of
from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.scheduler import ScheduleResult, schedule

__all__ = ["Fleet", "PlacementEngine", "ScheduleResult", "apply_object", "fleet_of", "schedule"]
