"""The cyclic-GC policy (shared/memory.py) measured: bench-engine's placements-10000x1000 with
the state frozen out of the collector after it is loaded, against Python's defaults, each in a
fresh process, alternated, medians of the runs. One JSON line:

    python -m tests.bench.gc_ab [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

import orjson


def _rate(no_policy: bool) -> float:
    args = [sys.executable, "-m", "tests.bench.engine", "--only", "placements-10000x1000"]
    out = subprocess.run([*args, *(["--no-gc-policy"] if no_policy else [])], capture_output=True, check=True)
    return float(orjson.loads(out.stdout.splitlines()[-1])["placements_per_second"])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.gc_ab", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with_policy: list[float] = []
    defaults: list[float] = []
    for _ in range(runs):
        defaults.append(_rate(no_policy=True))
        with_policy.append(_rate(no_policy=False))
        sys.stderr.write(f"defaults {defaults[-1]:.0f}/s, frozen {with_policy[-1]:.0f}/s\n")
    line = {
        "bench": "gc",
        "run": "placements-10000x1000",
        "runs": runs,
        "defaults_per_second": round(statistics.median(defaults), 1),
        "frozen_per_second": round(statistics.median(with_policy), 1),
        "gain": round(statistics.median(with_policy) / statistics.median(defaults), 3),
    }
    sys.stdout.write(orjson.dumps(line).decode() + "\n")


if __name__ == "__main__":
    main()
