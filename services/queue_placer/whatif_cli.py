"""`fleetplace queues what-if`: what a new queue config would do to the applications already placed.

    fleetplace queues what-if --config new.yaml [--partition P] [--since T | --last N] [-o json]
    fleetplace queues what-if --config new.yaml --apps placements.jsonl
    fleetplace queues what-if --config new.yaml --apps apps.jsonl --current queues.yaml

From the bus it reads `app-placements` (each record carries the submission and its answer);
offline, `--apps` reads the same records as JSON Lines, or plain submissions whose answers are
placed afresh under `--current`. Exit 0 when no answer changes, 1 when one does, 2 when the
config does not load (every problem, with its path) or the input is bad.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic import TypeAdapter, ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fleetplace.services.auditor.history import History, read_topics
from fleetplace.services.auditor.queue_whatif import (
    QueueWhatIf,
    RecordedApplication,
    recorded_applications,
    recorded_from_lines,
    what_if_queues,
)
from fleetplace.services.commands.output import (
    Bootstrap,
    Output,
    Prefix,
    parse_output,
    table_console,
    write_json,
    write_yaml,
)
from fleetplace.services.commands.worker import _settings
from fleetplace.services.queue_placer.files import fail, load_config, read_source
from fleetplace.shared.bus.codec import DecodeLimits
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.topics import APP_PLACEMENTS, Topics, TopicState, describe_catalogue
from fleetplace.shared.queueing import QueueingConfig

_TIME: TypeAdapter[datetime] = TypeAdapter(datetime)
Update = Callable[[str, int, int], None]


@contextmanager
def _progress() -> Iterator[Update]:
    """A rich progress bar per stage on stderr when it is a terminal; yields `update(stage, done, total)`."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda stage, done, total: None
        return
    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        t = _TIME.validate_python(text)
    except ValidationError:
        fail([f"error: --since: not an RFC 3339 time: {text!r}"])
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _from_file(path: str, current: QueueingConfig | None) -> list[RecordedApplication]:
    source = read_source(path)
    lines: list[tuple[str, dict[str, Any]]] = []
    errors: list[str] = []
    for number, line in enumerate(source.text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source.label}:{number}"
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            errors.append(f"error: {where}: not valid JSON: {e}")
            continue
        if not isinstance(value, dict):
            errors.append(
                f"error: {where}: expected a JSON object (an app-placements record or a submission)"
            )
            continue
        lines.append((where, value))
    if errors:
        fail(errors)
    try:
        return recorded_from_lines(lines, current)
    except ValueError as e:
        fail([f"error: {e}"])


def _from_bus(
    bootstrap: str | None, prefix: str | None, update: Update
) -> tuple[list[RecordedApplication], list[str]]:
    settings = _settings(bootstrap, prefix)
    topics = Topics(settings.topic_prefix)
    limits = DecodeLimits.from_settings(settings)

    async def read() -> History:
        statuses = {s.spec.name: s for s in await describe_catalogue(settings.kafka, topics)}
        if statuses[APP_PLACEMENTS].state is TopicState.MISSING:
            fail([f"error: topic {topics.name(APP_PLACEMENTS)} does not exist: nothing was placed yet"])
        history = History()
        await read_topics(
            settings.kafka,
            topics,
            [APP_PLACEMENTS],
            history,
            limits=limits,
            progress=lambda done, total: update("reading", done, total),
        )
        return history

    try:
        history = asyncio.run(read())
    except BusError as e:
        fail([f"error: {e}"])
    recorded, unreadable = recorded_applications(history, limits)
    for problem in unreadable:
        typer.echo(f"warning: not evaluated: {problem}", err=True)
    return recorded, unreadable


def _answer_text(answer: Any) -> str:
    return f"rejected ({answer.reason})" if answer.rejected else str(answer.queue)


