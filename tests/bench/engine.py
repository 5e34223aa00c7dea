"""`make bench-engine`: OCM's benchmark scenario through the engine, one JSON line per run.

Runs: 1,000 and 10,000 placements scheduled one after another over 1,000 clusters (Balance sees
the decisions made so far), the 10,000 again with the clusters read from ClusterProfiles (and
their ratio to the ManagedCluster run), and one schedule over 1,000 / 5,000 / 20,000 clusters
(median).
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time
from datetime import UTC, datetime

import orjson

from fleetplace.shared.api.cluster_profiles import ClusterProfile
from fleetplace.shared.api.cluster_sources import fold_cluster_sources
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import ClusterTaints
from fleetplace.shared.api.rollouts import Rollout
from fleetplace.shared.memory import state_loaded
from fleetplace.shared.placement import PlacementEngine, apply_object, schedule
from tests.bench.scenario import fleet_objects, placement, spread_placement

NOW = datetime(2026, 11, 22, 5, 0, tzinfo=UTC)


def _engine(clusters: int, *, profiles: bool = False) -> PlacementEngine:
    """The benchmark fleet; with `profiles`, its clusters read from ClusterProfiles the way
    `simulate` reads them."""
    engine = PlacementEngine()
    objects = [(parse_object(raw), raw) for raw in fleet_objects(clusters, profiles=profiles)]
    for obj, raw in fold_cluster_sources(objects) if profiles else objects:
        assert not isinstance(obj, ClusterProfile | ClusterTaints | Rollout)
        apply_object(engine.fleet, obj, raw)
    return engine


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def emit(line: dict[str, object]) -> None:
    sys.stdout.write(orjson.dumps(line).decode() + "\n")
    sys.stdout.flush()


def run_placements(
    n: int, clusters: int = 1000, *, spread: bool = False, profiles: bool = False, gc_policy: bool = True
) -> float:
    engine = _engine(clusters, profiles=profiles)
    make = spread_placement if spread else placement
    placements = [parse_object(make("bench", i)) for i in range(n)]
    for p in placements:
        apply_object(engine.fleet, p)
    if gc_policy:
        state_loaded()  # what the worker does once its state is read (shared/memory.py)
    else:
        gc.set_threshold(700, 10, 10)  # Python's defaults
    t0 = time.perf_counter()
    for p in placements:
        result = engine.evaluate(p.key, NOW)  # type: ignore[union-attr]
        assert result is not None and len(result.decisions) == 10
        engine.commit(result)
    elapsed = time.perf_counter() - t0
    rate = n / elapsed
    emit(
        {
            "bench": "engine",
            "run": f"placements-{n}x{clusters}"
            + ("-spread" if spread else "")
            + ("-profiles" if profiles else ""),
            "placements_per_second": round(rate, 1),
            "peak_rss_mb": round(_peak_rss_mb(), 1),
            **({} if gc_policy else {"gc": "python-defaults"}),
        }
    )
    return rate


def run_single(clusters: int, repeats: int = 15) -> None:
    """`ms` is a cold schedule: everything derived across placements (score columns, candidates,
    selector results) is dropped before each call, so every cluster's scores are computed again, as
    OCM's scheduler does on every call. `warm_ms` is the same call in a running worker, where that
    work is shared with the placements scheduled before it."""
    engine = _engine(clusters)
    p = parse_object(placement("bench", 0))
    apply_object(engine.fleet, p)

    def median_ms(cold: bool) -> float:
        times = []
        for _ in range(repeats):
            if cold:
                engine.fleet.forget_derived()
            t0 = time.perf_counter()
            schedule(p, engine.fleet, NOW)  # type: ignore[arg-type]
            times.append((time.perf_counter() - t0) * 1000)
        return round(statistics.median(times), 3)

    cold = median_ms(cold=True)
    warm = median_ms(cold=False)
    emit({"bench": "engine", "run": f"single-{clusters}", "ms": cold, "warm_ms": warm})


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.engine", description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["placements-10000x1000"], help="one run")
    parser.add_argument(
        "--no-gc-policy", action="store_true", help="leave the cyclic GC at Python's defaults (A/B)"
    )
    args = parser.parse_args()
    if args.only:
        run_placements(10000, gc_policy=not args.no_gc_policy)
        return
    run_placements(1000)
    plain = run_placements(10000)
    spread = run_placements(10000, spread=True)
    emit({"bench": "engine", "run": "spread-vs-plain", "ratio": round(spread / plain, 3)})
    profiles = run_placements(10000, profiles=True)
    emit({"bench": "engine", "run": "profiles-vs-managed", "ratio": round(profiles / plain, 3)})
    for n in (1000, 5000, 20000):
        run_single(n)


if __name__ == "__main__":
    main()
