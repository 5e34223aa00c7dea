"""PyYAML's safe loader with a duplicate-key check, on libyaml's parser where available.

Kept out of the compiled modules (shared/native.py): a class compiled with mypyc cannot derive
from libyaml's C loader.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import yaml

# libyaml's parser where PyYAML was built with it (about eight times faster on large files), else
# the pure Python one; both keep line and column in their errors.
BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


MERGE = "tag:yaml.org,2002:merge"


class DuplicateKeys(yaml.constructor.SafeConstructor):
    """Reports a key given twice in one mapping (YAML forbids it; PyYAML keeps the last silently).
    The check is in the constructor, which is Python with either parser; `<<` merges are not
    duplicates."""

    duplicate: Callable[[str], None] | None = None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.tag != MERGE]
        if len(keys) != len(set(keys)) and self.duplicate is not None:
            seen: set[str] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE:
                    continue
                if key_node.value in seen:
                    mark = key_node.start_mark
                    self.duplicate(
                        f"line {mark.line + 1}, column {mark.column + 1}: duplicate key {key_node.value!r}"
                    )
                seen.add(key_node.value)
        mapping: dict[Hashable, Any] = super().construct_mapping(node, deep)
        return mapping


class Loader(DuplicateKeys, BaseLoader):  # type: ignore[valid-type,misc]
    """The safe loader with the duplicate-key check, on libyaml's parser where available."""
