"""Reading YAML: libyaml's parser where PyYAML has it, duplicate keys found with either parser,
line numbers in every error, and no progress output on a pipe."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.shared.api import _yaml_loader, objects
from fleetplace.shared.api.objects import ObjectError, Validation, load_yaml

from ..bench.large_fleet import write_fleet


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_the_c_parser_is_used_where_pyyaml_has_it() -> None:
    assert issubclass(objects._Loader, yaml.CSafeLoader)


def on_parser(base: type[Any]) -> type[Any]:
    """The product's loader (the duplicate-key check) on the given parser."""
    return type("_Loader", (_yaml_loader.DuplicateKeys, base), {})


@pytest.fixture(params=["c", "python"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both parsers: the C one (when built) and the pure Python one behave the same."""
    if request.param == "c" and not yaml.__with_libyaml__:
        pytest.skip("PyYAML built without libyaml")
    base = yaml.CSafeLoader if request.param == "c" else yaml.SafeLoader
    monkeypatch.setattr(objects, "_Loader", on_parser(base))
    return str(request.param)


def test_a_duplicate_key_is_found_with_its_line_by_either_parser(loader: str) -> None:
    text = "a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n"
    with pytest.raises(ObjectError, match=r"f\.yaml: file: line 5, column 3: duplicate key 'c'"):
        load_yaml(text, "f.yaml")
    warnings: list[str] = []
    assert load_yaml(text, "f.yaml", Validation.WARN, warnings.append) == [{"a": 1, "b": {"c": 3, "d": 2}}]
    assert warnings == ["f.yaml: line 5, column 3: duplicate key 'c'"]
    assert load_yaml(text, "f.yaml", Validation.IGNORE) == [{"a": 1, "b": {"c": 3, "d": 2}}]


def test_merge_keys_are_not_duplicates(loader: str) -> None:
    text = "base: &b {x: 1, y: 2}\nderived: {<<: *b, y: 3}\n"
    assert load_yaml(text, "f.yaml") == [{"base": {"x": 1, "y": 2}, "derived": {"x": 1, "y": 3}}]


def test_a_syntax_error_names_the_file_line_and_column(loader: str) -> None:
    with pytest.raises(ObjectError) as caught:
        load_yaml("kind: Placement\nspec: [1,\n  2\nmetadata: {}\n", "p.yaml")
    assert "p.yaml" in str(caught.value)
    assert "line 2, column 7" in str(caught.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


PARSERS = [yaml.SafeLoader, *([yaml.CSafeLoader] if yaml.__with_libyaml__ else [])]


@given(st.lists(json_values.filter(lambda v: v is not None), max_size=3))
def test_both_parsers_read_what_pyyaml_writes(docs: list[Any]) -> None:
    text = yaml.safe_dump_all(docs)
    expected = list(yaml.safe_load_all(text))
    for base in PARSERS:  # each example through each parser (a fixture would pick one per test)
        with mock.patch.object(objects, "_Loader", on_parser(base)):
            assert load_yaml(text, "f.yaml") == expected, base.__name__


def test_a_large_file_prints_no_progress_on_a_pipe(tmp_path: Path) -> None:
    path = write_fleet(tmp_path / "hub.yaml", clusters=300)
    result = CliRunner().invoke(app, ["publish", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert len(result.stdout.splitlines()) == 303
    result = CliRunner().invoke(app, ["simulate", str(path), "--now", "2026-03-01T12:00:00Z"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
