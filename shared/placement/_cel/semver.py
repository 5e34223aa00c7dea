"""Strict semantic versions (semver.org 2.0.0), as Kubernetes' CEL ``semver()`` parses them.

OCM enables only the base library: there is no "normalize" overload, so
``"1.28"`` and ``"v1.28.0"`` are rejected rather than repaired.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

_SEMVER: Final = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?",
    re.ASCII,
)
_UINT64_MAX: Final = 2**64 - 1


class SemverError(ValueError):
    """The text is not a strict semantic version."""


class Semver:
    __slots__ = ("build", "major", "minor", "patch", "pre")
    cel_type_name = "kubernetes.Semver"

    def __init__(
        self, major: int, minor: int, patch: int, pre: tuple[str, ...], build: tuple[str, ...]
    ) -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def compare(self, other: Semver) -> int:
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        return _compare_pre(self.pre, other.pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))


def _compare_pre(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    # a version without pre-release identifiers ranks above any pre-release
    if not a or not b:
        return (not a) - (not b)
    for x, y in zip(a, b, strict=False):
        if x == y:
            continue
        xn, yn = x.isdigit(), y.isdigit()
        if xn and yn:
            return -1 if int(x) < int(y) else 1
        if xn != yn:
            return -1 if xn else 1
        return -1 if x < y else 1
    return (len(a) > len(b)) - (len(a) < len(b))


@lru_cache(maxsize=4096)
def parse_semver(text: str) -> Semver:
    m = _SEMVER.fullmatch(text)
    if m is None:
        raise SemverError(f"invalid semver: {text}")
    major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if max(major, minor, patch) > _UINT64_MAX:
        raise SemverError(f"invalid semver: {text}")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    build = tuple(m.group(5).split(".")) if m.group(5) else ()
    return Semver(major, minor, patch, pre, build)
