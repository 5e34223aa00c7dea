"""Kubernetes label selectors, as placements, cluster sets and decision groups use them.

A selector is compiled once into requirements; compiling reports the same errors, in the same
order, as `metav1.LabelSelectorAsSelector`, because the error text becomes the
`PlacementMisconfigured` message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from fleetplace.shared.api.ocm import LabelSelector, LabelSelectorRequirement

__all__ = ["CompiledSelector", "SelectorError", "compile_label_selector", "compile_requirements"]


class SelectorError(ValueError):
    """A selector that Kubernetes would refuse to convert; str() is Kubernetes' message."""


_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with"
    " an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '"
    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _key_errors(key: str) -> list[str]:
    """k8s.io/apimachinery validation.IsQualifiedName."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
                errs.append(
                    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric"
                    " characters, '-' or '.', and must start and end with an alphanumeric character"
                    " (e.g. 'example.com', regex used for validation is"
                    " '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                )
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and"
            " end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used"
            " for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain"
            " prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _NAME.fullmatch(name):  # an empty name fails the pattern too
        errs.append(_NAME_MSG)
    return errs


def _value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _VALUE.fullmatch(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or"
            " '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or"
            " 'my_value',  or '12345', regex used for validation is"
            f" '({_NAME_FMT})?')"
        )
    return errs


def _render(value: object) -> str:
    return orjson.dumps(value).decode()


def _join(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # "in" | "notin" | "exists" | "!"
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "in":
            v = labels.get(self.key)
            return v is not None and v in self.values
        if self.operator == "notin":
            v = labels.get(self.key)
            return v is None or v not in self.values
        if self.operator == "exists":
            return self.key in labels
        return self.key not in labels


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
OPERATORS = tuple(_OPERATORS)  # a matchExpressions operator (any other is a SelectorError)


def _requirement(key: str, op: str, values: Sequence[str] | None) -> Requirement:
    """labels.NewRequirement: the validation order and texts of Kubernetes."""
    errs: list[str] = []
    key_errors = _key_errors(key)
    if key_errors:  # one field error per key / value, its problems joined by "; "
        errs.append(f"key: Invalid value: {_render(key)}: {'; '.join(key_errors)}")
    vals = list(values) if values is not None else None
    if op in ("in", "notin"):
        if not vals:
            errs.append("values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty")
    elif op in ("exists", "!"):
        if vals:
            errs.append(
                f"values: Invalid value: {_render(vals)}: values set must be empty for exists and does not exist"
            )
    elif op == "=" and (vals is None or len(vals) != 1):
        errs.append(
            f"values: Invalid value: {_render(vals)}: exact-match compatibility requires one single value"
        )
    for i, v in enumerate(vals or []):
        value_errors = _value_errors(v)
        if value_errors:
            errs.append(f"values[{i}][{key}]: Invalid value: {_render(v)}: {'; '.join(value_errors)}")
    if errs:
        raise SelectorError(_join(errs))
    return Requirement(key, "in" if op == "=" else op, frozenset(vals or ()))


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """A converted selector; `nothing` is the selector of a set whose labelSelector is null."""

    requirements: tuple[Requirement, ...]
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    @property
    def is_everything(self) -> bool:
        return not self.nothing and not self.requirements


EVERYTHING = CompiledSelector(())
NOTHING = CompiledSelector((), nothing=True)


def compile_requirements(expressions: Sequence[LabelSelectorRequirement]) -> list[Requirement]:
    reqs: list[Requirement] = []
    for expr in expressions:
        op = _OPERATORS.get(expr.operator)
        if op is None:
            raise SelectorError(f"{_render(expr.operator)} is not a valid label selector operator")
        reqs.append(_requirement(expr.key, op, expr.values))
    return reqs


def compile_label_selector(
    selector: LabelSelector | None, *, null_means_nothing: bool = False
) -> CompiledSelector:
    """`LabelSelectorAsSelector`: matchLabels first (sorted, a deterministic choice), then expressions."""
    if selector is None:
        return NOTHING if null_means_nothing else EVERYTHING
    reqs = [_requirement(k, "=", [v]) for k, v in sorted(selector.match_labels.items())]
    reqs.extend(compile_requirements(selector.match_expressions))
    return CompiledSelector(tuple(reqs))