def _print(result: QueueWhatIf) -> None:
    console = table_console()
    if result.changes:
        table = Table("application", "user", "before", "rule before", "after", "rule after")
        for c in result.changes:
            table.add_row(
                c.application,
                c.user,
                _answer_text(c.before),
                c.before.rule_label,
                f"[yellow]{_answer_text(c.after)}[/yellow]",
                c.after.rule_label,
            )
        console.print(table)
    for c in result.changes:
        answer = c.after if c.after.rejected else c.before if c.before.rejected else None
        if answer is not None:
            when = "now" if answer is c.after else "before"
            console.print(f"{c.application} ({c.user}) rejected {when}: {answer.detail}", markup=False)
            for line in answer.why:
                console.print(f"  {line}", markup=False)
    s = result.summary()
    console.print(
        f"{s['applications']} applications: {s['unchanged']} unchanged, {s['moved']} moved, "
        f"{s['newlyRejected']} newly rejected, {s['newlyAccepted']} newly accepted"
    )
    if result.queues_created:
        shown = ", ".join(q if p == "default" else f"{p}:{q}" for p, q in result.queues_created)
        count = len(result.queues_created)
        console.print(f"{count} {'queue' if count == 1 else 'queues'} would be created: {shown}")
    if result.not_evaluated:
        console.print(
            f"{result.not_evaluated} applications of partitions the config does not configure: not evaluated"
        )


def register(queues: typer.Typer) -> None:
    queues.command("what-if")(what_if)


def what_if(
    config: Annotated[
        Path,
        typer.Option(
            "--config", help="The new partition config (YuniKorn YAML or JSON).", show_default=False
        ),
    ],
    partition: Annotated[
        str | None, typer.Option("--partition", help="Only this partition of the config.", show_default=False)
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Report applications placed at or after this RFC 3339 time.", show_default=False
        ),
    ] = None,
    last: Annotated[
        int | None,
        typer.Option("--last", min=1, help="Report the last N applications placed.", show_default=False),
    ] = None,
    output: Annotated[
        str, typer.Option("--output", "-o", metavar="table|json|yaml", help="A table, JSON, or YAML.")
    ] = "table",
    apps_file: Annotated[
        str | None,
        typer.Option(
            "--apps",
            help="Offline: app-placements records or submissions as JSON Lines ('-' reads stdin).",
            show_default=False,
        ),
    ] = None,
    current: Annotated[
        Path | None,
        typer.Option(
            "--current",
            help="With --apps of plain submissions: the config they were placed under.",
            show_default=False,
        ),
    ] = None,
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
) -> None:
    """Place the recorded applications again under a new config; list whose answer changes (exit 1 if any)."""
    out = parse_output(output)
    if since is not None and last is not None:
        fail(["error: give --since or --last, not both"])
    if current is not None and apps_file is None:
        fail(["error: --current goes with --apps: the bus has the recorded answers"])
    if apps_file is not None and (bootstrap is not None or prefix is not None):
        fail(["error: --apps reads a file: --bootstrap and --prefix are for reading the bus"])
    since_t = _since(since)
    new = load_config(config)  # exit 2, every problem with its path, before anything is read
    if partition is not None and partition not in new.partitions:
        fail(
            [
                f"error: --partition: {config} does not configure partition {partition!r} "
                f"(it has {', '.join(sorted(new.partitions))})"
            ]
        )
    with _progress() as update:
        unreadable: list[str] = []
        if apps_file is not None:
            recorded = _from_file(apps_file, load_config(current) if current is not None else None)
        else:
            recorded, unreadable = _from_bus(bootstrap, prefix, update)
        if since_t is not None and any(r.evaluated_at is None for r in recorded):
            fail(["error: --since: these applications carry no evaluatedAt (plain submissions)"])
        result = what_if_queues(
            recorded,
            new,
            partition=partition,
            since=since_t,
            last=last,
            progress=lambda done, total: update("placing", done, total),
        )
        result.unreadable = unreadable
    if out is Output.TABLE:
        _print(result)
    elif out is Output.YAML:
        write_yaml(result.to_json())
        sys.stdout.flush()
    else:
        write_json(result.to_json())
    if result.changed:
        raise typer.Exit(1)
