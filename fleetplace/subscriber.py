"""The subscriber SDK: follow fleetplace's decisions, or roll out by them, from your own service.

    from fleetplace.subscriber import DecisionSubscriber, SubscriberPosition
    from fleetplace.subscriber import RolloutDeployer, settled

See docs/subscribers.md and docs/rollouts.md. The names are those of
`fleetplace.shared.bus.subscriber` and `fleetplace.shared.bus.deployer`; this module is the stable
place to import them from.
"""

from __future__ import annotations

from fleetplace.shared.bus.deployer import Health, RolloutDeployer, settled
from fleetplace.shared.bus.subscriber import DecisionSubscriber, SeqGap, SubscriberPosition

__all__ = ["DecisionSubscriber", "Health", "RolloutDeployer", "SeqGap", "SubscriberPosition", "settled"]
