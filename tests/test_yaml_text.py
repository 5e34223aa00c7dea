"""One YAML emitter (`fleetplace.shared.yaml_text`): the same text in every output, written as
UTF-8 characters whatever the locale, never as escapes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleetplace.services.commands.audit import _write_objects
from fleetplace.services.commands.output import write_yaml
from fleetplace.shared.yaml_text import yaml_document, yaml_documents

ROOT = Path(__file__).resolve().parent.parent
CLI = (sys.executable, "-m", "fleetplace.services.cli")
REASON = "rank 1/3, score 100: Balance 100×1"
SLICE = {"kind": "PlacementDecision", "decisions": [{"reason": REASON}]}


def test_export_and_the_commands_write_the_same_utf8_text(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    _write_objects([SLICE], "yaml")
    exported = capsysbinary.readouterr().out
    write_yaml(SLICE)
    written = capsysbinary.readouterr().out
    assert exported == written == yaml_documents([SLICE]).encode()
    assert REASON.encode() in exported and b"\\xD7" not in exported
    assert yaml.safe_load(exported) == SLICE


def test_a_document_and_documents_hold_the_same_value() -> None:
    assert yaml.safe_load(yaml_document(SLICE)) == SLICE
    assert list(yaml.safe_load_all(yaml_documents([SLICE, {"a": 1}]))) == [SLICE, {"a": 1}]
    assert "×" in yaml_document(SLICE)


def test_simulate_sig_mc_writes_utf8_under_an_ascii_locale() -> None:
    """A reason's × reaches a pipe as UTF-8 even where the locale would refuse it."""
    done = subprocess.run(
        [*CLI, "simulate", "docs/examples/fleet.yaml", "--placement", "apps/web", "-o", "sig-mc"],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": "ascii", "LC_ALL": "C"},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode("utf-8")
    assert "×" in text and "\\xD7" not in text


def _yaml_writers(path: Path) -> list[str]:
    """Calls of a PyYAML emitter (`yaml.dump`, `yaml.safe_dump_all`, …) in one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "yaml"
            and "dump" in node.func.attr
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: yaml.{node.func.attr}")
    return found


def test_no_module_but_the_emitter_writes_yaml_itself() -> None:
    emitter = ROOT / "shared" / "yaml_text.py"
    modules = [p for d in ("shared", "services", "fleetplace") for p in (ROOT / d).rglob("*.py")]
    assert [w for p in modules if p != emitter for w in _yaml_writers(p)] == []
