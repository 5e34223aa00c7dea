"""docs/deployment.md's settings tables list every setting the settings classes read, with its
default, and nothing they do not read: a new setting without a row fails here, naming the row to add."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic_settings import BaseSettings

from fleetplace.shared.settings import KafkaSettings, Settings

ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENT = ROOT / "docs" / "deployment.md"
NOT_SET = "–"  # what the table's default column says for a setting with no default


def variables(model: type[BaseSettings]) -> dict[str, object]:
    """Environment variable → default of every setting of `model` (nested groups have their own)."""
    prefix = str(model.model_config.get("env_prefix", ""))
    return {
        f"{prefix}{name}".upper(): field.default
        for name, field in model.model_fields.items()
        if not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseSettings))
    }


def documented_default(value: object) -> str:
    """A default as the table writes it: `–` for none, `true`/`false`, `600` for 600.0."""
    if value is None or value == "":
        return NOT_SET
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def table_rows(text: str) -> dict[str, str]:
    """Variable → default cell (its first code span, or `–`) of every row of the Configuration
    section's tables; a row may name several variables (`KAFKA_SASL_USERNAME`, `KAFKA_SASL_PASSWORD`)."""
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        code = re.match(r"`([^`]*)`", cells[1])
        default = code.group(1) if code else cells[1]
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0]):
            rows[name] = default
    return rows


def test_the_table_reader_sees_rows_naming_several_variables() -> None:
    text = (
        "# Deployment\n\n## Configuration\n\n| variable | default | |\n|---|---|---|\n"
        "| `KAFKA_SASL_USERNAME`, `KAFKA_SASL_PASSWORD` | – | required |\n"
        "| `FLEETPLACE_HTTP_HOST` | `127.0.0.1` (image: `0.0.0.0`) | |\n\n## Next\n| `X_Y` | `1` | |\n"
    )
    assert table_rows(text) == {
        "KAFKA_SASL_USERNAME": NOT_SET,
        "KAFKA_SASL_PASSWORD": NOT_SET,
        "FLEETPLACE_HTTP_HOST": "127.0.0.1",
    }


def test_every_setting_has_a_row_in_docs_deployment_md_with_its_default() -> None:
    rows = table_rows(DEPLOYMENT.read_text(encoding="utf-8"))
    settings = {**variables(KafkaSettings), **variables(Settings)}
    missing = [
        f"| `{name}` | {'–' if (d := documented_default(default)) == NOT_SET else f'`{d}`'} | <what it does> |"
        for name, default in settings.items()
        if name not in rows
    ]
    assert not missing, "docs/deployment.md, Configuration: add a row for each of\n" + "\n".join(missing)
    wrong = {
        name: (rows[name], documented_default(default))
        for name, default in settings.items()
        if rows[name] != documented_default(default)
    }
    assert not wrong, f"docs/deployment.md, Configuration: defaults (documented, actual) differ: {wrong}"
    stale = sorted(set(rows) - set(settings))
    assert not stale, f"docs/deployment.md, Configuration: rows for settings that do not exist: {stale}"
