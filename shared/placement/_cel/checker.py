"""Compile-time checks: declarations and the overloads that can be decided statically.

cel-go type-checks an expression against its declarations before running it, so an unknown
identifier or function (``invalid.expression``) or a call that no overload accepts
(``size(1)``, ``1 == "a"``, ``[1, 2].exists(x, x == "a")``) makes the placement Misconfigured
instead of silently matching nothing. ``managedCluster`` is ``map(string, dyn)``, so anything
read from it is ``dyn`` and only mistakes visible in literals are caught — as in cel-go.

Types are a kind name (``"int"``, ``"dyn"``, ``"kubernetes.Quantity"``) or a tuple for the
parameterised kinds: ``("list", T)``, ``("map", K, V)``, ``("optional", T)``. Heterogeneous
list and map literals get ``dyn`` parameters, as cel-go does by default.

The checker also resolves names: namespaced functions (``optional.of``, ``strings.quote``)
become global calls, and type names (``int``, ``string``, ...) become type literals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final, TypeAlias, Union

from fleetplace.shared.placement._cel import ast
from fleetplace.shared.placement._cel.library import DYN, GLOBAL_NAMES, MEMBER_NAMES, lookup
from fleetplace.shared.placement._cel.values import CelType, Uint

Type: TypeAlias = Union[str, tuple["Type", ...]]  # noqa: UP007 - recursive alias needs the string form

NULL: Final = "null_type"
MAP_STRING_DYN: Final[Type] = ("map", "string", DYN)
VARIABLES: Final[dict[str, Type]] = {"managedCluster": MAP_STRING_DYN}

TYPE_NAMES: Final = {
    "int": "int",
    "uint": "uint",
    "double": "double",
    "bool": "bool",
    "string": "string",
    "bytes": "bytes",
    "list": "list",
    "map": "map",
    "null_type": "null_type",
    "type": "type",
    "optional_type": "optional_type",
    "google.protobuf.Timestamp": "google.protobuf.Timestamp",
    "google.protobuf.Duration": "google.protobuf.Duration",
}

_NUMERIC: Final = ("int", "uint", "double")
_Signatures = list[tuple[tuple[str, ...], str]]
_ARITH: Final[_Signatures] = [((t, t), t) for t in _NUMERIC]
_ORDERED: Final = [*_NUMERIC, "string", "bytes", "bool", "timestamp", "duration"]
# cross-type numeric ordering is on (Kubernetes' CrossTypeNumericComparisons)
_COMPARISON: Final[_Signatures] = [
    ((a, b), "bool") for a in _ORDERED for b in _ORDERED if a == b or (a in _NUMERIC and b in _NUMERIC)
]

OPERATORS: Final[dict[str, _Signatures]] = {
    "_+_": [
        *_ARITH,
        (("string", "string"), "string"),
        (("bytes", "bytes"), "bytes"),
        (("timestamp", "duration"), "timestamp"),
        (("duration", "timestamp"), "timestamp"),
        (("duration", "duration"), "duration"),
    ],
    "_-_": [
        *_ARITH,
        (("timestamp", "timestamp"), "duration"),
        (("timestamp", "duration"), "timestamp"),
        (("duration", "duration"), "duration"),
    ],
    "_*_": _ARITH,
    "_/_": _ARITH,
    "_%_": [(("int", "int"), "int"), (("uint", "uint"), "uint")],
    "-_": [(("int",), "int"), (("double",), "double")],
    "!_": [(("bool",), "bool")],
    "_<_": _COMPARISON,
    "_<=_": _COMPARISON,
    "_>_": _COMPARISON,
    "_>=_": _COMPARISON,
    "_&&_": [(("bool", "bool"), "bool")],
    "_||_": [(("bool", "bool"), "bool")],
}


class CheckError(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


class CheckErrors(Exception):
    """Every problem found, ordered by position (cel-go reports them all, not just the first)."""

    def __init__(self, errors: list[CheckError]) -> None:
        super().__init__("; ".join(e.message for e in errors))
        self.errors = sorted(errors, key=lambda e: e.pos)


def kind(t: Type) -> str:
    return t if isinstance(t, str) else str(t[0])


def format_type(t: Type) -> str:
    if isinstance(t, str):
        return t
    name = "optional_type" if t[0] == "optional" else str(t[0])
    return f"{name}({', '.join(format_type(p) for p in t[1:])})"


def compatible(a: Type, b: Type) -> bool:
    """Whether values of static types ``a`` and ``b`` may meet in an (A, A) overload."""
    if a == DYN or b == DYN:
        return True
    if a == NULL or b == NULL:
        return a == b or kind(b if a == NULL else a) in _NULLABLE
    if isinstance(a, str) or isinstance(b, str):
        return kind(a) == kind(b)  # a bare kind ("list") carries no parameters to disagree on
    if a[0] != b[0] or len(a) != len(b):
        return False
    return all(compatible(x, y) for x, y in zip(a[1:], b[1:], strict=True))


def join(types: list[Type]) -> Type:
    """The element type of a literal: the common type, or ``dyn`` when they differ."""
    if not types:
        return DYN
    first = types[0]
    return first if all(t == first for t in types[1:]) else DYN


def literal_type(value: object) -> Type:
    t = type(value)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is Uint:
        return "uint"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if value is None:
        return NULL
    if t is CelType:
        return "type"
    return DYN


# null is assignable to the nullable types (the well-known timestamp/duration messages, optional)
_NULLABLE: Final = ("timestamp", "duration", "optional")


def _accepts(param: str, arg: Type) -> bool:
    return param == DYN or arg == DYN or param == kind(arg) or (arg == NULL and param in _NULLABLE)


def _no_overload(name: str, types: list[Type], pos: int, member: bool = False) -> CheckError:
    """cel-go's message; a receiver-style call shows its receiver's type before the arguments,
    as in ``'string.(int)'``."""
    receiver = f"{format_type(types[0])}." if member else ""
    shown = ", ".join(format_type(t) for t in types[1 if member else 0 :])
    return CheckError(f"found no matching overload for '{name}' applied to '{receiver}({shown})'", pos)


def _element(t: Type) -> Type:
    """The comprehension variable's type when iterating ``t`` (a list's element, a map's key)."""
    if isinstance(t, tuple) and t[0] in ("list", "map"):
        return t[1]
    return DYN


