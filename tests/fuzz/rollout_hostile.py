"""Hostile records for the rollout worker's inputs (`rollouts`, `rollout-status`), each labelled.

Like `tests/fuzz/hostile.py`: a record is *bad* (it must be dead-lettered with a reason) or valid;
the label is fixed by construction, so a test can count bad records sent == dead letters received.

The good traffic is one placement `fuzz/web` (`GROUPS`), the rollout `fuzz/main` (revision
`REVISION`) with its deployers' reports for the clusters `c00`…`c19`, and new rollouts `fuzz/gNNNNN`
that must each be answered. Valid but hostile records never touch a key the good ones use unless
they are built to change nothing there:

- `other-revision`: reports of another revision for the placed clusters `c20`…`c29`, which never
  get a report of `REVISION` (a report replaces the cluster's last one: the topic is compacted);
- `no-rollout`: reports for the deleted rollout `fuzz/gone` and for rollouts never published;
- `flood`: copies of the report just sent, one after another on its partition;
- `not-placed`: reports of `REVISION` for the clusters `stray0`…`stray4`, in no group: they change
  nothing (docs/rollouts.md);
- `far-time`: reports of `REVISION` for `c30`…`c34` with times in year 1 or 2999.

Every valid report carries a transition time, distinct per key, so no two in a row are equal by
accident and the count of each reason is known exactly (`expected_ignored`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from fleetplace.shared.bus.topics import partition_for_key, rollout_partition

NAMESPACE = "fuzz"
PLACEMENT = f"{NAMESPACE}/web"
MAIN = f"{NAMESPACE}/main"
GONE = f"{NAMESPACE}/gone"
REVISION = "v2"
NOW = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
G = "cluster.open-cluster-management.io"
MIB = 1024 * 1024

REPORTED = [f"c{i:02d}" for i in range(20)]  # good reports
OTHER_REVISION = [f"c{i:02d}" for i in range(20, 30)]
FAR_TIME = [f"c{i:02d}" for i in range(30, 35)]
STRAY = [f"stray{i}" for i in range(5)]
GROUPS: list[tuple[str, list[str]]] = [
    ("canary", ["c00", "c10", "c20", "c30"]),
    ("g1", [f"c{i:02d}" for i in range(1, 35, 3) if i not in (10, 20, 30)]),
    ("g2", [f"c{i:02d}" for i in range(2, 35, 3) if i not in (20,)]),
    ("g3", [f"c{i:02d}" for i in range(3, 35, 3) if i not in (30,)]),
]
MAIN_STRATEGY: dict[str, Any] = {
    "type": "ProgressivePerGroup",
    "progressivePerGroup": {
        "mandatoryDecisionGroups": [{"groupName": "canary"}],
        "minSuccessTime": "5m",
        "progressDeadline": "10m",
        "maxFailures": "50%",
    },
}


@dataclass(frozen=True, slots=True)
class RolloutHostile:
    topic: str  # without prefix
    key: bytes | None
    value: bytes | None
    bad: bool  # must be dead-lettered
    what: str  # category, for the figures
    # the key whose partition the record goes to (None: the record's own key); `off-partition`
    # records name a key on another partition than their rollout's
    partition_key: str | None = None


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def placement_decisions() -> dict[str, Any]:
    """`fuzz/web`'s decision as the scheduler publishes it: one page per group."""
    ns, _, name = PLACEMENT.partition("/")
    items = [
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "PlacementDecision",
            "metadata": {
                "name": f"{name}-decision-{i + 1}",
                "namespace": ns,
                "labels": {
                    f"{G}/placement": name,
                    f"{G}/decision-group-name": group,
                    f"{G}/decision-group-index": str(i),
                },
            },
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
        }
        for i, (group, clusters) in enumerate(GROUPS)
    ]
    return {"schemaVersion": 1, "placement": PLACEMENT, "seq": 1, "items": items}


def rollout_object(key: str, strategy: dict[str, Any], revision: str = REVISION) -> dict[str, Any]:
    ns, _, name = key.partition("/")
    return {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "Rollout",
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "revision": revision,
            "placementRefs": [{"name": PLACEMENT.partition("/")[2], "rolloutStrategy": strategy}],
        },
    }


