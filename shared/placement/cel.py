"""The CEL part of the Predicate filter: compile once, evaluate per cluster.

Usage::

    compiled = [compile_cel(e) for e in predicate.cel_expressions]   # CelCompileError → Misconfigured
    view = cluster_cel_view(raw_cluster)                             # cache per cluster version
    matched = evaluate_predicate_cel(compiled, view, name, scores)   # never raises

Why a CEL engine of our own (``fleetplace.shared.placement._cel``) rather than a library: OCM's
environment needs cel-go's compile-time declaration check (an unknown function or a call no
overload accepts makes the placement Misconfigured), optional syntax (``a.?b``, ``m[?k]``),
heterogeneous numeric equality, the Kubernetes libraries and OCM's own functions, and a cost
limit that stops a runaway expression. The Python CEL packages lack some of these, and none can
meter or interrupt an evaluation, so a nested comprehension over a large annotation would hang
the worker instead of hitting its limit. CEL's grammar is small, so we own the parser, a
declaration/overload checker and a closure-compiling interpreter. The cost model is a sound
approximation of Kubernetes' (1 unit per operation and per comprehension step, 0.1 per string
byte or list element traversed, charged *before* building large results); only the limits are
observable, not exact cost numbers. cel-spec's public conformance cases run against it
(``tests/placement/test_cel_spec_conformance.py``).

What expressions can use — the environment OCM builds (cel-go's standard library plus the
options and libraries below, at the versions OCM vendors):

* standard CEL: operators with int64/uint64 overflow errors and heterogeneous equality, macros
  (``has``, ``all``, ``exists``, ``exists_one``, ``map`` with 2 or 3 arguments, ``filter``),
  conversions, ``type()``/``dyn()``, ``matches`` (RE2), timestamps and durations with getters;
* optional types: ``a.?b``, ``m[?k]``, ``[?x]``, ``{?k: v}``, ``optional.of/none/ofNonZeroValue``,
  ``hasValue``, ``value``, ``or``, ``orValue``, ``optMap``, ``optFlatMap``;
* the strings extension (``charAt`` … ``format``, ``strings.quote``);
* Kubernetes Lists, Regex, Quantity (``sign`` is a global function: ``sign(quantity(x))``),
  Semver (strict, base version only), URLs, IP/CIDR, Format;
* OCM's ``<cluster>.scores(name)`` and ``<string>.parseJSON()``.

Not available (as in OCM's environment, or not needed by it): protobuf message types and
construction, two-variable comprehensions, ``cel.bind``, the math/sets/encoders/lists extensions.
Known simplifications: cross-type numeric ordering (``1 < 1.5``) is accepted at compile time
(Kubernetes enables it), and a map literal mixing ``true`` and ``1`` keys is not kept apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from fleetplace.shared.placement._cel import ast
from fleetplace.shared.placement._cel.checker import CheckErrors, check
from fleetplace.shared.placement._cel.interpreter import Program, compile_program
from fleetplace.shared.placement._cel.library import Frame
from fleetplace.shared.placement._cel.parser import ParseError, parse
from fleetplace.shared.placement._cel.values import CelEvalError, CostLimitExceeded
from fleetplace.shared.placement._cel.view import ViewError, managed_cluster_view

__all__ = [
    "EXPRESSION_COST_LIMIT",
    "PREDICATE_COST_BUDGET",
    "CelCompileError",
    "CompiledCel",
    "ScoresLookup",
    "cluster_cel_view",
    "compile_cel",
    "evaluate_predicate_cel",
]

# each expression may spend 1,000,000 cost units; all expressions of one predicate share
# 10,000,000 per cluster
EXPRESSION_COST_LIMIT: Final = 1_000_000
PREDICATE_COST_BUDGET: Final = 10_000_000

ScoresLookup = Callable[[str, str], Sequence[tuple[str, int]] | None]
"""(cluster name, resource name) → the AddOnPlacementScore's ``status.scores`` as (name, value)
pairs in stored order, or ``None`` when that object does not exist."""


class CelCompileError(Exception):
    """The expression does not compile; ``str(e)`` is the placement's Misconfigured message."""


@dataclass(frozen=True, eq=False)
class CompiledCel:
    """A checked, compiled expression. Immutable; equality and hash are by identity."""

    source: str
    _program: Program = field(repr=False)


def _location(source: str, pos: int) -> tuple[int, int, str]:
    line_start = source.rfind("\n", 0, pos) + 1
    line_end = source.find("\n", pos)
    line_text = source[line_start : line_end if line_end >= 0 else len(source)]
    return source.count("\n", 0, pos) + 1, pos - line_start + 1, line_text


def _issue(source: str, message: str, pos: int) -> str:
    """cel-go's issue format: ``ERROR: <input>:line:col: message`` plus a caret snippet."""
    line, column, text = _location(source, pos)
    return f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * (column - 1)}^"


def compile_cel(expression: str) -> CompiledCel:
    """Parse, check and compile one ``celExpressions`` entry; raises :class:`CelCompileError`."""
    try:
        node: ast.Node = parse(expression)
        node, _ = check(node)
    except ParseError as e:
        raise CelCompileError(f"compilation failed: {_issue(expression, e.message, e.pos)}") from None
    except CheckErrors as e:
        issues = "\n".join(_issue(expression, err.message, err.pos) for err in e.errors)
        raise CelCompileError(f"compilation failed: {issues}") from None
    except RecursionError:
        raise CelCompileError(
            f"compilation failed: {_issue(expression, 'expression recursion limit exceeded', 0)}"
        ) from None
    try:
        program = compile_program(node)
    except RecursionError:
        raise CelCompileError("instantiation failed: expression nesting too deep") from None
    return CompiledCel(expression, program)


class _UnconvertibleCluster(dict[str, Any]):
    """The view of a cluster OCM could not convert: it matches no CEL expression."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


def cluster_cel_view(raw_cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The ``managedCluster`` variable for ``raw_cluster`` (a ManagedCluster as JSON-like data).

    Compute once per cluster version and cache it. A cluster that the typed v1 decoding would
    reject yields a view that no expression matches, rather than an exception.
    """
    try:
        return managed_cluster_view(raw_cluster)
    except ViewError as e:
        return _UnconvertibleCluster(str(e))


def evaluate_predicate_cel(
    exprs: Sequence[CompiledCel],
    view: Mapping[str, Any],
    cluster_name: str,
    scores: ScoresLookup,
) -> bool:
    """True iff every expression yields boolean ``true`` for this cluster.

    Expressions run in order and stop at the first that does not. Runtime errors, non-boolean
    results and cost overruns (1,000,000 per expression, 10,000,000 for the predicate) count as
    "no match"; this function never raises. ``scores()`` reads the namespace named by its
    receiver's ``metadata.name``, as OCM does; ``cluster_name`` stands in when the view has none.
    """
    if isinstance(view, _UnconvertibleCluster):
        return False
    if not exprs:
        return True

    def lookup(name: str, resource: str) -> Sequence[tuple[str, int]] | None:
        return scores(name or cluster_name, resource)

    remaining = PREDICATE_COST_BUDGET
    for compiled in exprs:
        frame = Frame({"managedCluster": view}, min(EXPRESSION_COST_LIMIT, remaining), lookup)
        try:
            result = compiled._program(frame)
        except (CelEvalError, CostLimitExceeded, RecursionError):
            return False
        except Exception:
            # A fault inside a function implementation is still an evaluation error for this
            # one expression; the contract is that a cluster simply does not match.
            return False
        if result is not True:
            return False
        remaining -= frame.cost
    return True
