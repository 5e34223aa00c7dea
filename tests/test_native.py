"""The compiled build (shared/native.py): what it compiles is what runs, and stale builds are caught."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from fleetplace.shared import native

ROOT = Path(__file__).resolve().parent.parent


def test_every_listed_module_has_its_source() -> None:
    missing = [m for m in native.MODULES if not (ROOT / native.path_of(m)).is_file()]
    assert missing == []


@pytest.mark.skipif(not native.built(ROOT), reason="a pure Python build: nothing was compiled")
def test_a_build_runs_every_listed_module_compiled() -> None:
    for module in native.MODULES:
        importlib.import_module(module)
    assert native.compiled() == list(native.MODULES)


@pytest.mark.skipif(bool(native.built(ROOT)), reason="a compiled build")
def test_a_pure_build_runs_the_sources() -> None:
    for module in native.MODULES:
        importlib.import_module(module)
    assert native.compiled() == []


def _project(tmp: Path) -> Path:
    for module in ("fleetplace.shared.placement.fleet", "fleetplace.services.auditor.walk"):
        source = tmp / native.path_of(module)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("x = 1\n")
    return tmp


def test_stale_names_the_sources_edited_after_the_build(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert native.stale(root) == []  # nothing built: nothing stale
    extension = root / "shared/placement/fleet.cpython-311-x86_64-linux-gnu.so"
    extension.write_bytes(b"")
    os.utime(root / native.path_of("fleetplace.shared.placement.fleet"), (1_000, 1_000))
    os.utime(root / native.path_of("fleetplace.services.auditor.walk"), (1_000, 1_000))
    os.utime(extension, (2_000, 2_000))
    assert native.built(root) == [extension]
    assert native.stale(root) == []
    os.utime(root / native.path_of("fleetplace.services.auditor.walk"), (3_000, 3_000))
    assert native.stale(root) == ["services/auditor/walk.py"]


def test_editing_a_module_that_is_not_compiled_needs_no_rebuild(tmp_path: Path) -> None:
    root = _project(tmp_path)
    extension = root / "shared/placement/fleet.cpython-311-x86_64-linux-gnu.so"
    extension.write_bytes(b"")
    os.utime(extension, (2_000, 2_000))
    for module in ("fleetplace.shared.placement.fleet", "fleetplace.services.auditor.walk"):
        os.utime(root / native.path_of(module), (1_000, 1_000))
    interpreted = root / "shared/placement/explain.py"
    assert "fleetplace.shared.placement.explain" not in native.MODULES
    interpreted.write_text("x = 2\n")
    os.utime(interpreted, (3_000, 3_000))
    assert native.stale(root) == []
