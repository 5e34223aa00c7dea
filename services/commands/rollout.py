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
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

from fleetplace.shared.rollout import evaluate_scenario

if TYPE_CHECKING:
    from fleetplace.services.rollout.overview import RolloutRow

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

    from fleetplace.services.rollout.listing import group_label

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
                group_label(s["groupName"] or "", s["groupIndex"]),
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
    from fleetplace.services.commands.output import table_console

    console = table_console()
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


# ---- the worker's side: read a rollout's state, report a status --------------------------------

Bootstrap = Annotated[
    str | None, typer.Option("--bootstrap", help="Kafka bootstrap servers (else $KAFKA_BOOTSTRAP_SERVERS).")
]
Prefix = Annotated[str | None, typer.Option("--prefix", help="Topic prefix (else $FLEETPLACE_TOPIC_PREFIX).")]


def _rollout_key(text: str) -> str:
    parts = text.split("/")
    if len(parts) != 2 or not all(parts):
        typer.echo(f"error: expected NAMESPACE/NAME, got {text!r}", err=True)
        raise typer.Exit(2)
    return text


async def _current_state(settings: Any, key: str) -> dict[str, Any] | None:
    from fleetplace.shared.bus.codec import decode_object
    from fleetplace.shared.bus.kafka import BroadcastReader
    from fleetplace.shared.bus.topics import Topics

    topics = Topics(settings.topic_prefix)
    state: dict[str, Any] | None = None
    async with BroadcastReader(settings.kafka, [topics.rollout_state]) as reader:
        for record in await reader.read_to_end():
            if record.key == key:
                state = decode_object(record.value)
    return state


async def _rollout_row(settings: Any, key: str) -> tuple[RolloutRow, dict[str, Any] | None]:
    """The rollout as the explorer shows it (services/rollout/overview.py), from the rollout
    topics and the placements' current decisions; and its state record (None: no state)."""
    from fleetplace.services.rollout.book import RolloutBook
    from fleetplace.services.rollout.core import decision_groups_of
    from fleetplace.services.rollout.overview import rollout_row
    from fleetplace.shared.bus.codec import DecodeLimits, decode_object
    from fleetplace.shared.bus.errors import DecodeError
    from fleetplace.shared.bus.kafka import BroadcastReader
    from fleetplace.shared.bus.topics import (
        PLACEMENT_DECISIONS,
        ROLLOUT_STATE,
        ROLLOUT_STATUS,
        ROLLOUTS,
        Topics,
    )

    topics = Topics(settings.topic_prefix)
    book = RolloutBook(DecodeLimits.from_settings(settings))
    decisions: dict[str, list[dict[str, Any]]] = {}
    names = {topics.name(t): t for t in (ROLLOUTS, ROLLOUT_STATUS, ROLLOUT_STATE, PLACEMENT_DECISIONS)}
    async with BroadcastReader(settings.kafka, list(names)) as reader:
        for record in await reader.read_to_end():
            topic = names[record.topic]
            if topic != PLACEMENT_DECISIONS:
                book.add(topic, record)
            elif record.key is not None:
                try:
                    value = decode_object(record.value, book.limits)
                    groups = [] if value is None else list(decision_groups_of(value))
                except (DecodeError, ValueError):
                    continue  # the rollout worker dead-letters it
                if value is None:
                    decisions.pop(record.key, None)
                else:
                    decisions[record.key] = [
                        {"groupName": g.group_name, "groupIndex": g.group_index, "clusters": list(g.clusters)}
                        for g in groups
                    ]
    return rollout_row(book, key, decisions.get), book.states.get(key)


@rollout_app.command("status")
def status(
    rollout: Annotated[str, typer.Argument(help="NAMESPACE/NAME of the Rollout.")],
    output: Annotated[Output, typer.Option("--output", "-o", help="json: the state record.")] = Output.TABLE,
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
) -> None:
    """Where a rollout stands: its state, and per placed cluster its group, status, since when,
    soak end or deadline, what next and the deployer's last message (as the explorer shows it)."""
    import asyncio

    from rich.table import Table

    from fleetplace.services.commands.output import table_console
    from fleetplace.services.commands.worker import _settings
    from fleetplace.services.rollout.listing import group_label, to_the_second
    from fleetplace.services.rollout.overview import rollout_state

    key = _rollout_key(rollout)
    settings = _settings(bootstrap, prefix)
    row, state = asyncio.run(_rollout_row(settings, key))
    if state is None:
        typer.echo(f"error: no state for rollout {key!r} on {settings.topic_prefix}rollout-state", err=True)
        raise typer.Exit(1)
    if output is Output.JSON:
        sys.stdout.buffer.write(orjson.dumps(state) + b"\n")
        return
    console = table_console()
    table = Table(
        "placement", "cluster", "group", "status", "since", "soak end / deadline", "next", "message"
    )
    for placement in row.placements:
        if placement.error:
            table.add_row(placement.name, "", "", "error", "", "", placement.error, "")
        for line in placement.lines:
            table.add_row(
                line.placement,
                line.cluster,
                group_label(line.group_name, line.group_index),
                line.status,
                to_the_second(line.since) if line.since else "",
                to_the_second(line.until) if line.until else "",
                line.next,
                line.message or "",
            )
    console.print(table)
    shown = rollout_state(row)
    console.print(
        f"revision {state['revision']}  seq {state['seq']}  state: {shown.word} ({shown.reason})  "
        f"next recheck: {to_the_second(recheck) if (recheck := state.get('nextRecheckAt')) else '-'}",
        highlight=False,
    )


