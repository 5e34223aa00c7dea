"""`fleetplace rollout simulate`: OCM's rollout strategies on scenario files.

Each scenario gives a rollout strategy, a placement's decision groups and the workload's status
on each cluster; the command prints what to roll out now, what timed out, what was removed,
whether maxFailures was breached and when to look again — one JSON line per scenario, or a
table. A scenario with an `expect` key is checked: differences go to stderr and exit 1.
Exit 2 when a file cannot be read or is not a scenario or a list of them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from fleetplace.shared.rollout import evaluate_scenario

rollout_app = typer.Typer(
    name="rollout",
    help="OCM rollout strategies: which clusters get a workload now.",
    no_args_is_help=True,
    add_completion=False,
)

RESULT_FIELDS = (
    "clustersToRollout",
    "clustersTimeOut",
    "clustersRemoved",
    "maxFailureBreach",
    "recheckAfterSeconds",
    "error",
)


class Output(StrEnum):
    JSON = "json"
    TABLE = "table"


def register(app: typer.Typer) -> None:
    app.add_typer(rollout_app, name="rollout")


class InputError(Exception):
    """A file that cannot be used; the message names it."""


def read_scenarios(path: Path) -> list[Any]:
    """The scenarios of one file: a scenario object or a list of them."""
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except orjson.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e}") from None
    if isinstance(data, Mapping):
        return [data]
    if isinstance(data, list):
        return data
    raise InputError(f"{path}: expected a scenario object or a list of them")


def differences(line: Mapping[str, Any], expect: Mapping[str, Any]) -> list[str]:
    """The result fields whose values differ from `expect` (numbers compare by value)."""
    return [key for key in RESULT_FIELDS if key in expect and expect[key] != line.get(key)]


def _table(line: Mapping[str, Any], console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.print(f"[bold]{escape(line['name'] or '(unnamed)')}[/bold]", highlight=False)
    if line["error"] is not None:
        console.print(f"[red]error:[/red] {escape(line['error'])}", highlight=False)
        return
    table = Table("list", "cluster", "group", "status", "last transition", "recheck at")
    table.columns[1].no_wrap = True
    for label, key in (
        ("rollout", "clustersToRollout"),
        ("timeout", "clustersTimeOut"),
        ("removed", "clustersRemoved"),
    ):
        for s in line[key]:
            table.add_row(
                label,
                s["clusterName"],
                f"{s['groupName'] or '-'} ({s['groupIndex']})",
                s["status"],
                s["lastTransitionTime"] or "",
                s["timeOutTime"] or "",
            )
    console.print(table)
    recheck = line["recheckAfterSeconds"]
    console.print(
        f"maxFailureBreach: {str(line['maxFailureBreach']).lower()}   "
        f"recheck after: {'-' if recheck is None else f'{recheck} s'}",
        highlight=False,
    )


@rollout_app.command("simulate")
def simulate(
    paths: Annotated[list[Path], typer.Argument(help="Scenario files (JSON: one scenario or a list).")],
    output: Annotated[
        Output, typer.Option("--output", "-o", help="json: one line per scenario.")
    ] = Output.TABLE,
) -> None:
    """Evaluate rollout scenarios and print each result, in input order."""
    from rich.console import Console

    # Piped output is read by programs and people alike: never wrap or cut cluster names.
    console = Console() if sys.stdout.isatty() else Console(width=10_000, soft_wrap=True)
    mismatched = False
    for path in paths:
        try:
            scenarios = read_scenarios(path)
        except InputError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        for i, scenario in enumerate(scenarios):
            line = evaluate_scenario(scenario)
            if output is Output.JSON:
                sys.stdout.buffer.write(orjson.dumps(line) + b"\n")
                sys.stdout.flush()
            else:
                _table(line, console)
            expect = scenario.get("expect") if isinstance(scenario, Mapping) else None
            if isinstance(expect, Mapping):
                fields = differences(line, expect)
                if fields:
                    mismatched = True
                    label = line["name"] or f"{path}[{i}]"
                    typer.echo(f"mismatch: {label}: {', '.join(fields)}", err=True)
    if mismatched:
        raise typer.Exit(1)
