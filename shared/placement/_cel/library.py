"""The function registry: every CEL function the placement environment declares.

A function is registered once per (name, receiver style, arity) with one Python implementation
that dispatches on runtime types, plus the static signatures the checker uses to reject calls
that can never succeed (``size(1)``) and to type results. Implementations receive the
evaluation :class:`Frame` first so that they can charge cost for the work they do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from fleetplace.shared.placement._cel.values import CostLimitExceeded

# Static types the checker knows. "dyn" matches anything.
DYN: Final = "dyn"


class Frame:
    """Mutable state of one evaluation: variables in scope, cost so far, the score lookup."""

    __slots__ = ("cost", "limit", "scores", "vars")

    def __init__(
        self,
        variables: dict[str, Any],
        limit: int,
        scores: Callable[[str, str], Sequence[tuple[str, int]] | None],
    ) -> None:
        self.vars = variables
        self.cost = 0
        self.limit = limit
        self.scores = scores

    def charge(self, units: int) -> None:
        self.cost += units
        if self.cost > self.limit:
            raise CostLimitExceeded


def size_cost(n: int) -> int:
    """Kubernetes charges 0.1 per byte/element for traversals; round up to whole units."""
    return (n + 9) // 10


@dataclass(frozen=True, slots=True)
class Signature:
    params: tuple[str, ...]  # receiver first for member functions
    result: str


@dataclass(frozen=True, slots=True)
class FunctionDef:
    name: str
    member: bool
    arity: int  # arguments, not counting the receiver
    impl: Callable[..., Any]
    signatures: tuple[Signature, ...]


REGISTRY: dict[tuple[str, bool, int], FunctionDef] = {}
GLOBAL_NAMES: set[str] = set()
MEMBER_NAMES: set[str] = set()


def _parse_signature(text: str) -> Signature:
    params_text, _, result = text.partition("->")
    params = tuple(p.strip() for p in params_text.strip().strip("()").split(",") if p.strip())
    return Signature(params, result.strip())


def function(
    name: str, *signatures: str, member: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``impl(frame, *args)``; signatures read ``"(string, int) -> bool"``."""
    parsed = tuple(_parse_signature(s) for s in signatures)
    arities = {len(s.params) - (1 if member else 0) for s in parsed}
    if len(arities) != 1:
        raise ValueError(f"{name}: one registration per arity")
    arity = arities.pop()

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        key = (name, member, arity)
        existing = REGISTRY.get(key)
        if existing is not None:
            raise ValueError(f"{name}/{arity} registered twice")
        REGISTRY[key] = FunctionDef(name, member, arity, impl, parsed)
        (MEMBER_NAMES if member else GLOBAL_NAMES).add(name)
        return impl

    return register


def lookup(name: str, member: bool, arity: int) -> FunctionDef | None:
    return REGISTRY.get((name, member, arity))
