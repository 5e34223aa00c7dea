"""Validate an object as the API server validates a custom resource, for the tests.

`problems(obj)` finds the CRD of the object's group and kind among the pinned upstream CRDs
(tests/upstream/crds.py), the served version its apiVersion names, and checks the object against
that version's structural `openAPIV3Schema` the way kube-apiserver does with strict field
validation (kubectl's default):

- types (`object`, `array`, `string`, `integer`, `number`, `boolean`), `nullable`,
  `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`;
- formats `int32`, `int64` (bounds), `date-time` (RFC 3339), `byte` (base64);
- `required`, `enum`, `pattern` (searched, as Go's regexp.MatchString does), `minLength` /
  `maxLength` (in characters), `minimum` / `maximum`, `minItems` / `maxItems`,
  `minProperties` / `maxProperties`, `x-kubernetes-list-type: set|map` uniqueness;
- a field no schema defines is an error ("unknown field"), as strict field validation reports it
  where the server would otherwise prune it;
- `metadata`: the object-metadata rules, written here from the API server's validation, not
  taken from the product: name a DNS-1123 subdomain, namespace a DNS-1123 label (required for
  namespaced kinds, refused for cluster-scoped ones), label keys qualified names, label values
  valid label values, annotation keys qualified names.

CEL rules (`x-kubernetes-validations`) are not evaluated: the pinned CRDs have one, a
transition rule (`self == oldSelf`), which does not apply when an object is created.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import re2

from tests.upstream.crds import crd_documents, openapi_schema

_INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_METADATA_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


def _subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS_SUBDOMAIN.match(value))


def _qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2 and not _subdomain(parts[0]):
        return False
    name = parts[-1]
    return 0 < len(name) <= 63 and bool(_NAME_PART.match(name))


def _label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME_PART.match(value)))


def metadata_problems(meta: Any, *, namespaced: bool) -> list[str]:
    if not isinstance(meta, dict):
        return ["metadata: must be an object"]
    out = [f"metadata.{k}: unknown field" for k in meta if k not in _METADATA_FIELDS]
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        out.append("metadata.name: Required value")
    elif not _subdomain(name):
        out.append(f"metadata.name: {name!r} is not a DNS-1123 subdomain")
    namespace = meta.get("namespace")
    if namespaced:
        if not isinstance(namespace, str) or not namespace:
            out.append("metadata.namespace: Required value")
        elif len(namespace) > 63 or not _DNS_LABEL.match(namespace):
            out.append(f"metadata.namespace: {namespace!r} is not a DNS-1123 label")
    elif namespace:
        out.append("metadata.namespace: set on a cluster-scoped kind")
    for field in ("labels", "annotations"):
        entries = meta.get(field) or {}
        if not isinstance(entries, dict):
            out.append(f"metadata.{field}: must be a map")
            continue
        for key, value in entries.items():
            checked = key.lower() if field == "annotations" else key
            if not isinstance(key, str) or not _qualified_name(checked):
                out.append(f"metadata.{field}: key {key!r} is not a qualified name")
            if not isinstance(value, str):
                out.append(f"metadata.{field}[{key}]: must be a string")
            elif field == "labels" and not _label_value(value):
                out.append(f"metadata.labels[{key}]: {value!r} is not a valid label value")
    return out


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    kind = schema.get("type")
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return True  # no type: any value (only with x-kubernetes-preserve-unknown-fields)


def _format_problem(value: Any, fmt: str | None) -> str | None:
    if fmt in _INT_BOUNDS and isinstance(value, int):
        low, high = _INT_BOUNDS[fmt]
        return None if low <= value <= high else f"out of the {fmt} range"
    if fmt == "date-time" and isinstance(value, str):
        if not _RFC3339.match(value):
            return "not an RFC 3339 date-time"
        try:
            datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
        except ValueError:
            return "not an RFC 3339 date-time"
    if fmt == "byte" and isinstance(value, str):
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return "not base64"
    return None


def _validate(value: Any, schema: Mapping[str, Any], path: str, out: list[str]) -> None:
    where = path or "<root>"
    if value is None:
        if not schema.get("nullable"):
            out.append(f"{where}: null where the schema wants {schema.get('type', 'a value')}")
        return
    if not _type_ok(value, schema):
        out.append(f"{where}: must be of type {schema.get('type')}, got {type(value).__name__}")
        return
    fmt = _format_problem(value, schema.get("format"))
    if fmt is not None:
        out.append(f"{where}: {fmt}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: Unsupported value {value!r}: supported values {schema['enum']}")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(f"{where}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append(f"{where}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re2.search(schema["pattern"], value):
            out.append(f"{where}: {value!r} does not match {schema['pattern']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{where}: less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{where}: greater than {schema['maximum']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{where}: must have at most {schema['maxItems']} items, has {len(value)}")
        if "minItems" in schema and len(value) < schema["minItems"]:
            out.append(f"{where}: must have at least {schema['minItems']} items")
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set" and len({repr(v) for v in value}) != len(value):
            out.append(f"{where}: duplicate entries in a set")
        if list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            seen = [tuple(v.get(k) for k in keys) for v in value if isinstance(v, dict)]
            if len(set(seen)) != len(seen):
                out.append(f"{where}: duplicate entries for map keys {keys}")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _validate(item, items, f"{path}[{i}]", out)
    if isinstance(value, dict):
        _validate_object(value, schema, path, out)


def _validate_object(value: dict[str, Any], schema: Mapping[str, Any], path: str, out: list[str]) -> None:
    prefix = f"{path}." if path else ""
    for name in schema.get("required", []):
        if name not in value:
            out.append(f"{prefix}{name}: Required value")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        out.append(f"{path}: must have at most {schema['maxProperties']} properties")
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        out.append(f"{path}: must have at least {schema['minProperties']} properties")
    properties: Mapping[str, Any] = schema.get("properties", {})
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        if key in properties:
            _validate(item, properties[key], f"{prefix}{key}", out)
        elif isinstance(additional, Mapping):
            _validate(item, additional, f"{path}[{key}]", out)
        elif additional is True or schema.get("x-kubernetes-preserve-unknown-fields"):
            continue
        else:
            out.append(f"{prefix}{key}: unknown field")


def problems(obj: Mapping[str, Any]) -> list[str]:
    """Every reason the API server would refuse to create `obj` (strict field validation); empty
    when it would be accepted."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return ["apiVersion and kind: Required value"]
    group, _, version = api_version.rpartition("/")
    crd = crd_documents().get((group, kind))
    if crd is None:
        return [f"kind: no upstream CRD defines {kind}.{group}"]
    try:
        schema = openapi_schema(group, kind, version)
    except KeyError as e:
        return [f"apiVersion: {e.args[0]}"]
    out = metadata_problems(obj.get("metadata"), namespaced=crd["spec"]["scope"] == "Namespaced")
    body = {k: v for k, v in obj.items() if k != "metadata"}
    root = {
        **schema,
        "properties": {k: v for k, v in schema.get("properties", {}).items() if k != "metadata"},
    }
    _validate(body, root, "", out)
    return out
