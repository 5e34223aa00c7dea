"""The modules `setup.py` compiles to C with mypyc, and whether this installation runs them.

Replaying a history and evaluating placements is interpreter-bound: attribute reads, calls and
small loops over a few dozen clusters, not array arithmetic. Compiled, the same source walks
the bench-audit history with a fifth to a quarter less CPU (docs/audit.md, Performance), and
the worker's ingest and evaluation gain alike. The list is the engine, the worker's record
processing and the auditor's walk; modules that lean on dynamic features (the CEL bindings,
pydantic models, the CLI and the Kafka clients) stay interpreted.

`FLEETPLACE_PURE_PYTHON=1` at install time builds nothing (no C compiler needed); the code is
the same either way. This file is read by `setup.py` before anything is installed: it imports
nothing.
"""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path

MODULES = (
    "services.auditor.audit",
    "services.auditor.batches",
    "services.auditor.history",
    "services.auditor.replay",
    "services.auditor.walk",
    "services.scheduler.core",
    "shared.api.admission",
    "shared.api.objects",
    "shared.bus.codec",
    "shared.placement.engine",
    "shared.placement.fleet",
    "shared.placement.framework",
    "shared.placement.groups",
    "shared.placement.plugins.addon",
    "shared.placement.plugins.balance",
    "shared.placement.plugins.predicate",
    "shared.placement.plugins.prefer_no_select",
    "shared.placement.plugins.resource",
    "shared.placement.plugins.spread",
    "shared.placement.plugins.steady",
    "shared.placement.plugins.taints",
    "shared.placement.scheduler",
    "shared.placement.selectors",
    "shared.placement.totals",
    "shared.placement.weights",
)

# the one shared library every compiled module's shim loads (setup.py's mypycify group name)
GROUP = "shared.native_build"

PURE_PYTHON_ENV = "FLEETPLACE_PURE_PYTHON"


def path_of(module: str) -> str:
    """The source file of `module`, relative to the project root."""
    return module.replace(".", "/") + ".py"


def compiled() -> list[str]:
    """The modules of MODULES that this process loaded from a compiled extension (imported ones
    only: call it after the code you care about was imported)."""
    out = []
    for name in MODULES:
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None)
        if spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            out.append(name)
    return out


def built(root: Path) -> list[Path]:
    """The compiled extension files an in-place build left under `root` (the project)."""
    found: list[Path] = []
    for module in (*MODULES, GROUP + "__mypyc"):
        base = root / module.replace(".", "/")
        found.extend(base.parent.glob(base.name + ".*.so"))
    return sorted(found)


def stale(root: Path) -> list[str]:
    """Sources under `root` edited after the in-place build: the interpreter would run the old
    compiled code instead (an extension module shadows its .py). Empty without a build."""
    extensions = built(root)
    if not extensions:
        return []
    oldest = min(p.stat().st_mtime for p in extensions)
    sources = [p for top in ("shared", "services") for p in (root / top).rglob("*.py")]
    return sorted(str(p.relative_to(root)) for p in sources if p.stat().st_mtime > oldest)
