"""Kubernetes' CEL ``format`` library: ``format.<name>().validate(s)`` returns
``optional.none()`` when ``s`` is valid and otherwise an optional list of error messages.

The validators are Kubernetes' own name rules (``k8s.io/apimachinery/pkg/util/validation``).
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from collections.abc import Callable
from datetime import date
from typing import Any, Final

from fleetplace.shared.placement._cel.ext_kubernetes import URL
from fleetplace.shared.placement._cel.library import Frame, function
from fleetplace.shared.placement._cel.operators import no_overload
from fleetplace.shared.placement._cel.stdlib import parse_timestamp
from fleetplace.shared.placement._cel.values import CelEvalError, CelOptional

_DNS1123_LABEL: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN: Final = rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"
_DNS1035_LABEL: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_PART: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE: Final = f"({_QUALIFIED_NAME_PART})?"

Validator = Callable[[str], list[str]]


def _examples(*examples: str) -> str:
    return ",  or ".join(f"'{e}'" for e in examples)


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    text = message
    if examples:
        text += f" (e.g. {_examples(*examples)}, regex used for validation is '{pattern}')"
    else:
        text += f" (regex used for validation is '{pattern}')"
    return text


def _max_length(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _dns1123_label(s: str) -> list[str]:
    errors = [_max_length(63)] if len(s) > 63 else []
    if not re.fullmatch(_DNS1123_LABEL, s):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character",
                _DNS1123_LABEL,
                "my-name",
                "123-abc",
            )
        )
    return errors


def _dns1123_subdomain(s: str) -> list[str]:
    errors = [_max_length(253)] if len(s) > 253 else []
    if not re.fullmatch(_DNS1123_SUBDOMAIN, s):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN,
                "example.com",
            )
        )
    return errors


def _dns1035_label(s: str) -> list[str]:
    errors = [_max_length(63)] if len(s) > 63 else []
    if not re.fullmatch(_DNS1035_LABEL, s):
        errors.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL,
                "my-name",
                "abc-123",
            )
        )
    return errors


def _prefix(validate: Validator) -> Validator:
    # a generateName prefix may end in '-': Kubernetes masks that dash before validating
    def check(s: str) -> list[str]:
        if len(s) > 1 and s.endswith("-"):
            s = s[:-1] + "a"
        return validate(s)

    return check


def _qualified_name(s: str) -> list[str]:
    parts = s.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {e}" for e in _dns1123_subdomain(prefix))
    else:
        return [
            _regex_error(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                _QUALIFIED_NAME_PART,
                "MyName",
                "my.name",
                "123-abc",
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append(f"name part {_max_length(63)}")
    if name and not re.fullmatch(_QUALIFIED_NAME_PART, name):
        errors.append(
            "name part "
            + _regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                _QUALIFIED_NAME_PART,
                "MyName",
                "my.name",
                "123-abc",
            )
        )
    return errors


def _label_value(s: str) -> list[str]:
    errors = [_max_length(63)] if len(s) > 63 else []
    if not re.fullmatch(_LABEL_VALUE, s):
        errors.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                _LABEL_VALUE,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors


def _uri(s: str) -> list[str]:
    try:
        URL(s)
    except CelEvalError:
        return ["invalid URI"]
    return []


def _uuid(s: str) -> list[str]:
    if re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", s):
        uuid.UUID(s)
        return []
    return ["does not match the UUID format"]


def _byte(s: str) -> list[str]:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date(s: str) -> list[str]:
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
            raise ValueError
        date.fromisoformat(s)
    except ValueError:
        return ["invalid date"]
    return []


def _datetime(s: str) -> list[str]:
    try:
        parse_timestamp(s)
    except CelEvalError:
        return ["invalid datetime"]
    return []


FORMATS: Final[dict[str, Validator]] = {
    "dns1123Label": _dns1123_label,
    "dns1123Subdomain": _dns1123_subdomain,
    "dns1035Label": _dns1035_label,
    "qualifiedName": _qualified_name,
    "dns1123LabelPrefix": _prefix(_dns1123_label),
    "dns1123SubdomainPrefix": _prefix(_dns1123_subdomain),
    "dns1035LabelPrefix": _prefix(_dns1035_label),
    "labelValue": _label_value,
    "uri": _uri,
    "uuid": _uuid,
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}


class NamedFormat:
    __slots__ = ("name",)
    cel_type_name = "kubernetes.NamedFormat"

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedFormat) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def _register_constructor(name: str) -> None:
    def make(frame: Frame) -> NamedFormat:
        return NamedFormat(name)

    function(f"format.{name}", "() -> kubernetes.NamedFormat")(make)


for _name in FORMATS:
    _register_constructor(_name)


@function("format.named", "(string) -> optional")
def named(frame: Frame, name: Any) -> CelOptional:
    if type(name) is not str:
        no_overload("format.named", name)
    return CelOptional(True, NamedFormat(name)) if name in FORMATS else CelOptional(False)


@function("validate", "(kubernetes.NamedFormat, string) -> optional", member=True)
def validate(frame: Frame, fmt: Any, s: Any) -> CelOptional:
    if type(fmt) is not NamedFormat or type(s) is not str:
        no_overload("validate", fmt, s)
    errors = FORMATS[fmt.name](s)
    return CelOptional(True, errors) if errors else CelOptional(False)
