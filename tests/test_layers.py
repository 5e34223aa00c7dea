"""The library (`shared/`) imports nothing from the workers and tools (`services/`), not even
inside a function: users install and test against the library alone."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # `from fleetplace import services` (or `from .. import services`) names the package
            # as an imported name, not as the module
            module = node.module or ""
            names.update(f"{module}.{alias.name}".lstrip(".") for alias in node.names)
    return names


def test_the_library_imports_nothing_from_services() -> None:
    offending = {
        str(path.relative_to(ROOT)): sorted(n for n in _imported(path) if "services" in n.split("."))
        for path in (ROOT / "shared").rglob("*.py")
    }
    assert {k: v for k, v in offending.items() if v} == {}
