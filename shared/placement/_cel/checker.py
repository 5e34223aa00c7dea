"""Compile-time checks: declarations and the overloads that can be decided statically.

cel-go type-checks an expression against its declarations before running it, so an unknown
identifier or function (``invalid.expression``) or a call that no overload accepts
(``size(1)``, ``1 == "a"``) makes the placement Misconfigured instead of silently matching
nothing. ``managedCluster`` is ``map(string, dyn)``, so anything read from it is ``dyn`` and
only literal-typed mistakes are caught — as in cel-go.

The checker also resolves names: namespaced functions (``optional.of``, ``strings.quote``) become
global calls, and type names (``int``, ``string``, ...) become type literals.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from shared.placement._cel import ast
from shared.placement._cel.library import DYN, GLOBAL_NAMES, MEMBER_NAMES, lookup
from shared.placement._cel.values import CelType, Uint

VARIABLES: Final = {"managedCluster": "map"}

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
_COMPARISON: Final[_Signatures] = [
    ((a, b), "bool") for a in _ORDERED for b in _ORDERED if a == b or (a in _NUMERIC and b in _NUMERIC)
]

OPERATORS: Final[dict[str, _Signatures]] = {
    "_+_": [
        *_ARITH,
        (("string", "string"), "string"),
        (("bytes", "bytes"), "bytes"),
        (("list", "list"), "list"),
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
_COMPREHENSION_RESULT: Final = {
    "all": "bool",
    "exists": "bool",
    "exists_one": "bool",
    "map": "list",
    "filter": "list",
    "optMap": "optional",
    "optFlatMap": "optional",
}


class CheckError(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def literal_type(value: object) -> str:
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
        return "null"
    if t is CelType:
        return "type"
    return DYN


def _accepts(param: str, arg: str) -> bool:
    return param in (DYN, arg) or arg in (DYN, "null")


def _no_overload(name: str, types: list[str], pos: int) -> CheckError:
    shown = ", ".join("null_type" if t == "null" else t for t in types)
    return CheckError(f"found no matching overload for '{name}' applied to '({shown})'", pos)


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
    def __init__(self) -> None:
        self.scopes: list[str] = []

    def declared(self, name: str) -> bool:
        return name in self.scopes or name in VARIABLES

    def check(self, node: ast.Node) -> tuple[ast.Node, str]:
        if isinstance(node, ast.Literal):
            return node, literal_type(node.value)
        if isinstance(node, ast.Ident):
            return self.ident(node)
        if isinstance(node, ast.Select):
            return self.select(node)
        if isinstance(node, ast.Has):
            operand, t = self.check(node.operand)
            if t not in (DYN, "map", "optional", "null"):
                raise CheckError(f"invalid type for field selection: {t}", node.pos)
            return replace(node, operand=operand), "bool"
        if isinstance(node, ast.Index):
            operand, t = self.check(node.operand)
            index, it = self.check(node.index)
            if t not in (DYN, "list", "map", "optional", "null"):
                raise _no_overload("_[_]", [t, it], node.pos)
            if t == "list" and it not in (DYN, "int", "uint", "double"):
                raise _no_overload("_[_]", [t, it], node.pos)
            return replace(
                node, operand=operand, index=index
            ), "optional" if node.optional or t == "optional" else DYN
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.ListLit):
            elements = tuple(self.check(e)[0] for e in node.elements)
            return replace(node, elements=elements), "list"
        if isinstance(node, ast.MapLit):
            entries = []
            for entry in node.entries:
                key, kt = self.check(entry.key)
                if kt not in (DYN, "int", "uint", "bool", "string"):
                    raise CheckError(f"unsupported map key type: {kt}", entry.key.pos)
                value, _ = self.check(entry.value)
                entries.append(ast.MapEntry(key, value, entry.optional))
            return replace(node, entries=tuple(entries)), "map"
        if isinstance(node, ast.StructLit):
            raise CheckError(f"undeclared reference to '{node.type_name}' (in container '')", node.pos)
        if isinstance(node, ast.Comprehension):
            return self.comprehension(node)
        raise CheckError("unsupported expression", node.pos)

    def ident(self, node: ast.Ident) -> tuple[ast.Node, str]:
        if node.name in self.scopes:
            return node, DYN
        if node.name in VARIABLES:
            return node, VARIABLES[node.name]
        if node.name in TYPE_NAMES:
            return ast.Literal(node.pos, CelType(TYPE_NAMES[node.name])), "type"
        raise CheckError(f"undeclared reference to '{node.name}' (in container '')", node.pos)

    def select(self, node: ast.Select) -> tuple[ast.Node, str]:
        qualified = _qualified_name(node)
        if qualified in TYPE_NAMES:
            root = qualified.split(".")[0] if qualified else ""
            if not self.declared(root):
                return ast.Literal(node.pos, CelType(TYPE_NAMES[qualified])), "type"
        operand, t = self.check(node.operand)
        if t not in (DYN, "map", "optional", "null"):
            raise CheckError(f"type '{t}' does not support field selection", node.pos)
        return replace(node, operand=operand), "optional" if node.optional or t == "optional" else DYN

    def call(self, node: ast.Call) -> tuple[ast.Node, str]:
        if node.function in OPERATORS:
            args, types = self.check_args(node.args)
            return replace(node, args=args), self.resolve_operator(node, types)
        if node.function in ("_==_", "_!=_"):
            args, types = self.check_args(node.args)
            a, b = types
            # (A, A): cel-go rejects 1 == 1.0 and 1 == "a" at compile time, but not dyn operands
            if a not in (DYN, "null") and b not in (DYN, "null") and a != b:
                raise _no_overload(node.function, types, node.pos)
            return replace(node, args=args), "bool"
        if node.function == "@in":
            args, types = self.check_args(node.args)
            if types[1] not in (DYN, "list", "map"):
                raise _no_overload("@in", types, node.pos)
            return replace(node, args=args), "bool"
        if node.function == "_?_:_":
            args, types = self.check_args(node.args)
            cond, then, other = types
            if cond not in (DYN, "bool"):
                raise _no_overload("_?_:_", types, node.pos)
            if then != other and DYN not in (then, other) and "null" not in (then, other):
                raise _no_overload("_?_:_", types, node.pos)
            return replace(node, args=args), then if then == other else DYN
        if node.target is not None:
            qualified = _qualified_name(node.target)
            if qualified is not None and not self.declared(qualified.split(".")[0]):
                full = f"{qualified}.{node.function}"
                if full in GLOBAL_NAMES:
                    return self.call(ast.Call(node.pos, full, node.args))
            target, target_type = self.check(node.target)
            args, types = self.check_args(node.args)
            return replace(node, target=target, args=args), self.resolve_function(
                node, [target_type, *types], member=True
            )
        args, types = self.check_args(node.args)
        return replace(node, args=args), self.resolve_function(node, types, member=False)

    def check_args(self, nodes: tuple[ast.Node, ...]) -> tuple[tuple[ast.Node, ...], list[str]]:
        checked = [self.check(n) for n in nodes]
        return tuple(n for n, _ in checked), [t for _, t in checked]

    def resolve_operator(self, node: ast.Call, types: list[str]) -> str:
        results = {
            result
            for params, result in OPERATORS[node.function]
            if all(_accepts(p, a) for p, a in zip(params, types, strict=True))
        }
        if not results:
            raise _no_overload(node.function, types, node.pos)
        return results.pop() if len(results) == 1 else DYN

    def resolve_function(self, node: ast.Call, types: list[str], member: bool) -> str:
        arity = len(types) - (1 if member else 0)
        fn = lookup(node.function, member, arity)
        if fn is None:
            if node.function in GLOBAL_NAMES or node.function in MEMBER_NAMES:
                raise _no_overload(node.function, types, node.pos)
            raise CheckError(f"undeclared reference to '{node.function}' (in container '')", node.pos)
        results = {
            sig.result
            for sig in fn.signatures
            if all(_accepts(p, a) for p, a in zip(sig.params, types, strict=True))
        }
        if not results:
            raise _no_overload(node.function, types, node.pos)
        return results.pop() if len(results) == 1 else DYN

    def comprehension(self, node: ast.Comprehension) -> tuple[ast.Node, str]:
        rng, rt = self.check(node.range)
        if node.kind in ("optMap", "optFlatMap"):
            if rt not in (DYN, "optional"):
                raise _no_overload(node.kind, [rt], node.pos)
        elif rt not in (DYN, "list", "map"):
            raise CheckError(
                f"expression of type '{rt}' cannot be range of a comprehension (must be list, map, or dynamic)",
                node.range.pos,
            )
        self.scopes.append(node.var)
        try:
            predicate = None
            if node.predicate is not None:
                predicate, pt = self.check(node.predicate)
                if pt not in (DYN, "bool"):
                    raise _no_overload("_&&_", [pt], node.predicate.pos)
            body, bt = self.check(node.body)
            if node.kind in ("all", "exists", "exists_one", "filter") and bt not in (DYN, "bool"):
                raise _no_overload("_&&_" if node.kind != "exists" else "_||_", ["bool", bt], node.body.pos)
            if node.kind == "optFlatMap" and bt not in (DYN, "optional"):
                raise _no_overload("optFlatMap", [bt], node.body.pos)
        finally:
            self.scopes.pop()
        return replace(node, range=rng, body=body, predicate=predicate), _COMPREHENSION_RESULT[node.kind]


def check(node: ast.Node) -> tuple[ast.Node, str]:
    """Check and resolve ``node``; raises :class:`CheckError`."""
    return Checker().check(node)
