"""YuniKorn's load-time "longest fixed path" check of a rule chain.

It is deliberately YuniKorn's check, quirks included: only the explicit `parent: true` flag
counts (children do not), only the lower-case rule name `fixed` extends the path, the `root`
prefix is tested on the value as written, and the top-level rule's `create` is the one used.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetplace.shared.api.queues import PlacementRuleConfig
from fleetplace.shared.queueing._names import ROOT, go_lower
from fleetplace.shared.queueing._tree import QueueSpec

_FIXED = "fixed"


def _chain(rule: PlacementRuleConfig) -> list[PlacementRuleConfig]:
    """Outermost parent (the level below root) first, the top-level rule last."""
    chain = [rule]
    while chain[-1].parent is not None:
        chain.append(chain[-1].parent)
    chain.reverse()
    return chain


def static_path_problem(rule: PlacementRuleConfig, root: QueueSpec) -> str | None:
    chain = _chain(rule)
    names = "->".join(r.name for r in chain)
    path = ""
    dynamic = False
    for link in chain:
        if link.name != _FIXED:
            dynamic = True
            break
        if link.value.startswith(ROOT):
            if path:
                return f"illegal fully qualified 'fixed' rule with value {link.value} in chain {names}"
            path = link.value
        else:
            path = f"{path or ROOT}.{link.value}"
    if not path.startswith(ROOT):
        return None  # the chain does not start with a fixed rule: not checked at all
    create = rule.create
    outcome = _follow(go_lower(path).split("."), create, dynamic, (root,), None)
    if outcome is None:
        return None
    return f"rule chain {names} references {path}: {outcome}"


def _follow(
    parts: Sequence[str],
    create: bool,
    dynamic: bool,
    level: Sequence[QueueSpec],
    previous: QueueSpec | None,
) -> str | None:
    while True:
        if not level:
            assert previous is not None  # the root is always configured
            if not previous.parent_flag:
                return (
                    f"non-existing queues cannot be created: the last queue in the hierarchy "
                    f"({previous.configured_name}) is a leaf"
                )
            return None if create else "non-existing queue and create is 'false'"
        found = next((q for q in level if q.configured_name == parts[0]), None)
        if found is None:
            return None if create else "non-existing queue and create is 'false'"
        if len(parts) == 1:
            if dynamic and not found.parent_flag:
                return f"queue {found.configured_name} is not a parent (not flagged 'parent: true') but the chain adds dynamic levels below it"
            if not dynamic and found.parent_flag:
                return f"queue {found.configured_name} is not a leaf"
            return None
        parts, level, previous = parts[1:], found.children, found
