"""`make bench-queues`: 100,000 applications through a 6-rule YuniKorn config, one JSON line.

The yardstick is what the worker must do anyway for every record: decode it (orjson) and
validate it (pydantic). `ratio` = (decode + place) / decode — placing should cost no more than
reading the record (ratio ≤ 2). Each figure is the best of a few runs, every placing run on a
fresh placer, so queues are created in every run.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable

import orjson

from shared.queueing import ApplicationSubmission, QueuePlacer, parse_config

APPS = 100_000
RUNS = 3

# Six rules that exercise everything on the hot path: a provided rule without create, a user
# rule under a fixed parent with a regexp group filter, a tag rule under a fixed parent with a
# deny list, a fixed rule with an allow list, a tag rule that needs existing queues, and a
# last-resort fixed queue; ACLs on the way down.
CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: ' dev,ops,batch,etl,data'
        adminacl: admins
        queues:
          - name: default
          - name: batch
            submitacl: ' batch,etl'
          - name: users
            parent: true
            submitacl: '*'
          - name: namespaces
            parent: true
          - name: teams
            parent: true
            queues:
%(teams)s
    placementrules:
      - name: provided
        create: false
      - name: user
        create: true
        filter: {type: allow, groups: ['^dev']}
        parent: {name: fixed, value: root.users}
      - name: tag
        value: namespace
        create: true
        filter: {type: deny, users: [mallory, trudy, eve]}
        parent: {name: fixed, value: root.namespaces}
      - name: fixed
        value: batch
        filter: {type: allow, groups: [batch, etl]}
      - name: tag
        value: team
        parent: {name: fixed, value: teams}
      - name: fixed
        value: root.default
"""
TEAMS = [f"team-{chr(ord('a') + i)}" for i in range(10)]


def config_text() -> str:
    teams = "\n".join(f"              - name: {t}\n                submitacl: ' {t}'" for t in TEAMS)
    return CONFIG % {"teams": teams}


def records(n: int, seed: int = 7) -> list[bytes]:
    rnd = random.Random(seed)
    group_sets = [["dev"], ["developers", "ops"], ["ops"], ["batch"], ["etl", "data"], ["data"], []]
    out = []
    for i in range(n):
        user = f"user{rnd.randrange(2000)}"
        tags = {}
        if rnd.random() < 0.6:
            tags["namespace"] = f"ns-{rnd.randrange(200)}"
        if rnd.random() < 0.3:
            tags["team"] = rnd.choice([*TEAMS, "team-x", "team-y"])
        if rnd.random() < 0.01:
            tags["application.create.force"] = "true"
        groups = rnd.choice(group_sets)
        if groups and rnd.random() < 0.3:
            groups = [*groups, f"team-{chr(ord('a') + rnd.randrange(12))}"]
        queue = rnd.choice(
            ["", "", "", "default", "root.batch", "root.teams.team-c", "unknown", "root.users"]
        )
        record = {
            "applicationID": f"app-{i:06d}",
            "partition": "default",
            "user": rnd.choice(["mallory", user]) if rnd.random() < 0.02 else user,
            "groups": groups,
            "tags": tags,
            "queue": queue,
        }
        out.append(orjson.dumps(record))
    return out


def best_of(runs: int, work: Callable[[], float]) -> float:
    return min(work() for _ in range(runs))


def main() -> None:
    config = parse_config(config_text())
    raw = records(APPS)
    decoded: list[ApplicationSubmission] = []

    def decode() -> float:
        t0 = time.perf_counter()
        apps = [ApplicationSubmission.model_validate(orjson.loads(r)) for r in raw]
        elapsed = time.perf_counter() - t0
        decoded[:] = apps
        return elapsed

    def place() -> float:
        placer = QueuePlacer(config)
        apps = decoded
        t0 = time.perf_counter()
        for app in apps:
            placer.place(app)
        return time.perf_counter() - t0

    decode_seconds = best_of(RUNS, decode)
    place_seconds = best_of(RUNS, place)
    line = {
        "bench": "queues",
        "apps": APPS,
        "placed_per_second": round(APPS / place_seconds),
        "decode_per_second": round(APPS / decode_seconds),
        "ratio": round((decode_seconds + place_seconds) / decode_seconds, 3),
    }
    sys.stdout.write(orjson.dumps(line).decode() + "\n")


if __name__ == "__main__":
    main()
