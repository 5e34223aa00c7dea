"""Decode a config document (YAML or JSON) into plain values the way Go's YAML decoder sees it.

YuniKorn decodes strictly. Besides unknown keys (the models catch those), that means
a duplicate key is an error, and a plain scalar keeps its source text for string fields
(`YamlScalar`, see `fleetplace.shared.api.queues`). Only the first YAML document is read, as Go's decoder
does. JSON is decoded with the same rules; it is tried first because a JSON file indented with
tabs is not YAML.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from fleetplace.shared.api.queues import YamlScalar
from fleetplace.shared.queueing._errors import ConfigError, ConfigProblem

_TAG = "tag:yaml.org,2002:"
_MAX_DEPTH = 200


class _DuplicateKey(Exception):
    def __init__(self, path: str, key: str, where: str = "") -> None:
        super().__init__(path, key, where)
        self.path, self.key, self.where = path, key, where


def decode_document(source: str | bytes) -> Any:
    """The document's value, or `None` for an empty document (no configuration at all)."""
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ConfigError([ConfigProblem("", f"not UTF-8 text: {e}")]) from None
    stripped = source.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return _decode_json(source)
        except json.JSONDecodeError:
            pass  # YAML flow style (`{partitions: [...]}`) is not JSON; let YAML read it
        except _DuplicateKey as e:
            raise ConfigError([ConfigProblem(e.path, f"duplicate key {e.key!r}")]) from None
    return _decode_yaml(source)


def _decode_json(text: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise _DuplicateKey("", key)
            out[key] = value
        return out

    return json.loads(
        text,
        object_pairs_hook=pairs,
        parse_int=lambda s: YamlScalar(s, int(s)),
        parse_float=lambda s: YamlScalar(s, float(s)),
        parse_constant=lambda s: YamlScalar(s, float(s)),
    )


def _decode_yaml(text: str) -> Any:
    try:
        node = next(iter(yaml.compose_all(text, Loader=yaml.SafeLoader)), None)
    except yaml.MarkedYAMLError as e:
        where = (
            f" at line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1}"
            if e.problem_mark
            else ""
        )
        raise ConfigError([ConfigProblem("", f"not valid YAML{where}: {e.problem}")]) from None
    except yaml.YAMLError as e:
        raise ConfigError([ConfigProblem("", f"not valid YAML: {e}")]) from None
    if node is None:
        return None
    constructor = yaml.SafeLoader("")
    try:
        return _value(node, "", constructor, 0)
    except _DuplicateKey as e:
        raise ConfigError([ConfigProblem(e.path, f"duplicate key {e.key!r}{e.where}")]) from None
    except RecursionError:
        raise ConfigError([ConfigProblem("", "document nests too deeply")]) from None


def _value(node: yaml.Node, path: str, constructor: yaml.SafeLoader, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise RecursionError
    if isinstance(node, yaml.MappingNode):
        return _mapping(node, path, constructor, depth)
    if isinstance(node, yaml.SequenceNode):
        return [_value(item, f"{path}[{i}]", constructor, depth + 1) for i, item in enumerate(node.value)]
    assert isinstance(node, yaml.ScalarNode)
    tag = node.tag
    if tag == _TAG + "null":
        return None
    if tag in (_TAG + "bool", _TAG + "int", _TAG + "float"):
        resolved = constructor.construct_object(node, deep=True)
        return YamlScalar(node.value, resolved)
    # strings, timestamps and anything else: a string field takes the text as written
    return node.value


def _mapping(node: yaml.MappingNode, path: str, constructor: yaml.SafeLoader, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key_node, value_node in _merged(node):
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
        where = f"{path}.{key}" if path else key
        if key in out:
            line = key_node.start_mark.line + 1
            raise _DuplicateKey(where, key, f" (line {line})")
        out[key] = _value(value_node, where, constructor, depth + 1)
    return out


def _merged(node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
    """The mapping's pairs with YAML merge keys (`<<: *anchor`) expanded, own keys first."""
    own: list[tuple[yaml.Node, yaml.Node]] = []
    merged: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        if key_node.tag == _TAG + "merge":
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if isinstance(source, yaml.MappingNode):
                    merged.extend(_merged(source))
        else:
            own.append((key_node, value_node))
    own_keys = {k.value for k, _ in own if isinstance(k, yaml.ScalarNode)}
    seen: set[object] = set()
    inherited = []
    for k, v in merged:
        if k.value in own_keys or k.value in seen:
            continue  # an explicit key overrides a merged one, and earlier merges win
        seen.add(k.value)
        inherited.append((k, v))
    return own + inherited
