"""Hostile records for every input topic of the scheduler, each labelled with what the worker must do.

A `Hostile` record is either *bad* (the worker must dead-letter it with a reason) or *hostile but
valid* (an object the API server would accept that is built to hurt: huge strings, expensive CEL,
tombstones for unknown keys; the worker must apply it and move on). The label is fixed by
construction, so a test can count: bad records sent == dead letters received.

Hostile-but-valid records never touch the objects the good records depend on: their clusters are
named `junk-*` and sit in the set `junk`, their placements live in namespaces no good placement
uses, and expensive-CEL placements sit in the namespace `cel`, bound to the small set `prod`.

The `fleet()` objects plus `good_placement(i)` are the good traffic: every good placement must be
decided as `GOOD_DECISION`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

G = "cluster.open-cluster-management.io"
SET_LABEL = f"{G}/clusterset"
GOOD_NAMESPACE = "fuzz"
CEL_NAMESPACE = "cel"
GOOD_DECISION = ["gold1", "gold2"]
MIB = 1024 * 1024

INPUT_TOPICS = ("clusters", "taints", "scores", "clustersets", "clustersetbindings", "placements", "clock")


@dataclass(frozen=True, slots=True)
class Hostile:
    topic: str  # without prefix
    key: bytes | None
    value: bytes | None
    bad: bool  # must be dead-lettered
    what: str  # category, for the figures

    @property
    def size(self) -> int:
        return len(self.key or b"") + len(self.value or b"")


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


# ---- good objects ------------------------------------------------------------------------------


def cluster(name: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {SET_LABEL: "junk", **(labels or {})}},
        "spec": {"hubAcceptsClient": True},
    }
    obj.update(extra)
    return obj


def clusterset(name: str, selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = {"clusterSelector": selector} if selector is not None else {}
    return {
        "apiVersion": f"{G}/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": name},
        "spec": spec,
    }


def binding(namespace: str, set_name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"namespace": namespace, "name": set_name},
        "spec": {"clusterSet": set_name},
    }


def placement(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec,
    }


def score(namespace: str, name: str, value: Any = 10) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"namespace": namespace, "name": name},
        "status": {"scores": [{"name": "s", "value": value}]},
    }


GOLD = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]


def fleet() -> list[dict[str, Any]]:
    """The objects the good placements are decided against: gold1, gold2 (gold) and silver1 in `prod`."""
    prod = {SET_LABEL: "prod"}
    return [
        clusterset("prod"),
        clusterset("junk"),
        binding(GOOD_NAMESPACE, "prod"),
        binding(CEL_NAMESPACE, "prod"),
        cluster("gold1", {**prod, "tier": "gold"}),
        cluster("gold2", {**prod, "tier": "gold"}),
        cluster("silver1", {**prod, "tier": "silver"}),
    ]


def good_placement(i: int) -> dict[str, Any]:
    return placement(GOOD_NAMESPACE, f"good-{i:06d}", predicates=GOLD)


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    if obj["kind"] in ("ManagedCluster", "ManagedClusterSet"):
        return str(meta["name"])
    return f"{meta['namespace']}/{meta['name']}"


TOPIC_OF = {
    "ManagedCluster": "clusters",
    "AddOnPlacementScore": "scores",
    "ManagedClusterSet": "clustersets",
    "ManagedClusterSetBinding": "clustersetbindings",
    "Placement": "placements",
}


def record(obj: dict[str, Any]) -> Hostile:
    """A good object as a record on its topic, keyed as the contract says."""
    return Hostile(TOPIC_OF[obj["kind"]], key_of(obj).encode(), dumps(obj), False, "good")


# ---- what each topic's valid value looks like (for mutations) ---------------------------------


def _valid_object(topic: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    n = rng.randrange(10**6)
    if topic == "clusters":
        return f"junk-{n}", cluster(f"junk-{n}")
    if topic == "taints":
        return f"junk-{n}", {
            "taints": [{"key": "k", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}]
        }
    if topic == "scores":
        return f"junk-{n}/s", score(f"junk-{n}", "s")
    if topic == "clustersets":
        return f"junk-set-{n}", clusterset(f"junk-set-{n}")
    if topic == "clustersetbindings":
        return f"junk-ns/junk-set-{n}", binding("junk-ns", f"junk-set-{n}")
    if topic == "placements":
        return f"junk-ns/p{n}", placement("junk-ns", f"p{n}")
    if topic == "clock":
        return "scheduler", {"now": "2026-01-01T00:00:00Z"}
    raise ValueError(topic)


# ---- bad records -------------------------------------------------------------------------------

Maker = Callable[[random.Random], Hostile]


def _topic(rng: random.Random, topics: tuple[str, ...] = INPUT_TOPICS) -> str:
    return rng.choice(topics)


def malformed_json(rng: random.Random) -> Hostile:
    topic = _topic(rng)
    key, obj = _valid_object(topic, rng)
    text = dumps(obj)
    variants = [
        text[: rng.randrange(1, len(text))],  # truncated
        b"{not json",
        b"",
        b"\x00\x01\x02",
        text + b"}",
        b'{"a": NaN}',
        b"{'single': 'quotes'}",
        b'{"a":1,}',
    ]
    return Hostile(topic, key.encode(), rng.choice(variants), True, "malformed-json")


def not_an_object(rng: random.Random) -> Hostile:
    topic = _topic(rng)
    key, _ = _valid_object(topic, rng)
    return Hostile(
        topic,
        key.encode(),
        rng.choice([b"[]", b'"text"', b"42", b"null", b"true", b"[{}]"]),
        True,
        "not-an-object",
    )


def invalid_utf8_value(rng: random.Random) -> Hostile:
    topic = _topic(rng)
    key, obj = _valid_object(topic, rng)
    text = dumps(obj)
    cut = text.index(b'"', 2) + 1  # inside the first key string
    return Hostile(topic, key.encode(), text[:cut] + b"\xff\xfe" + text[cut:], True, "invalid-utf8-value")


def oversized(rng: random.Random) -> Hostile:
    """Valid JSON above the 1 MiB default limit: rejected before it is parsed."""
    topic = _topic(rng)
    key, obj = _valid_object(topic, rng)
    padding = "x" * (MIB + rng.randrange(1, 64 * 1024))
    obj = {**obj, "padding": padding}
    return Hostile(topic, key.encode(), dumps(obj), True, "oversized")


def deep_nesting(rng: random.Random) -> Hostile:
    topic = _topic(rng)
    key, obj = _valid_object(topic, rng)
    depth = rng.choice([65, 100, 1000, 5000, 200_000])
    nested = b'{"a":' * depth + b"1" + b"}" * depth if rng.random() < 0.5 else b"[" * depth + b"]" * depth
    value = dumps({**obj, "x": 0}).replace(b'"x":0', b'"x":' + nested)
    return Hostile(topic, key.encode(), value, True, "deep-nesting")


def missing_key(rng: random.Random) -> Hostile:
    topic = _topic(rng)
    _, obj = _valid_object(topic, rng)
    return Hostile(topic, None, dumps(obj), True, "missing-key")


def empty_key(rng: random.Random) -> Hostile:
    topic = _topic(rng)
    _, obj = _valid_object(topic, rng)
    return Hostile(topic, b"", dumps(obj), True, "empty-key")


def non_utf8_key(rng: random.Random) -> Hostile:
    topic = _topic(rng)
    key, obj = _valid_object(topic, rng)
    raw = key.encode()
    bad = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"])
    return Hostile(topic, raw + bad, dumps(obj), True, "non-utf8-key")


_OBJECT_TOPICS = ("clusters", "scores", "clustersets", "clustersetbindings", "placements")


def key_mismatch(rng: random.Random) -> Hostile:
    topic = _topic(rng, _OBJECT_TOPICS)
    key, obj = _valid_object(topic, rng)
    variants = [key + "-other", "x/" + key, key.upper() + "Z", "other", " " + key]
    if "/" in key:
        variants.append(key.replace("/", "//"))
    wrong = rng.choice(variants)
    return Hostile(topic, wrong.encode(), dumps(obj), True, "key-mismatch")


def wrong_kind(rng: random.Random) -> Hostile:
    topic = _topic(rng, _OBJECT_TOPICS)
    key, obj = _valid_object(topic, rng)
    kind = rng.choice(["Pod", "", None, 7, "managedcluster", *[k for k, t in TOPIC_OF.items() if t != topic]])
    return Hostile(topic, key.encode(), dumps({**obj, "kind": kind}), True, "wrong-kind")


def _set_path(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = orjson.loads(dumps(obj))
    node = out
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    return out


# (topic, path, value): each makes the object invalid for the models or the admission rules
_WRONG_TYPES: list[tuple[str, tuple[str, ...], Any]] = [
    ("clusters", ("metadata", "labels"), ["a", "b"]),
    ("clusters", ("metadata", "labels"), {"tier": 5}),
    ("clusters", ("metadata", "name"), {"n": 1}),
    ("clusters", ("spec", "taints"), "NoSelect"),
    ("clusters", ("spec", "taints"), [{"key": "", "effect": "NoSelect"}]),
    ("clusters", ("spec", "taints"), [{"key": "k", "effect": "Sometimes"}]),
    ("clusters", ("spec",), [1, 2]),
    ("clusters", ("status", "clusterClaims"), [{"name": "", "value": "v"}]),
    ("clusters", ("metadata", "creationTimestamp"), "yesterday"),
    ("scores", ("status", "scores"), [{"name": "s", "value": "high"}]),
    ("scores", ("status", "scores"), [{"name": "s", "value": 101}]),
    ("scores", ("status", "scores"), [{"name": "", "value": 1}]),
    ("scores", ("status", "validUntil"), "soon"),
    ("scores", ("metadata", "namespace"), ""),
    ("clustersets", ("spec", "clusterSelector", "selectorType"), 5),
    ("clustersets", ("spec", "clusterSelector", "selectorType"), "Everything"),
    ("clustersets", ("spec", "clusterSelector", "labelSelector"), "all"),
    ("clustersetbindings", ("spec", "clusterSet"), 1),
    ("clustersetbindings", ("spec", "clusterSet"), ""),
    ("placements", ("spec", "numberOfClusters"), "x"),
    ("placements", ("spec", "numberOfClusters"), 1.5),
    ("placements", ("spec", "predicates"), {"a": 1}),
    ("placements", ("spec", "tolerations"), [{"key": "k", "operator": "Equal", "effect": "Bad"}]),
    ("placements", ("spec", "prioritizerPolicy", "configurations"), [{"weight": 11, "scoreCoordinate": {}}]),
    ("placements", ("spec", "prioritizerPolicy", "configurations"), [{"scoreCoordinate": {"type": "Magic"}}]),
    ("placements", ("spec", "sortBy"), "Random"),
    ("placements", ("spec", "scoreRateLimit"), "fast"),
    (
        "placements",
        ("spec", "spreadPolicy", "spreadConstraints"),
        [{"topologyKey": "", "topologyKeyType": "Label"}],
    ),
    ("placements", ("spec", "clusterSets"), "prod"),
    ("placements", ("metadata", "generation"), "one"),
]


def wrong_types(rng: random.Random) -> Hostile:
    topic, path, value = rng.choice(_WRONG_TYPES)
    key, obj = _valid_object(topic, rng)
    return Hostile(topic, key.encode(), dumps(_set_path(obj, path, value)), True, "wrong-type")


def bad_taints(rng: random.Random) -> Hostile:
    value = rng.choice(
        [
            {"taints": "NoSelect"},
            {"taints": [{"key": 1}]},
            {"taints": [{"key": "k", "timeAdded": "not a time"}]},
            {"taints": [1, 2, 3]},
            {"taints": {"key": "k"}},
        ]
    )
    return Hostile("taints", f"junk-{rng.randrange(10**6)}".encode(), dumps(value), True, "wrong-type")


def bad_clock(rng: random.Random) -> Hostile:
    value = rng.choice(
        [
            {"now": "garbage"},
            {"now": 5},
            {"now": None},
            {},
            {"then": "2026-01-01T00:00:00Z"},
            {"now": "2026-01-01T00:00:00"},  # no offset
            {"now": "2026-13-45T99:99:99Z"},
        ]
    )
    return Hostile("clock", b"scheduler", dumps(value), True, "bad-clock")


def bad_tombstone(rng: random.Random) -> Hostile:
    """A delete whose key cannot name a namespaced object."""
    topic = rng.choice(["scores", "clustersetbindings", "placements"])
    key = rng.choice(["no-slash", "/name", "ns/", "a/b/c"])
    return Hostile(topic, key.encode(), None, True, "bad-tombstone-key")


def unicode_names(rng: random.Random) -> Hostile:
    """A name the API server refuses: not a lowercase RFC 1123 subdomain (docs/names.md)."""
    name = rng.choice(["junk-ünïcödé", "junk-\u202eevil", "junk-日本", "junk-\U0001f600"]) + str(
        rng.randrange(1000)
    )
    return Hostile("clusters", name.encode(), dumps(cluster(name)), True, "unicode-names")


BAD_MAKERS: dict[Maker, int] = {
    malformed_json: 20,
    not_an_object: 8,
    invalid_utf8_value: 8,
    oversized: 1,
    deep_nesting: 4,
    missing_key: 8,
    empty_key: 4,
    non_utf8_key: 8,
    key_mismatch: 12,
    wrong_kind: 8,
    wrong_types: 30,
    bad_taints: 6,
    bad_clock: 6,
    bad_tombstone: 4,
    unicode_names: 4,
}

# ---- hostile but valid ---------------------------------------------------------------------------


def huge_strings(rng: random.Random) -> Hostile:
    """Just under the size limit: a huge annotation and the longest label value the API server
    takes, 63 characters (the models accept them)."""
    name = f"junk-{rng.randrange(10**6)}"
    size = rng.choice([10_000, 200_000, MIB - 4096])
    obj = cluster(name, {"long": "v" * 63})
    obj["metadata"]["annotations"] = {"blob": "\u00e9" * (size // 2)}
    return Hostile("clusters", name.encode(), dumps(obj), False, "huge-strings")


def unknown_tombstone(rng: random.Random) -> Hostile:
    topic = rng.choice(["clusters", "taints", "scores", "clustersets", "clustersetbindings", "placements"])
    key = "junk-gone" if topic in ("clusters", "taints", "clustersets") else "junk-ns/gone"
    return Hostile(topic, key.encode(), None, False, "unknown-tombstone")


def extra_fields(rng: random.Random) -> Hostile:
    key, obj = _valid_object("clusters", rng)
    obj = {**obj, "unexpected": {"nested": [1, 2, {"x": None}]}, "spec": {**obj["spec"], "futureField": True}}
    return Hostile("clusters", key.encode(), dumps(obj), False, "extra-fields")


def junk_placement(rng: random.Random) -> Hostile:
    """Placements nobody binds a set for: decided as empty, cheaply."""
    name = f"p{rng.randrange(10**6)}"
    spec = rng.choice(
        [
            {"numberOfClusters": 0},
            {"numberOfClusters": 2_147_483_647},
            {
                "predicates": [
                    {
                        "requiredClusterSelector": {
                            "labelSelector": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}
                        }
                    }
                ]
                * 50
            },
            {"clusterSets": ["missing"] * 100},
        ]
    )
    obj = placement("junk-ns", name, **spec)
    return Hostile("placements", f"junk-ns/{name}".encode(), dumps(obj), False, "junk-placement")


_BIG_LIST = "[" + ",".join(str(i) for i in range(3000)) + "]"
EXPENSIVE_CEL = [
    f"{_BIG_LIST}.all(x, {_BIG_LIST}.all(y, x != y || true))",  # ~9M steps: stops at the cost limit
    f"{_BIG_LIST}.map(x, {_BIG_LIST}.filter(y, y > x)).size() > 0",
    "managedCluster.metadata.name.matches('^(a+)+$')",  # RE2: linear, not catastrophic
    "parseJSON('{\"a\":' + 'x'.repeat(1) + '}') == null",  # a bad call: compile or runtime error
]


def expensive_cel(rng: random.Random) -> Hostile:
    name = f"cel-{rng.randrange(10**6)}"
    expression = rng.choice(EXPENSIVE_CEL)
    obj = placement(
        CEL_NAMESPACE,
        name,
        predicates=[{"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}],
    )
    return Hostile("placements", f"{CEL_NAMESPACE}/{name}".encode(), dumps(obj), False, "expensive-cel")


def good_clock(minute: int) -> Hostile:
    return Hostile(
        "clock", b"scheduler", dumps({"now": f"2026-01-01T00:{minute % 60:02d}:00Z"}), False, "good"
    )


VALID_MAKERS: dict[Maker, int] = {
    huge_strings: 2,
    unknown_tombstone: 6,
    extra_fields: 6,
    junk_placement: 4,
}

ALL_MAKERS: dict[Maker, int] = {**BAD_MAKERS, **VALID_MAKERS}


def stream(
    rng: random.Random,
    total: int,
    *,
    good_every: int = 10,
    expensive_cel_count: int = 1,
    makers: dict[Maker, int] | None = None,
    max_big: int | None = None,
) -> Iterator[Hostile]:
    """`total` records: the good fleet first, then hostile records with a good placement every
    `good_every` records and `expensive_cel_count` expensive-CEL placements spread out.

    `max_big` caps the records above 100 KB (oversized and huge strings), which cost broker memory."""
    table = makers or ALL_MAKERS
    choices, weights = list(table), list(table.values())
    yield good_clock(0)
    for obj in fleet():
        yield record(obj)
    sent = 1 + len(fleet())
    good = 0
    cel_at = {total * (k + 1) // (expensive_cel_count + 1) for k in range(expensive_cel_count)}
    big = 0
    while sent < total:
        if sent % good_every == 0:
            item = record(good_placement(good))
            good += 1
        elif sent in cel_at:
            item = expensive_cel(rng)
        else:
            while True:
                item = rng.choices(choices, weights)[0](rng)
                if item.size <= 100_000:
                    break
                if max_big is None or big < max_big:
                    big += 1
                    break
        sent += 1
        yield item
