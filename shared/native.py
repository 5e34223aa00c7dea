"""The modules `setup.py` compiles to C with mypyc, and whether this installation runs them.

Replaying a history and evaluating placements is interpreter-bound: attribute reads, calls and
small loops over a few dozen clusters, not array arithmetic. Compiled, the same source walks
the bench-audit history with a fifth to a quarter less CPU (docs/performance.md#audit), and
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
    "fleetplace.services.auditor.audit",
    "fleetplace.services.auditor.batches",
    "fleetplace.services.auditor.check",
    "fleetplace.services.auditor.history",
    "fleetplace.services.auditor.replay",
    "fleetplace.services.auditor.walk",
    "fleetplace.services.scheduler.core",
    "fleetplace.services.scheduler.ingest",
    "fleetplace.shared.api.admission",
    "fleetplace.shared.api.decision_diff",
    "fleetplace.shared.api.objects",
    "fleetplace.shared.bus.codec",
    "fleetplace.shared.placement.engine",
    "fleetplace.shared.placement.fleet",
    "fleetplace.shared.placement.framework",
    "fleetplace.shared.placement.groups",
    "fleetplace.shared.placement.plugins.addon",
    "fleetplace.shared.placement.plugins.balance",
    "fleetplace.shared.placement.plugins.predicate",
    "fleetplace.shared.placement.plugins.prefer_no_select",
    "fleetplace.shared.placement.plugins.resource",
    "fleetplace.shared.placement.plugins.spread",
    "fleetplace.shared.placement.plugins.steady",
    "fleetplace.shared.placement.plugins.taints",
    "fleetplace.shared.placement.reads",
    "fleetplace.shared.placement.reasons",
    "fleetplace.shared.placement.scheduler",
    "fleetplace.shared.placement.selectors",
    "fleetplace.shared.placement.shared_totals",
    "fleetplace.shared.placement.totals",
    "fleetplace.shared.placement.weights",
)

# the one shared library every compiled module's shim loads (setup.py's mypycify group name)
GROUP = "fleetplace.shared.native_build"

PURE_PYTHON_ENV = "FLEETPLACE_PURE_PYTHON"


def path_of(module: str) -> str:
    """The source file of `module`, relative to the project root (`fleetplace.shared.x` lives in
    `shared/x.py`; `fleetplace/shared` is a link to that folder)."""
    return module.removeprefix("fleetplace.").replace(".", "/") + ".py"


def package_path_of(module: str) -> str:
    """The path of `module` through the `fleetplace/` package folder, as the compiler needs it
    (it names a module after the folders above its file)."""
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
        base = root / path_of(module).removesuffix(".py")
        found.extend(base.parent.glob(base.name + ".*.so"))
    return sorted(found)


def stale(root: Path) -> list[str]:
    """Compiled modules whose source under `root` was edited after the in-place build: the
    interpreter would run the old compiled code instead (an extension module shadows its .py).
    Only the listed modules are compiled, so only their sources can be stale. Empty without a
    build."""
    extensions = built(root)
    if not extensions:
        return []
    oldest = min(p.stat().st_mtime for p in extensions)
    sources = [root / path_of(module) for module in MODULES]
    return sorted(str(p.relative_to(root)) for p in sources if p.is_file() and p.stat().st_mtime > oldest)
