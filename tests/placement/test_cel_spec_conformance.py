"""cel-spec's public conformance cases (the ``simple`` test data) run against our interpreter.

The cases live in ``tests/data/cel-spec/*.json``, one file per cel-spec test file, transcribed
from its textproto into this form::

    {"id": "<file>/<section>/<test>", "expr": "...",
     "check": false,                          # optional: evaluate without the type checker
     "decls": {"x": "int"},                   # optional: variables the checker declares
     "bindings": {"x": {"int": "123"}},       # optional: their values
     "expected": {"value": <typed value>} | {"error": "eval" | "compile", "message": "..."},
     "skip": "why OCM's environment cannot express it"}   # optional

A typed value is a one-key object naming its CEL type: ``{"int": "1"}``, ``{"uint": "1"}``,
``{"double": 1.5 | "NaN" | "Infinity" | "-Infinity"}``, ``{"string": ...}``, ``{"bytes": base64}``,
``{"bool": ...}``, ``{"null": null}``, ``{"list": [...]}``, ``{"map": [[key, value], ...]}``,
``{"type": "int"}``, ``{"timestamp": [seconds, nanos]}``, ``{"duration": [seconds, nanos]}``.

Cases that need what OCM's environment does not enable (protobuf messages and enums, the
math/sets/bindings extensions, unknowns, containers) are kept in the data, marked ``skip``
with the reason, and reported as skipped. Cases with ``"check": false`` run without the
checker: in OCM such values reach functions through ``managedCluster``'s ``dyn`` fields, so
the run-time behaviour they pin down is reachable.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fleetplace.shared.placement._cel.checker import VARIABLES, CheckErrors, Type, check
from fleetplace.shared.placement._cel.interpreter import compile_program
from fleetplace.shared.placement._cel.library import Frame
from fleetplace.shared.placement._cel.parser import ParseError, parse
from fleetplace.shared.placement._cel.values import (
    CelEvalError,
    CelType,
    CostLimitExceeded,
    Duration,
    Timestamp,
    Uint,
)
from fleetplace.shared.placement.cel import EXPRESSION_COST_LIMIT

DATA = Path(__file__).resolve().parent.parent / "data" / "cel-spec"


def _cases() -> list[Any]:
    params = []
    for path in sorted(DATA.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            marks = [pytest.mark.skip(reason=case["skip"])] if "skip" in case else []
            params.append(pytest.param(case, id=case["id"], marks=marks))
    return params


def _type(raw: Any) -> Type:
    return raw if isinstance(raw, str) else tuple(_type(p) for p in raw)


def _value(typed: Mapping[str, Any]) -> Any:
    ((kind, raw),) = typed.items()
    if kind == "int":
        return int(raw)
    if kind == "uint":
        return Uint(int(raw))
    if kind == "double":
        return float(raw)
    if kind in ("string", "bool"):
        return raw
    if kind == "bytes":
        return base64.b64decode(raw)
    if kind == "null":
        return None
    if kind == "list":
        return [_value(v) for v in raw]
    if kind == "map":
        return {_value(k): _value(v) for k, v in raw}
    if kind == "type":
        return CelType(raw)
    if kind == "timestamp":
        return Timestamp(raw[0] * 10**9 + raw[1])
    if kind == "duration":
        return Duration(raw[0] * 10**9 + raw[1])
    raise ValueError(f"unknown typed value {kind!r}")


def _same(actual: Any, expected: Any) -> bool:
    """Equal and of the same CEL type (``1``, ``1u`` and ``1.0`` are three different results)."""
    if type(expected) is float:
        return type(actual) is float and (actual == expected or (math.isnan(actual) and math.isnan(expected)))
    if type(expected) is list:
        return (
            type(actual) in (list, tuple)
            and len(actual) == len(expected)
            and all(_same(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if type(expected) is dict:
        if not isinstance(actual, Mapping) or len(actual) != len(expected):
            return False
        for key, value in expected.items():
            found = [k for k in actual if _same(k, key)]
            if len(found) != 1 or not _same(actual[found[0]], value):
                return False
        return True
    return type(actual) is type(expected) and actual == expected


def _evaluate(case: Mapping[str, Any]) -> Any:
    """Parse, check (unless the case says not to), compile and run; compile problems raise
    :class:`ParseError` or :class:`CheckErrors`, evaluation problems :class:`CelEvalError`."""
    node = parse(case["expr"])
    if case.get("check", True):
        declared = {name: _type(t) for name, t in case.get("decls", {}).items()}
        node, _ = check(node, {**VARIABLES, **declared})
    program = compile_program(node)
    bindings = {name: _value(v) for name, v in case.get("bindings", {}).items()}
    return program(Frame(bindings, EXPRESSION_COST_LIMIT, lambda _name, _resource: None))


@pytest.mark.parametrize("case", _cases())
def test_cel_spec_case(case: Mapping[str, Any]) -> None:
    expected = case["expected"]
    if "value" in expected:
        result = _evaluate(case)
        assert _same(result, _value(expected["value"])), f"{case['expr']} gave {result!r}"
    elif expected["error"] == "compile":
        with pytest.raises((ParseError, CheckErrors)):
            _evaluate(case)
    else:
        with pytest.raises((CelEvalError, CostLimitExceeded)):
            _evaluate(case)
