"""Turns a checked AST into a tree of Python closures, each metering its own cost.

Compiling once to closures (instead of walking the AST per evaluation) is what makes a label
comparison cost a few microseconds. Every closure that does work charges the frame before or as
it does it; work proportional to a size (string concatenation, list traversal, regex) is charged
at 0.1 unit per element, as in the Kubernetes cost model, so that a pathological expression
runs out of budget (1,000,000 units per expression) instead of running for minutes.

Errors follow CEL: they are exceptions (:class:`CelEvalError`) that the logical operators and
the ``all``/``exists`` macros absorb when the other side decides the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from fleetplace.shared.placement._cel import ast, operators
from fleetplace.shared.placement._cel.library import Frame, lookup, size_cost
from fleetplace.shared.placement._cel.values import (
    CelEvalError,
    CelOptional,
    CostLimitExceeded,
    Uint,
    cel_equals,
    map_lookup,
    type_name,
)

Program = Callable[[Frame], Any]

LIST_CREATE_COST: Final = 10
MAP_CREATE_COST: Final = 30
_MISSING: Final = object()
_SIZED: Final = (str, bytes, list, tuple)

_BINARY: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "_-_": operators.sub,
    "_*_": operators.mul,
    "_/_": operators.div,
    "_%_": operators.mod,
    "_<_": operators.less,
    "_<=_": operators.less_equal,
    "_>_": operators.greater,
    "_>=_": operators.greater_equal,
}


def _charge(frame: Frame, units: int) -> None:
    frame.cost += units
    if frame.cost > frame.limit:
        raise CostLimitExceeded


def compile_program(node: ast.Node) -> Program:
    if isinstance(node, ast.Literal):
        return _literal(node.value)
    if isinstance(node, ast.Ident):
        return _ident(node.name)
    if isinstance(node, ast.Select):
        return _select(compile_program(node.operand), node.field, node.optional)
    if isinstance(node, ast.Has):
        return _has(compile_program(node.operand), node.field)
    if isinstance(node, ast.Index):
        return _index(compile_program(node.operand), compile_program(node.index), node.optional)
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.ListLit):
        literals = [e.value for e in node.elements if isinstance(e, ast.Literal)]
        if not node.optional_indices and len(literals) == len(node.elements):
            return _constant_list(literals)
        return _list(tuple(compile_program(e) for e in node.elements), node.optional_indices)
    if isinstance(node, ast.MapLit):
        return _map(
            tuple((compile_program(e.key), compile_program(e.value), e.optional) for e in node.entries)
        )
    if isinstance(node, ast.Comprehension):
        return _comprehension(node)
    raise TypeError(f"cannot compile {type(node).__name__}")  # the checker rejects the rest


def _literal(value: Any) -> Program:
    def literal(frame: Frame) -> Any:
        return value

    return literal


def _ident(name: str) -> Program:
    def ident(frame: Frame) -> Any:
        frame.cost += 1
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        return frame.vars[name]

    return ident


def _select(operand: Program, field: str, optional: bool) -> Program:
    if optional:

        def optional_select(frame: Frame) -> Any:
            _charge(frame, 1)
            return operators.optional_select(operand(frame), field)

        return optional_select

    def select(frame: Frame) -> Any:
        frame.cost += 1
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        value = operand(frame)
        if type(value) is dict:
            try:
                return value[field]
            except KeyError:
                raise CelEvalError(f"no such key: {field}") from None
        return operators.select(value, field)

    return select


def _has(operand: Program, field: str) -> Program:
    def has(frame: Frame) -> bool:
        _charge(frame, 1)
        return operators.has_field(operand(frame), field)

    return has


def _index(operand: Program, key: Program, optional: bool) -> Program:
    if optional:

        def optional_index(frame: Frame) -> Any:
            _charge(frame, 1)
            return operators.optional_index(operand(frame), key(frame))

        return optional_index

    def index(frame: Frame) -> Any:
        frame.cost += 1
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        return operators.index(operand(frame), key(frame))

    return index


def _list(elements: tuple[Program, ...], optional_indices: frozenset[int]) -> Program:
    def list_literal(frame: Frame) -> list[Any]:
        _charge(frame, LIST_CREATE_COST)
        out: list[Any] = []
        for i, element in enumerate(elements):
            value = element(frame)
            if i in optional_indices:
                if type(value) is not CelOptional:
                    operators.no_overload("optional list element", value)
                if value.has_value:
                    out.append(value.value)
            else:
                out.append(value)
        return out

    return list_literal


def _constant_list(values: list[Any]) -> Program:
    """A list of literals is built once: CEL values are immutable, and nothing here changes a list
    in place (every operation that makes a list makes a new one). Charged as a list literal."""

    def constant_list(frame: Frame) -> list[Any]:
        _charge(frame, LIST_CREATE_COST)
        return values

    return constant_list


_KEY_TYPES: Final = (str, int, Uint, bool)


def _map(entries: tuple[tuple[Program, Program, bool], ...]) -> Program:
    def map_literal(frame: Frame) -> dict[Any, Any]:
        _charge(frame, MAP_CREATE_COST)
        out: dict[Any, Any] = {}
        for key_program, value_program, optional in entries:
            key = key_program(frame)
            if type(key) not in _KEY_TYPES:
                raise CelEvalError(f"unsupported key type: {type_name(key)}")
            value = value_program(frame)
            if optional:
                if type(value) is not CelOptional:
                    operators.no_overload("optional map entry", value)
                if not value.has_value:
                    continue
                value = value.value
            if map_lookup(out, key)[0]:
                raise CelEvalError(f"Failed with repeated key: {key}")
            out[key] = value
        return out

    return map_literal


# -- calls ------------------------------------------------------------------------------------------


def _resolve_undecided(name: str, left: Any, right: Any) -> bool:
    if left is True and right is True:
        return True
    if left is False and right is False:
        return False
    for side in (left, right):
        if isinstance(side, CelEvalError):
            raise side
    operators.no_overload(name, left, right)


def _and(a: Program, b: Program) -> Program:
    def logical_and(frame: Frame) -> bool:
        try:
            left = a(frame)
        except CelEvalError as e:
            left = e
        if left is False:
            return False
        try:
            right = b(frame)
        except CelEvalError as e:
            right = e
        if right is False:
            return False
        return _resolve_undecided("_&&_", left, right)

    return logical_and


def _or(a: Program, b: Program) -> Program:
    def logical_or(frame: Frame) -> bool:
        try:
            left = a(frame)
        except CelEvalError as e:
            left = e
        if left is True:
            return True
        try:
            right = b(frame)
        except CelEvalError as e:
            right = e
        if right is True:
            return True
        return _resolve_undecided("_||_", left, right)

    return logical_or


def _conditional(cond: Program, then: Program, other: Program) -> Program:
    def conditional(frame: Frame) -> Any:
        c = cond(frame)
        if c is True:
            return then(frame)
        if c is False:
            return other(frame)
        operators.no_overload("_?_:_", c)

    return conditional


def _equality(a: Program, b: Program, negate: bool) -> Program:
    def equality(frame: Frame) -> bool:
        x = a(frame)
        y = b(frame)
        frame.cost += 1
        if type(x) in _SIZED and type(y) in _SIZED:
            frame.cost += size_cost(min(len(x), len(y)))
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        return cel_equals(x, y) is not negate

    return equality


def _add(a: Program, b: Program) -> Program:
    def add(frame: Frame) -> Any:
        x = a(frame)
        y = b(frame)
        frame.cost += 1
        if type(x) in _SIZED and type(y) in _SIZED:
            # charged before concatenating, so repeated doubling cannot exhaust memory
            frame.cost += size_cost(len(x) + len(y))
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        return operators.add(x, y)

    return add


def _binary(fn: Callable[[Any, Any], Any], a: Program, b: Program) -> Program:
    def binary(frame: Frame) -> Any:
        x = a(frame)
        y = b(frame)
        frame.cost += 1
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        return fn(x, y)

    return binary


def _in(a: Program, b: Program) -> Program:
    def membership(frame: Frame) -> bool:
        x = a(frame)
        container = b(frame)
        cost = 1 + (size_cost(len(container)) if type(container) in (list, tuple) else 0)
        _charge(frame, cost)
        return operators.contains_element(x, container)

    return membership


def _unary(fn: Callable[[Any], Any], a: Program) -> Program:
    def unary(frame: Frame) -> Any:
        _charge(frame, 1)
        return fn(a(frame))

    return unary


def _call(node: ast.Call) -> Program:
    name = node.function
    args = tuple(compile_program(a) for a in node.args)
    if name == "_&&_":
        return _and(*args)
    if name == "_||_":
        return _or(*args)
    if name == "_?_:_":
        return _conditional(*args)
    if name == "_==_":
        return _equality(args[0], args[1], negate=False)
    if name == "_!=_":
        return _equality(args[0], args[1], negate=True)
    if name == "_+_":
        return _add(*args)
    if name in _BINARY:
        return _binary(_BINARY[name], *args)
    if name == "@in":
        return _in(*args)
    if name == "!_":
        return _unary(operators.logical_not, args[0])
    if name == "-_":
        return _unary(operators.neg, args[0])
    member = node.target is not None
    fn = lookup(name, member, len(args))
    if fn is None:
        raise TypeError(f"undeclared function {name}")  # the checker rejects this earlier
    impl = fn.impl
    if member:
        assert node.target is not None
        target = compile_program(node.target)
        if not args:

            def member0(frame: Frame) -> Any:
                receiver = target(frame)
                _charge(frame, 1)
                return impl(frame, receiver)

            return member0
        if len(args) == 1:
            (arg,) = args

            def member1(frame: Frame) -> Any:
                receiver = target(frame)
                value = arg(frame)
                _charge(frame, 1)
                return impl(frame, receiver, value)

            return member1

        def member_n(frame: Frame) -> Any:
            receiver = target(frame)
            values = [a(frame) for a in args]
            _charge(frame, 1)
            return impl(frame, receiver, *values)

        return member_n

    def global_call(frame: Frame) -> Any:
        values = [a(frame) for a in args]
        _charge(frame, 1)
        return impl(frame, *values)

    return global_call


# -- comprehensions ---------------------------------------------------------------------------------


def _range(value: Any, kind: str) -> Iterable[Any]:
    t = type(value)
    if t is list or t is tuple:
        return value  # type: ignore[no-any-return]
    if isinstance(value, Mapping):
        return list(value.keys())
    raise CelEvalError(f"expression of type '{type_name(value)}' cannot be range of a comprehension")


def _comprehension(node: ast.Comprehension) -> Program:
    rng = compile_program(node.range)
    body = compile_program(node.body)
    predicate = compile_program(node.predicate) if node.predicate is not None else None
    var = node.var
    kind = node.kind
    if kind in ("optMap", "optFlatMap"):
        return _optional_map(rng, var, body, flat=kind == "optFlatMap")

    def comprehension(frame: Frame) -> Any:
        items = _range(rng(frame), kind)
        variables = frame.vars
        saved = variables.get(var, _MISSING)
        try:
            if kind == "all":
                return _all(frame, items, var, body)
            if kind == "exists":
                return _exists(frame, items, var, body)
            if kind == "exists_one":
                return _exists_one(frame, items, var, body)
            if kind == "filter":
                return _filter(frame, items, var, body)
            return _map_values(frame, items, var, body, predicate)
        finally:
            if saved is _MISSING:
                variables.pop(var, None)
            else:
                variables[var] = saved

    return comprehension


def _all(frame: Frame, items: Iterable[Any], var: str, body: Program) -> bool:
    error: CelEvalError | None = None
    variables = frame.vars
    for item in items:
        frame.cost += 1  # one comprehension step
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        variables[var] = item
        try:
            result = body(frame)
        except CelEvalError as e:
            error = e
            continue
        if result is False:
            return False
        if result is not True:
            error = CelEvalError(f"no such overload: _&&_(bool, {type_name(result)})")
    if error is not None:
        raise error
    return True


def _exists(frame: Frame, items: Iterable[Any], var: str, body: Program) -> bool:
    error: CelEvalError | None = None
    variables = frame.vars
    for item in items:
        frame.cost += 1  # one comprehension step
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        variables[var] = item
        try:
            result = body(frame)
        except CelEvalError as e:
            error = e
            continue
        if result is True:
            return True
        if result is not False:
            error = CelEvalError(f"no such overload: _||_(bool, {type_name(result)})")
    if error is not None:
        raise error
    return False


def _bool_result(result: Any) -> bool:
    if type(result) is not bool:
        raise CelEvalError(f"no such overload: _?_:_({type_name(result)})")
    return bool(result)


def _exists_one(frame: Frame, items: Iterable[Any], var: str, body: Program) -> bool:
    count = 0
    variables = frame.vars
    for item in items:
        frame.cost += 1  # one comprehension step
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        variables[var] = item
        if _bool_result(body(frame)):
            count += 1
    return count == 1


def _filter(frame: Frame, items: Iterable[Any], var: str, body: Program) -> list[Any]:
    out: list[Any] = []
    variables = frame.vars
    for item in items:
        frame.cost += 1  # one comprehension step
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        variables[var] = item
        if _bool_result(body(frame)):
            out.append(item)
    return out


def _map_values(
    frame: Frame, items: Iterable[Any], var: str, transform: Program, predicate: Program | None
) -> list[Any]:
    out: list[Any] = []
    variables = frame.vars
    for item in items:
        frame.cost += 1  # one comprehension step
        if frame.cost > frame.limit:
            raise CostLimitExceeded
        variables[var] = item
        if predicate is not None and not _bool_result(predicate(frame)):
            continue
        out.append(transform(frame))
    return out


def _optional_map(rng: Program, var: str, body: Program, flat: bool) -> Program:
    name = "optFlatMap" if flat else "optMap"

    def optional_map(frame: Frame) -> CelOptional:
        opt = rng(frame)
        if type(opt) is not CelOptional:
            operators.no_overload(name, opt)
        if not opt.has_value:
            return opt
        variables = frame.vars
        saved = variables.get(var, _MISSING)
        variables[var] = opt.value
        try:
            result = body(frame)
        finally:
            if saved is _MISSING:
                variables.pop(var, None)
            else:
                variables[var] = saved
        if not flat:
            return CelOptional(True, result)
        if type(result) is not CelOptional:
            operators.no_overload(name, result)
        return result

    return optional_map
