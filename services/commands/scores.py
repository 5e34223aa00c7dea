"""`fleetplace scores preview` and `fleetplace scores status`: score sources from the terminal.

`preview` evaluates sources once against a Prometheus and prints the AddOnPlacementScores the
score worker would publish, without the bus (`-o json|yaml` gives the objects themselves,
ready for `fleetplace publish -`). `status` reads the score worker's status topic (and the
sources on `score-sources`, so a source no worker has evaluated yet is listed too) and prints
where each source stands: last evaluation, last success, last error, clusters scored.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from fleetplace.services.commands.output import (
    Bootstrap,
    Output,
    Prefix,
    parse_output,
    table_console,
    write_json,
    write_yaml,
)

scores_app = typer.Typer(
    name="scores",
    help="Score sources: PromQL queries that become AddOnPlacementScores (docs/scores.md).",
    no_args_is_help=True,
)

OutputOption = Annotated[
    str,
    typer.Option("--output", "-o", metavar="table|json|yaml", help="A table, JSON Lines or YAML documents."),
]


def register(app: typer.Typer) -> None:
    app.add_typer(scores_app, name="scores")


@scores_app.command("preview")
def preview(
    paths: Annotated[
        list[str], typer.Argument(metavar="SOURCE.yaml", help="Files with ScoreSource documents.")
    ],
    prometheus: Annotated[
        str | None,
        typer.Option(
            "--prometheus",
            metavar="URL",
            help="The Prometheus to ask (default: each source's own `spec.prometheus`).",
        ),
    ] = None,
    output: OutputOption = "table",
) -> None:
    """Evaluate sources once and print the scores the worker would publish; nothing is sent.

    Exit 1 when an evaluation fails (the reason is printed), 2 when a file is not a ScoreSource
    or a FLEETPLACE_* setting is invalid."""
    import aiohttp

    from fleetplace.services.commands.worker import environment_settings
    from fleetplace.services.scores.prometheus import Evaluation, evaluate
    from fleetplace.shared.api.admission import read_score_source
    from fleetplace.shared.api.objects import ObjectError
    from fleetplace.shared.api.score_sources import ScoreSource
    from fleetplace.shared.bus.publish import PublishInputError, load_documents
    from fleetplace.shared.scoring import plan_scores

    out = parse_output(output)
    endpoints = environment_settings().prometheus_endpoints
    if prometheus is not None and not prometheus.startswith(("http://", "https://")):
        typer.echo(f"error: --prometheus: expected an http:// or https:// URL, got {prometheus!r}", err=True)
        raise typer.Exit(2)
    sources: list[tuple[str, ScoreSource]] = []
    problems: list[str] = []
    try:
        documents = load_documents(paths)
    except PublishInputError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    for doc in documents:
        kind = doc.body.get("kind") if isinstance(doc.body, Mapping) else None
        if kind != "ScoreSource":
            problems.append(f"{doc.where}: expected kind ScoreSource, got {kind!r}")
            continue
        try:
            sources.append((doc.where, read_score_source(doc.body, doc.where)))
        except ObjectError as e:
            problems.append(str(e))
    if problems or not sources:
        for problem in problems or [f"{', '.join(paths)}: no ScoreSource documents"]:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)

    async def run() -> list[Evaluation]:
        async with aiohttp.ClientSession() as session:
            return list(
                await asyncio.gather(
                    *(
                        evaluate(session, s, datetime.now(UTC), endpoints=endpoints, override=prometheus)
                        for _, s in sources
                    )
                )
            )

    failed = False
    console = table_console()
    for (where, source), evaluation in zip(sources, asyncio.run(run()), strict=True):
        if evaluation.error is not None:
            failed = True
            typer.echo(
                f"error: {where}: ScoreSource {source.key!r}: {evaluation.error.reason}: {evaluation.error.message}",
                err=True,
            )
            continue
        records = plan_scores(source, evaluation.scores, {}, evaluation.at)
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(evaluation.skipped.items()))
        if out is Output.TABLE:
            from rich.table import Table

            spec = source.spec
            table = Table("cluster", "value", f"{spec.score.resource}/{spec.score.name}", "validUntil")
            for record in records:
                value = evaluation.values[record.cluster]
                table.add_row(
                    record.cluster,
                    f"{value:g}",
                    str(evaluation.scores[record.cluster]),
                    record.value["status"]["validUntil"],
                )
            console.print(
                f"{source.key}: {len(records)} clusters scored" + (f"; skipped: {skipped}" if skipped else "")
            )
            console.print(table)
        else:
            if skipped:
                typer.echo(f"{where}: ScoreSource {source.key!r}: skipped series: {skipped}", err=True)
            for record in records:
                (write_json if out is Output.JSON else write_yaml)(record.value)
    sys.stdout.flush()
    if failed:
        raise typer.Exit(1)


@scores_app.command("status")
def status(
    source: Annotated[
        str | None, typer.Argument(metavar="[NAMESPACE/NAME]", help="Only this source.")
    ] = None,
    output: OutputOption = "table",
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
) -> None:
    """Where each score source stands: last evaluation, last success, last error, clusters scored.

    Read from the score worker's status topic; a source no worker has evaluated yet says so."""
    from fleetplace.services.commands.worker import _settings
    from fleetplace.shared.bus.codec import decode_object
    from fleetplace.shared.bus.errors import BusError
    from fleetplace.shared.bus.kafka import BroadcastReader
    from fleetplace.shared.bus.topics import Topics

    out = parse_output(output)
    if source is not None and (len(source.split("/")) != 2 or not all(source.split("/"))):
        typer.echo(f"error: expected NAMESPACE/NAME, got {source!r}", err=True)
        raise typer.Exit(2)
    settings = _settings(bootstrap, prefix)
    topics = Topics(settings.topic_prefix)

    async def read() -> tuple[dict[str, dict[str, Any]], set[str]]:
        statuses: dict[str, dict[str, Any]] = {}
        defined: set[str] = set()
        async with BroadcastReader(
            settings.kafka, [topics.score_sources, topics.score_source_status]
        ) as reader:
            for record in await reader.read_to_end():
                if record.key is None:
                    continue
                value = decode_object(record.value)
                if record.topic == topics.score_sources:
                    (defined.add if value is not None else defined.discard)(record.key)
                elif value is None:
                    statuses.pop(record.key, None)
                else:
                    statuses[record.key] = value
        return statuses, defined

    try:
        statuses, defined = asyncio.run(read())
    except BusError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    keys = sorted(defined | set(statuses))
    if source is not None:
        if source not in keys:
            typer.echo(f"error: no score source {source!r} on {topics.score_sources}", err=True)
            raise typer.Exit(1)
        keys = [source]
    rows = [statuses.get(k) or {"source": k, "evaluatedAt": None} for k in keys]
    if out is Output.JSON:
        for row in rows:
            write_json(row)
        return
    if out is Output.YAML:
        for row in rows:
            write_yaml(row)
        return
    if not rows:
        typer.echo(f"no score sources on {topics.score_sources}")
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table("source", "state", "last evaluation", "last success", "clusters", "published", "last error")
    for row in rows:
        error = row.get("lastError")
        if row.get("evaluatedAt") is None:
            state = "not evaluated yet (is a score worker running?)"
        else:
            state = "ok" if row.get("healthy") else "failing"
        table.add_row(
            escape(str(row["source"])),
            state,
            row.get("evaluatedAt") or "-",
            row.get("lastSuccessAt") or "-",
            str(row.get("clustersScored", "-")),
            str(row.get("published", "-")),
            escape(f"{error['at']} {error['reason']}: {error['message']}") if error else "-",
        )
    table_console().print(table)