def _time(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _status(rollout: str, cluster: str, value: Any, bad: bool, what: str) -> RolloutHostile:
    key = f"{rollout}/{cluster}"
    return RolloutHostile("rollout-status", key.encode(), dumps(value), bad, what, partition_key=rollout)


class RolloutStream:
    """Draws the records; keeps what the final inputs and the ignored counts must be."""

    def __init__(self, rng: random.Random, partitions: int, *, max_big: int = 20) -> None:
        self.rng = rng
        self.partitions = partitions
        self.max_big = max_big
        self.big = 0
        self.ticks = 0  # a counter in every valid report's time, so no two are equal
        self.good_rollouts: list[str] = []
        self.ignored: Counter[str] = Counter()
        self._last: RolloutHostile | None = None

    def _tick(self) -> datetime:
        self.ticks += 1
        return NOW - timedelta(minutes=20) + timedelta(milliseconds=self.ticks)

    # ---- good -----------------------------------------------------------------------------
    def good_report(self) -> RolloutHostile:
        status = self.rng.choice(["Progressing", "Succeeded", "Succeeded", "Failed"])
        # some recent enough to soak or to be inside the deadline, some long done or timed out
        at = self._tick() - timedelta(seconds=self.rng.choice([0, 0, 200, 900]))
        value = {"revision": REVISION, "status": status, "lastTransitionTime": _time(at)}
        return _status(MAIN, self.rng.choice(REPORTED), value, False, "good")

    def good_rollout(self) -> RolloutHostile:
        key = f"{NAMESPACE}/g{len(self.good_rollouts):05d}"
        self.good_rollouts.append(key)
        return RolloutHostile(
            "rollouts", key.encode(), dumps(rollout_object(key, {"type": "All"})), False, "good"
        )

    # ---- valid, changing nothing --------------------------------------------------------
    def other_revision(self) -> RolloutHostile:
        self.ignored["other-revision"] += 1
        value = {
            "revision": self.rng.choice(["v1", "v3", "v2 ", "V2", "x" * 200]),
            "status": self.rng.choice(["Progressing", "Succeeded", "Failed", "Skip"]),
            "lastTransitionTime": _time(self._tick()),
        }
        return _status(MAIN, self.rng.choice(OTHER_REVISION), value, False, "other-revision")

    def no_rollout(self) -> RolloutHostile:
        self.ignored["no-rollout"] += 1
        rollout = GONE if self.rng.random() < 0.5 else f"{NAMESPACE}/never{self.rng.randrange(50)}"
        value = {"revision": REVISION, "status": "Succeeded", "lastTransitionTime": _time(self._tick())}
        return _status(rollout, self.rng.choice(REPORTED), value, False, "no-rollout")

    def stray(self) -> RolloutHostile:
        self.ignored["not-placed"] += 1
        value = {"revision": REVISION, "status": "Succeeded", "lastTransitionTime": _time(self._tick())}
        return _status(MAIN, self.rng.choice(STRAY), value, False, "not-placed")

    def far_time(self) -> RolloutHostile:
        year = self.rng.choice([1, 1970, 2999, 9999])
        self.ticks += 1
        minutes, seconds = divmod(self.ticks, 60)
        at = f"{year:04d}-01-0{1 + minutes // 1440 % 9}T{minutes // 60 % 24:02d}:{minutes % 60:02d}:{seconds:02d}Z"
        value = {
            "revision": REVISION,
            "status": self.rng.choice(["Progressing", "Succeeded", "Failed"]),
            "lastTransitionTime": at,
        }
        return _status(MAIN, self.rng.choice(FAR_TIME), value, False, "far-time")

    # ---- bad ------------------------------------------------------------------------------
    def undecodable(self) -> RolloutHostile:
        topic = self.rng.choice(["rollouts", "rollout-status"])
        garbage = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 64)))
        kind = self.rng.randrange(3)
        if kind == 0:
            return RolloutHostile(
                topic,
                f"{MAIN}/c00".encode() if topic == "rollout-status" else MAIN.encode(),
                b"{" + garbage,
                True,
                "undecodable",
                MAIN,
            )
        if kind == 1:
            return RolloutHostile(
                topic, b"\xff\xfe" + garbage, dumps({"revision": REVISION}), True, "non-utf8-key", MAIN
            )
        return RolloutHostile(
            topic, None, dumps({"revision": REVISION, "status": "Succeeded"}), True, "no-key", MAIN
        )

    def oversized(self) -> RolloutHostile:
        self.big += 1
        value = {"revision": REVISION, "status": "Succeeded", "message": "x" * (MIB + 10)}
        return _status(MAIN, self.rng.choice(REPORTED), value, True, "oversized")

    def wrong_types(self) -> RolloutHostile:
        if self.rng.random() < 0.3:
            key = f"{NAMESPACE}/bad{self.rng.randrange(100)}"
            obj: Any = rollout_object(key, {"type": "All"})
            spoil = self.rng.randrange(4)
            if spoil == 0:
                obj["spec"]["revision"] = self.rng.choice([5, None, [], {"a": 1}])
            elif spoil == 1:
                obj["spec"]["placementRefs"] = self.rng.choice(["web", 3, [{"name": 4}]])
            elif spoil == 2:
                obj["metadata"]["name"] = "someone-else"  # key mismatch
            else:
                obj = self.rng.choice([[], "rollout", 42, True])
            return RolloutHostile("rollouts", key.encode(), dumps(obj), True, "wrong-types")
        value: Any = self.rng.choice(
            [
                {"revision": 5, "status": "Succeeded"},
                {"revision": REVISION, "status": ["Succeeded"]},
                {"revision": REVISION},
                {"status": "Succeeded"},
                {"revision": "", "status": "Succeeded"},
                {"revision": REVISION, "status": "Succeeded", "lastTransitionTime": "yesterday"},
                {"revision": REVISION, "status": "Succeeded", "lastTransitionTime": 1234},
                [REVISION, "Succeeded"],
                "Succeeded",
                17,
            ]
        )
        return _status(MAIN, self.rng.choice(REPORTED), value, True, "wrong-types")

    def unknown_status(self) -> RolloutHostile:
        word = self.rng.choice(["Done", "succeeded", "SUCCEEDED", "ToApply", "TimeOut", "", "Progressing "])
        value = {"revision": REVISION, "status": word, "lastTransitionTime": _time(NOW)}
        return _status(MAIN, self.rng.choice(REPORTED), value, True, "unknown-status")

    def out_of_range_time(self) -> RolloutHostile:
        at = self.rng.choice(
            [
                "10000-01-01T00:00:00Z",
                "2026-13-01T00:00:00Z",
                "0000-01-01T00:00:00Z",
                "2026-01-01T25:00:00Z",
                "1234",  # pydantic alone would read seconds since 1970
                "2026-01-01",
                "2026-01-01T00:00:00",  # no offset
            ]
        )
        value = {"revision": REVISION, "status": "Succeeded", "lastTransitionTime": at}
        return _status(MAIN, self.rng.choice(REPORTED), value, True, "bad-time")

    def bad_status_key(self) -> RolloutHostile:
        key = self.rng.choice([MAIN, f"{MAIN}/", f"{NAMESPACE}//c00", f"{MAIN}/c00/extra", "", "///"])
        value = {"revision": REVISION, "status": "Succeeded", "lastTransitionTime": _time(NOW)}
        return RolloutHostile("rollout-status", key.encode(), dumps(value), True, "bad-key", MAIN)

    def off_partition(self) -> RolloutHostile:
        """A valid report of the main rollout, produced to another partition than its rollout's."""
        expected = rollout_partition(MAIN, self.partitions)
        elsewhere = next(
            k for n in range(1000) if partition_for_key(k := f"elsewhere{n}", self.partitions) != expected
        )
        value = {"revision": REVISION, "status": "Succeeded", "lastTransitionTime": _time(NOW)}
        return RolloutHostile(
            "rollout-status",
            f"{MAIN}/{self.rng.choice(REPORTED)}".encode(),
            dumps(value),
            True,
            "off-partition",
            elsewhere,
        )

    # ---- the stream -----------------------------------------------------------------------
    def draw(self) -> list[RolloutHostile]:
        """One record, or a flood: copies of the last valid report, in a row."""
        r = self.rng.random()
        if r < 0.02 and self._last is not None:
            copies = self.rng.randrange(5, 60)
            return [
                RolloutHostile(
                    self._last.topic,
                    self._last.key,
                    self._last.value,
                    False,
                    "flood",
                    self._last.partition_key,
                )
            ] * copies
        makers = [
            (self.good_report, 20),
            (self.good_rollout, 3),
            (self.other_revision, 8),
            (self.no_rollout, 6),
            (self.stray, 2),
            (self.far_time, 2),
            (self.undecodable, 12),
            (self.oversized, 1 if self.big < self.max_big else 0),
            (self.wrong_types, 18),
            (self.unknown_status, 10),
            (self.out_of_range_time, 6),
            (self.bad_status_key, 6),
            (self.off_partition, 6),
        ]
        make = self.rng.choices([m for m, _ in makers], weights=[w for _, w in makers])[0]
        record = make()
        if not record.bad and record.topic == "rollout-status":
            self._last = record
        return [record]

    def records(self, total: int) -> Iterator[RolloutHostile]:
        n = 0
        while n < total:
            for record in self.draw()[: total - n]:
                n += 1
                if record.what == "flood":
                    self.ignored["unchanged"] += 1
                yield record