def _qualified_name(node: ast.Node) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Select) and not node.optional:
        parts.append(node.field)
        node = node.operand
    if not isinstance(node, ast.Ident):
        return None
    parts.append(node.name)
    return ".".join(reversed(parts))


class Checker:
    def __init__(self, variables: Mapping[str, Type]) -> None:
        self.variables = variables
        self.scopes: list[tuple[str, Type]] = []
        self.errors: list[CheckError] = []

    def scoped(self, name: str) -> Type | None:
        for var, t in reversed(self.scopes):
            if var == name:
                return t
        return None

    def declared(self, name: str) -> bool:
        return self.scoped(name) is not None or name in self.variables

    def check(self, node: ast.Node) -> tuple[ast.Node, Type]:
        """Check one node; a problem is recorded and the node typed ``dyn`` so that checking
        goes on and reports the other problems too."""
        try:
            return self.check_node(node)
        except CheckError as e:
            self.errors.append(e)
            return node, DYN

    def check_node(self, node: ast.Node) -> tuple[ast.Node, Type]:
        if isinstance(node, ast.Literal):
            return node, literal_type(node.value)
        if isinstance(node, ast.Ident):
            return self.ident(node)
        if isinstance(node, ast.Select):
            return self.select(node)
        if isinstance(node, ast.Has):
            operand, t = self.check(node.operand)
            base = _optional_inner(t) if kind(t) == "optional" else t
            if kind(base) not in (DYN, "map"):
                raise CheckError(f"invalid type for field selection: {format_type(t)}", node.pos)
            return replace(node, operand=operand), "bool"
        if isinstance(node, ast.Index):
            return self.index(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.ListLit):
            checked = [self.check(e) for e in node.elements]
            types = [
                _optional_inner(t) if i in node.optional_indices else t for i, (_, t) in enumerate(checked)
            ]
            for i in node.optional_indices:
                if kind(checked[i][1]) not in (DYN, "optional"):
                    raise _no_overload("optional list element", [checked[i][1]], node.elements[i].pos)
            return replace(node, elements=tuple(n for n, _ in checked)), ("list", join(types))
        if isinstance(node, ast.MapLit):
            return self.map_literal(node)
        if isinstance(node, ast.StructLit):
            raise CheckError(f"undeclared reference to '{node.type_name}' (in container '')", node.pos)
        if isinstance(node, ast.Comprehension):
            return self.comprehension(node)
        raise CheckError("unsupported expression", node.pos)

    def map_literal(self, node: ast.MapLit) -> tuple[ast.Node, Type]:
        entries: list[ast.MapEntry] = []
        key_types: list[Type] = []
        value_types: list[Type] = []
        for entry in node.entries:
            key, kt = self.check(entry.key)  # a bad key type is a run-time error in cel-go
            value, vt = self.check(entry.value)
            if entry.optional:
                if kind(vt) not in (DYN, "optional"):
                    raise _no_overload("optional map entry", [vt], entry.value.pos)
                vt = _optional_inner(vt)
            entries.append(ast.MapEntry(key, value, entry.optional))
            key_types.append(kt)
            value_types.append(vt)
        return replace(node, entries=tuple(entries)), ("map", join(key_types), join(value_types))

    def ident(self, node: ast.Ident) -> tuple[ast.Node, Type]:
        scoped = self.scoped(node.name)
        if scoped is not None:
            return node, scoped
        if node.name in self.variables:
            return node, self.variables[node.name]
        if node.name in TYPE_NAMES:
            return ast.Literal(node.pos, CelType(TYPE_NAMES[node.name])), "type"
        raise CheckError(f"undeclared reference to '{node.name}' (in container '')", node.pos)

    def select(self, node: ast.Select) -> tuple[ast.Node, Type]:
        qualified = _qualified_name(node)
        if qualified is not None and qualified in TYPE_NAMES and not self.declared(qualified.split(".")[0]):
            return ast.Literal(node.pos, CelType(TYPE_NAMES[qualified])), "type"
        operand, t = self.check(node.operand)
        base = _optional_inner(t) if kind(t) == "optional" else t
        if kind(base) not in (DYN, "map"):
            raise CheckError(f"type '{format_type(base)}' does not support field selection", node.pos)
        value = base[2] if isinstance(base, tuple) else DYN
        if node.optional or kind(t) == "optional":
            return replace(node, operand=operand), optional_of(value)
        return replace(node, operand=operand), value

    def index(self, node: ast.Index) -> tuple[ast.Node, Type]:
        operand, t = self.check(node.operand)
        index, it = self.check(node.index)
        base = _optional_inner(t) if kind(t) == "optional" else t
        if kind(base) == "list":
            if not compatible(it, "int"):
                raise _no_overload("_[_]", [t, it], node.pos)
            value = _element(base)
        elif kind(base) == "map":
            if isinstance(base, tuple) and not compatible(it, base[1]):
                raise _no_overload("_[_]", [t, it], node.pos)
            value = base[2] if isinstance(base, tuple) else DYN
        elif base == DYN or (base == NULL and node.optional):
            value = DYN
        else:
            raise _no_overload("_[_]", [t, it], node.pos)
        if t in (DYN, NULL) or (kind(t) == "optional" and base == DYN):
            return replace(node, operand=operand, index=index), DYN  # [?k] on dyn stays dyn
        if node.optional or kind(t) == "optional":
            return replace(node, operand=operand, index=index), optional_of(value)
        return replace(node, operand=operand, index=index), value

    def call(self, node: ast.Call) -> tuple[ast.Node, Type]:
        name = node.function
        if name in ("_==_", "_!=_"):
            args, types = self.check_args(node.args)
            if not compatible(types[0], types[1]):
                raise _no_overload(name, types, node.pos)
            return replace(node, args=args), "bool"
        if name == "_+_":
            args, types = self.check_args(node.args)
            if kind(types[0]) == "list" or kind(types[1]) == "list":
                if not all(kind(t) in ("list", DYN) for t in types) or not compatible(*types):
                    raise _no_overload(name, types, node.pos)
                return replace(node, args=args), types[0] if types[0] != DYN else types[1]
            return replace(node, args=args), self.resolve_operator(node, types)
        if name in OPERATORS:
            args, types = self.check_args(node.args)
            return replace(node, args=args), self.resolve_operator(node, types)
        if name == "@in":
            args, types = self.check_args(node.args)
            elem, container = types
            if kind(container) not in (DYN, "list", "map") or not compatible(elem, _element(container)):
                raise _no_overload("@in", types, node.pos)
            return replace(node, args=args), "bool"
        if name == "_?_:_":
            args, types = self.check_args(node.args)
            cond, then, other = types
            if not compatible(cond, "bool") or not compatible(then, other):
                raise _no_overload("_?_:_", types, node.pos)
            return replace(node, args=args), then if then == other else DYN
        if node.target is not None:
            qualified = _qualified_name(node.target)
            if qualified is not None and not self.declared(qualified.split(".")[0]):
                full = f"{qualified}.{name}"
                if full in GLOBAL_NAMES:
                    return self.call(ast.Call(node.pos, full, node.args))
            target, target_type = self.check(node.target)
            args, types = self.check_args(node.args)
            result = self.resolve_function(node, [target_type, *types], member=True)
            return replace(node, target=target, args=args), result
        args, types = self.check_args(node.args)
        return replace(node, args=args), self.resolve_function(node, types, member=False)

    def check_args(self, nodes: tuple[ast.Node, ...]) -> tuple[tuple[ast.Node, ...], list[Type]]:
        checked = [self.check(n) for n in nodes]
        return tuple(n for n, _ in checked), [t for _, t in checked]

    def resolve_operator(self, node: ast.Call, types: list[Type]) -> Type:
        results = {
            result
            for params, result in OPERATORS[node.function]
            if all(_accepts(p, a) for p, a in zip(params, types, strict=True))
        }
        if not results:
            raise _no_overload(node.function, types, node.pos)
        return results.pop() if len(results) == 1 else DYN

    def resolve_function(self, node: ast.Call, types: list[Type], member: bool) -> Type:
        arity = len(types) - (1 if member else 0)
        fn = lookup(node.function, member, arity)
        if fn is None:
            if node.function in GLOBAL_NAMES or node.function in MEMBER_NAMES:
                raise _no_overload(node.function, types, node.pos, member)
            raise CheckError(f"undeclared reference to '{node.function}' (in container '')", node.pos)
        results: set[Type] = {
            sig.result
            for sig in fn.signatures
            if all(_accepts(p, a) for p, a in zip(sig.params, types, strict=True))
        }
        if not results:
            raise _no_overload(node.function, types, node.pos, member)
        if member and kind(types[0]) == "list":
            element = _element(types[0])
            allowed = _LIST_ELEMENT_KINDS.get(node.function)
            if allowed is not None and element != DYN:
                if kind(element) not in allowed:
                    raise _no_overload(node.function, types, node.pos, member)
                return element if node.function != "isSorted" else "bool"
            if node.function in ("indexOf", "lastIndexOf") and not compatible(types[1], element):
                raise _no_overload(node.function, types, node.pos, member)
        result = results.pop() if len(results) == 1 else DYN
        return _refine(node.function, types, result)

    def comprehension(self, node: ast.Comprehension) -> tuple[ast.Node, Type]:
        rng, rt = self.check(node.range)
        if node.kind in ("optMap", "optFlatMap"):
            if kind(rt) not in (DYN, NULL, "optional"):
                raise _no_overload(node.kind, [rt], node.pos)
            var_type = _optional_inner(rt)
        elif kind(rt) not in (DYN, "list", "map"):
            raise CheckError(
                f"expression of type '{format_type(rt)}' cannot be range of a comprehension"
                " (must be list, map, or dynamic)",
                node.range.pos,
            )
        else:
            var_type = _element(rt)
        self.scopes.append((node.var, var_type))
        try:
            predicate = None
            if node.predicate is not None:
                predicate, pt = self.check(node.predicate)
                if not compatible(pt, "bool"):
                    raise _no_overload("_&&_", ["bool", pt], node.predicate.pos)
            body, bt = self.check(node.body)
        finally:
            self.scopes.pop()
        if node.kind in ("all", "exists", "exists_one", "filter") and not compatible(bt, "bool"):
            raise _no_overload("_||_" if node.kind == "exists" else "_&&_", ["bool", bt], node.body.pos)
        if node.kind == "optFlatMap" and kind(bt) not in (DYN, "optional"):
            raise _no_overload("optFlatMap", [bt], node.body.pos)
        checked = replace(node, range=rng, body=body, predicate=predicate)
        if node.kind in ("all", "exists", "exists_one"):
            return checked, "bool"
        if node.kind == "map":
            return checked, ("list", bt)
        if node.kind == "filter":
            return checked, ("list", var_type)
        if node.kind == "optMap":
            return checked, optional_of(bt)
        return checked, bt if kind(bt) == "optional" else ("optional", DYN)


