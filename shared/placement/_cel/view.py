"""The ``managedCluster`` CEL variable: a raw ManagedCluster passed through the typed v1 API.

OCM decodes the object into its Go type and converts that back to a generic map,
so what an expression sees is the *typed* object: unknown fields are gone, ``omitempty`` fields
are absent when empty, a few keys are always present (``metadata.creationTimestamp``,
``spec.hubAcceptsClient``, ``status.conditions``, ``status.version``, a taint's ``timeAdded``),
quantities are canonical and times are RFC 3339 UTC with second precision.

A value the Go decoder would refuse (a number where a string belongs, an unparsable time or
quantity, ...) raises :class:`ViewError`: OCM cannot convert such a cluster, and the cluster then
matches no CEL expression.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from fleetplace.shared.placement.quantity import InvalidQuantity, canonicalize

_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})",
    re.ASCII,
)


_ZERO_EPOCH: Final = int(datetime(1, 1, 1, tzinfo=UTC).timestamp())


class ViewError(ValueError):
    """The raw object cannot be decoded into the v1 ManagedCluster type."""


Field = Callable[[Any, str], Any]


def _string(v: Any, path: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise ViewError(f"{path}: expected string")
    return v


def _bool(v: Any, path: str) -> bool:
    if v is None:
        return False
    if not isinstance(v, bool):
        raise ViewError(f"{path}: expected bool")
    return v


def _integer(bounds: tuple[int, int]) -> Field:
    def convert(v: Any, path: str) -> int:
        if v is None:
            return 0
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ViewError(f"{path}: expected integer")
        if isinstance(v, float):
            # Go refuses a non-integral literal for an integer field
            if not v.is_integer():
                raise ViewError(f"{path}: expected integer")
            v = int(v)
        if not bounds[0] <= v <= bounds[1]:
            raise ViewError(f"{path}: integer out of range")
        return int(v)

    return convert


def _time(v: Any, path: str) -> str | None:
    """metav1.Time: RFC 3339 in, second-precision UTC out; the zero time serialises as null."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise ViewError(f"{path}: expected RFC 3339 time")
    m = _RFC3339.fullmatch(v)
    if m is None:
        raise ViewError(f"{path}: expected RFC 3339 time")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    zone = m.group(8)
    try:
        if zone == "Z":
            offset_seconds = 0
        else:
            sign = -1 if zone[0] == "-" else 1
            oh, om = int(zone[1:3]), int(zone[4:6])
            if oh > 23 or om > 59:
                raise ViewError(f"{path}: time zone offset out of range")
            offset_seconds = sign * (oh * 3600 + om * 60)
        local = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as e:
        raise ViewError(f"{path}: {e}") from e
    epoch = int(local.timestamp()) - offset_seconds
    if epoch == _ZERO_EPOCH and not (m.group(7) or "").strip(".0"):
        return None  # the zero time
    try:
        utc = datetime.fromtimestamp(epoch, tz=UTC)
    except (OverflowError, ValueError, OSError) as e:
        raise ViewError(f"{path}: time out of range") from e
    # not strftime: glibc does not zero-pad years before 1000
    return f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"


def _quantity(v: Any, path: str) -> str:
    try:
        return canonicalize(v)
    except InvalidQuantity as e:
        raise ViewError(f"{path}: {e}") from e


def _bytes(v: Any, path: str) -> str:
    """[]byte is base64 on the wire; re-encoding gives the canonical padded form."""
    if v is None:
        return ""
    if not isinstance(v, str):
        raise ViewError(f"{path}: expected base64 string")
    try:
        return base64.b64encode(base64.b64decode(v, validate=True)).decode("ascii")
    except (binascii.Error, ValueError) as e:
        raise ViewError(f"{path}: invalid base64") from e


def _raw_object(v: Any, path: str) -> Any:
    return v


def _map_of(value: Field) -> Field:
    def convert(v: Any, path: str) -> dict[str, Any] | None:
        if v is None:
            return None
        if not isinstance(v, Mapping):
            raise ViewError(f"{path}: expected object")
        out: dict[str, Any] = {}
        for k, item in v.items():
            if not isinstance(k, str):
                raise ViewError(f"{path}: expected string keys")
            out[k] = value(item, f"{path}.{k}")
        return out

    return convert


def _list_of(item: Field) -> Field:
    def convert(v: Any, path: str) -> list[Any] | None:
        if v is None:
            return None
        if not isinstance(v, list | tuple):
            raise ViewError(f"{path}: expected array")
        return [item(x, f"{path}[{i}]") for i, x in enumerate(v)]

    return convert


