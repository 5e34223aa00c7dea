"""The subscriber SDK: follow fleetplace's decisions from your own service.

    from fleetplace.subscriber import DecisionSubscriber, SubscriberPosition

See docs/subscribers.md. The names are those of `fleetplace.shared.bus.subscriber`; this module
is the stable place to import them from.
"""

from __future__ import annotations

from fleetplace.shared.bus.subscriber import DecisionSubscriber, SeqGap, SubscriberPosition

__all__ = ["DecisionSubscriber", "SeqGap", "SubscriberPosition"]