def optional_of(t: Type) -> Type:
    return ("optional", t)


def _optional_inner(t: Type) -> Type:
    return t[1] if isinstance(t, tuple) and t[0] == "optional" else DYN


# Kubernetes' Lists library declares these for lists of the listed element types only
# (``["a"].sum()`` does not compile); a list of ``dyn`` elements is accepted and checked at run time.
_COMPARABLE: Final = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
_LIST_ELEMENT_KINDS: Final[dict[str, tuple[str, ...]]] = {
    "isSorted": _COMPARABLE,
    "min": _COMPARABLE,
    "max": _COMPARABLE,
    "sum": ("int", "uint", "double", "duration"),
}

_RESULT_TYPES: Final[dict[str, Type]] = {
    "split": ("list", "string"),
    "findAll": ("list", "string"),
    "scores": ("list", ("map", "string", DYN)),
    "getQuery": ("map", "string", ("list", "string")),
}


def _refine(function: str, types: list[Type], result: Type) -> Type:
    """Result types the signature table cannot express (they depend on an argument's type)."""
    if function in ("optional.of", "optional.ofNonZeroValue"):
        return optional_of(types[0])
    if function == "optional.none":
        return ("optional", DYN)
    if function == "value":
        return _optional_inner(types[0])
    if function == "or":
        return optional_of(_optional_inner(types[0]))
    if function == "orValue":
        # optional(T).orValue(T): T comes from the receiver, or from the default when unknown
        inner = _optional_inner(types[0])
        return inner if inner != DYN else types[1]
    if function == "dyn":
        return DYN
    if function in _RESULT_TYPES:
        return _RESULT_TYPES[function]
    if result == "list" or result == "map":
        return ("list", DYN) if result == "list" else ("map", DYN, DYN)
    if result == "optional":
        return ("optional", DYN)
    return result


def check(node: ast.Node, variables: Mapping[str, Type] = VARIABLES) -> tuple[ast.Node, Type]:
    """Check and resolve ``node`` against the declared ``variables`` (OCM's: ``managedCluster``);
    raises :class:`CheckErrors`."""
    checker = Checker(variables)
    checked = checker.check(node)
    if checker.errors:
        raise CheckErrors(checker.errors)
    return checked