def _struct(fields: tuple[tuple[str, Field, bool], ...]) -> Field:
    """A Go struct: (json name, converter, omitempty). Unknown keys are dropped."""

    def convert(v: Any, path: str) -> dict[str, Any]:
        if v is None:
            v = {}
        if not isinstance(v, Mapping):
            raise ViewError(f"{path}: expected object")
        out: dict[str, Any] = {}
        for name, field, omitempty in fields:
            value = field(v.get(name), f"{path}.{name}")
            if omitempty and _empty(value):
                continue
            out[name] = value
        return out

    return convert


def _empty(value: Any) -> bool:
    # apimachinery's converter: zero scalars, nil or empty maps/slices and nil pointers are
    # empty; structs never are (so status and status.version always appear)
    return value is None or value is False or value == 0 or value == "" or value == [] or value == {}


_STR_MAP = _map_of(_string)
_QUANTITY_MAP = _map_of(_quantity)

_CONDITION = _struct(
    (
        ("type", _string, False),
        ("status", _string, False),
        ("observedGeneration", _integer(_INT64), True),
        ("lastTransitionTime", _time, False),
        ("reason", _string, False),
        ("message", _string, False),
    )
)
_OWNER_REFERENCE = _struct(
    (
        ("apiVersion", _string, False),
        ("kind", _string, False),
        ("name", _string, False),
        ("uid", _string, False),
        ("controller", lambda v, p: None if v is None else _bool(v, p), True),
        ("blockOwnerDeletion", lambda v, p: None if v is None else _bool(v, p), True),
    )
)
_MANAGED_FIELDS_ENTRY = _struct(
    (
        ("manager", _string, True),
        ("operation", _string, True),
        ("apiVersion", _string, True),
        ("time", _time, True),
        ("fieldsType", _string, True),
        ("fieldsV1", _raw_object, True),
        ("subresource", _string, True),
    )
)
_OBJECT_META = _struct(
    (
        ("name", _string, True),
        ("generateName", _string, True),
        ("namespace", _string, True),
        ("selfLink", _string, True),
        ("uid", _string, True),
        ("resourceVersion", _string, True),
        ("generation", _integer(_INT64), True),
        ("creationTimestamp", _time, False),
        ("deletionTimestamp", _time, True),
        ("deletionGracePeriodSeconds", lambda v, p: None if v is None else _integer(_INT64)(v, p), True),
        ("labels", _STR_MAP, True),
        ("annotations", _STR_MAP, True),
        ("ownerReferences", _list_of(_OWNER_REFERENCE), True),
        ("finalizers", _list_of(_string), True),
        ("managedFields", _list_of(_MANAGED_FIELDS_ENTRY), True),
    )
)
_TAINT = _struct(
    (
        ("key", _string, False),
        ("value", _string, True),
        ("effect", _string, False),
        ("timeAdded", _time, False),
    )
)
_CLIENT_CONFIG = _struct((("url", _string, False), ("caBundle", _bytes, True)))
_SPEC = _struct(
    (
        ("managedClusterClientConfigs", _list_of(_CLIENT_CONFIG), True),
        ("hubAcceptsClient", _bool, False),
        ("leaseDurationSeconds", _integer(_INT32), True),
        ("taints", _list_of(_TAINT), True),
    )
)
_CLAIM = _struct((("name", _string, True), ("value", _string, True)))
_MANAGED_NAMESPACE = _struct(
    (
        ("name", _string, False),
        ("clusterSet", _string, False),
        ("conditions", _list_of(_CONDITION), True),
    )
)
_STATUS = _struct(
    (
        ("conditions", _list_of(_CONDITION), False),
        ("capacity", _QUANTITY_MAP, True),
        ("allocatable", _QUANTITY_MAP, True),
        ("version", _struct((("kubernetes", _string, True),)), False),
        ("clusterClaims", _list_of(_CLAIM), True),
        ("managedNamespaces", _list_of(_MANAGED_NAMESPACE), True),
    )
)
_MANAGED_CLUSTER = _struct(
    (("metadata", _OBJECT_META, False), ("spec", _SPEC, False), ("status", _STATUS, False))
)


def managed_cluster_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Round-trip ``raw`` through the v1 ManagedCluster type; raises :class:`ViewError`."""
    view: dict[str, Any] = _MANAGED_CLUSTER(raw, "managedCluster")
    # status.conditions is not omitempty: an empty list serialises as null
    if view["status"]["conditions"] == []:
        view["status"]["conditions"] = None
    return view
