"""The CEL abstract syntax tree produced by the parser (macros already expanded).

Every node records ``pos``, the code-point offset of the token that names it, so that compile
errors can point at the source like cel-go does (``ERROR: <input>:1:5: ...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Node:
    pos: int


@dataclass(frozen=True, slots=True)
class Literal(Node):
    value: Any


@dataclass(frozen=True, slots=True)
class Ident(Node):
    name: str


@dataclass(frozen=True, slots=True)
class Select(Node):
    """``operand.field`` (``optional`` for ``operand.?field``)."""

    operand: Node
    field: str
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Has(Node):
    """``has(operand.field)``: presence test, never reads the value."""

    operand: Node
    field: str


@dataclass(frozen=True, slots=True)
class Index(Node):
    """``operand[index]`` (``optional`` for ``operand[?index]``)."""

    operand: Node
    index: Node
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Call(Node):
    """A function or operator call. ``target`` is the receiver of a member call.

    Operators use cel-go's internal names: ``_+_``, ``_==_``, ``!_``, ``-_``, ``_?_:_``,
    ``_&&_``, ``_||_``, ``@in``.
    """

    function: str
    args: tuple[Node, ...]
    target: Node | None = None


@dataclass(frozen=True, slots=True)
class ListLit(Node):
    elements: tuple[Node, ...]
    optional_indices: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class MapEntry:
    key: Node
    value: Node
    optional: bool = False


@dataclass(frozen=True, slots=True)
class MapLit(Node):
    entries: tuple[MapEntry, ...]


@dataclass(frozen=True, slots=True)
class StructLit(Node):
    """``Name{field: value}``: message construction. No message types are declared in the
    placement environment, so the checker always rejects it; it is parsed only to report that."""

    type_name: str


@dataclass(frozen=True, slots=True)
class Comprehension(Node):
    """An expanded macro over ``range``: ``kind`` is one of ``all``, ``exists``,
    ``exists_one``, ``map``, ``filter``, ``optMap``, ``optFlatMap``.

    ``predicate`` is the filter of the three-argument ``map`` (``None`` otherwise); ``body`` is
    the predicate of all/exists/exists_one/filter and the transform of map/optMap/optFlatMap.
    """

    kind: str
    range: Node
    var: str
    body: Node
    predicate: Node | None = None