@rollout_app.command("report")
def report(
    rollout: Annotated[str, typer.Argument(help="NAMESPACE/NAME of the Rollout.")],
    cluster: Annotated[str, typer.Argument(help="The cluster the report is about.")],
    status_: Annotated[str, typer.Option("--status", "-s", help="Progressing, Succeeded, Failed or Skip.")],
    revision: Annotated[
        str | None, typer.Option("--revision", help="Default: the rollout's current revision.")
    ] = None,
    message: Annotated[str | None, typer.Option("--message", help="A note for people.")] = None,
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
) -> None:
    """Publish one deployer report to `rollout-status` (on the rollout's partition)."""
    import asyncio
    from datetime import UTC, datetime

    from pydantic import ValidationError

    from fleetplace.services.commands.worker import _settings
    from fleetplace.shared.api.rollouts import RolloutStatusReport, status_key
    from fleetplace.shared.bus.deployer import status_record
    from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
    from fleetplace.shared.bus.topics import Topics
    from fleetplace.shared.wording import problems

    key = _rollout_key(rollout)
    settings = _settings(bootstrap, prefix)
    if revision is None:
        state = asyncio.run(_current_state(settings, key))
        if state is None:
            typer.echo(f"error: no state for rollout {key!r}: pass --revision", err=True)
            raise typer.Exit(1)
        revision = str(state["revision"])
    try:
        value = RolloutStatusReport(
            revision=revision, status=status_, last_transition_time=datetime.now(UTC), message=message
        )
    except ValidationError as e:
        typer.echo(f"error: {problems(e)}", err=True)
        raise typer.Exit(2) from None
    topics = Topics(settings.topic_prefix)

    async def send() -> None:
        producer = make_producer(settings.kafka)
        await start_client(producer)
        try:
            await send_all(
                producer, [status_record(topics, key, cluster, value, "/fleetplace/rollout-report")]
            )
        finally:
            await producer.stop()

    asyncio.run(send())
    typer.echo(f"{status_key(key, cluster)}: {value.status} (revision {revision})")


# ---- the audit's side: the answer in force at a time, and why -----------------------------------


@rollout_app.command("explain")
def explain(
    rollout: Annotated[str, typer.Argument(help="NAMESPACE/NAME of the Rollout.")],
    at: Annotated[str | None, typer.Option("--at", help="RFC 3339 time (default: the latest diff).")] = None,
    output: Annotated[Output, typer.Option("--output", "-o", help="json: one object.")] = Output.TABLE,
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
) -> None:
    """The rollout's answer in force at a time, rebuilt from the topics: per placement and cluster
    its group, status, soak end or deadline, and the rule that put it there."""
    from rich.table import Table

    from fleetplace.services.auditor.rollout_explain import NoRolloutDiff, explain_rollout
    from fleetplace.services.auditor.rollout_log import read_rollout_history
    from fleetplace.services.commands.output import table_console
    from fleetplace.services.commands.worker import _settings
    from fleetplace.services.rollout.listing import group_label
    from fleetplace.shared.bus.codec import DecodeLimits
    from fleetplace.shared.bus.errors import BusError
    from fleetplace.shared.bus.topics import Topics
    from fleetplace.shared.rollout import Instant

    key = _rollout_key(rollout)
    try:
        at_t = None if at is None else Instant.parse(at).to_datetime()
    except ValueError:
        typer.echo(f"error: --at: not an RFC 3339 time: {at!r}", err=True)
        raise typer.Exit(2) from None
    settings = _settings(bootstrap, prefix)
    limits = DecodeLimits.from_settings(settings)
    try:
        history = read_rollout_history(settings.kafka, Topics(settings.topic_prefix), limits=limits)
    except BusError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if history is None:
        typer.echo(f"error: the rollout topics do not exist under prefix {settings.topic_prefix!r}", err=True)
        raise typer.Exit(2)
    try:
        explanation = explain_rollout(history, key, at_t, limits)
    except NoRolloutDiff as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    data = explanation.to_json()
    if output is Output.JSON:
        sys.stdout.buffer.write(orjson.dumps(data) + b"\n")
        return
    console = table_console()
    record = data["record"]
    trigger = record["trigger"]
    console.rule(f"{key} seq {record['seq']}")
    console.print(
        f"record {record['record']} by {record['source'] or '?'}, evaluated {record['evaluatedAt']}, "
        f"trigger {trigger.get('kind')}:{trigger.get('key')}",
        highlight=False,
    )
    if data["deleted"]:
        console.print("the rollout was deleted: nothing to roll out")
    else:
        console.print(
            f"revision {data['revision']}  roll out now: {', '.join(data['clustersToRollout']) or '-'}  "
            f"complete: {str(data['complete']).lower()}  "
            f"maxFailureBreach: {str(data['maxFailureBreach']).lower()}  "
            f"next recheck: {data['nextRecheckAt'] or '-'}",
            highlight=False,
        )
    console.print(
        "[green]reproduces from the topics[/green]"
        if data["reproduced"]
        else f"[red]does not reproduce: {', '.join(data['differs'])} differ[/red] (run `fleetplace audit`)"
    )
    for placement in data["placements"]:
        if placement["error"]:
            console.print(f"placement {placement['name']}: [red]error[/red] {placement['error']}")
    if not data["clusters"]:
        return
    table = Table("placement", "cluster", "group", "status", "since", "soak end / deadline", "why")
    for c in data["clusters"]:
        table.add_row(
            c["placement"],
            c["cluster"],
            group_label(c["groupName"], c["groupIndex"]),
            c["status"],
            c["since"] or "",
            c["until"] or "",
            c["why"],
        )
    console.print(table)
