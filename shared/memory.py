"""Keeping CPython's cyclic garbage collector off a large, long-lived state.

A worker (or a benchmark of the engine) holds the whole fleet for its lifetime, while evaluating
allocates many short-lived containers. Left to Python's defaults, every few hundred allocations
start a young collection, and the old generation — the fleet — is traversed again whenever enough
objects have survived into it. Once the state is built, `state_loaded` moves everything alive
into the permanent generation (`gc.freeze`), which no collection traverses, and lets young
collections run every `LOADED_THRESHOLD[0]` allocations instead of every 700. Objects still
die by reference count at once; only cycles wait longer (docs/performance.md#gc).
"""

from __future__ import annotations

import gc

__all__ = ["LOADED_THRESHOLD", "state_loaded"]

# (young, middle, old) collection thresholds once the state is loaded
LOADED_THRESHOLD = (20_000, 20, 20)


def state_loaded() -> None:
    """Freeze what is alive now out of the collector's sight and widen the young generation."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*LOADED_THRESHOLD)
