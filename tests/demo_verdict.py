"""The last line `fleetplace demo` should print here: which of its acts this machine skips."""

from __future__ import annotations

from fleetplace.services.commands.demo_hub import hub_missing
from fleetplace.services.scores.local import prometheus_missing

ACTS = 19


def expected_verdict(*, hub: bool = True) -> str:
    """`all 19 acts passed`, or the count with the skipped acts apart: the two Prometheus acts
    without /usr/bin/prometheus, the two hub acts without the control plane (`hub=False`: the
    demo runs where the control plane's binaries are not, an installed copy)."""
    skipped = 2 * (prometheus_missing() is not None) + 2 * (not hub or hub_missing() is not None)
    return f"{ACTS - skipped} acts passed, {skipped} skipped" if skipped else f"all {ACTS} acts passed"
