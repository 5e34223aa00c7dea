"""Bus commands: `fleetplace publish`, `fleetplace topics create|list`, `fleetplace broker`."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections import Counter
from types import FrameType
from typing import Annotated

import orjson
import typer
from pydantic import ValidationError
from rich.table import Table

from fleetplace.services.commands.output import (
    Bootstrap,
    Files,
    Prefix,
    ValidateOption,
    normalize_prefix,
    paragraphs,
    progress,
    table_console,
    write_yaml,
)
from fleetplace.shared.api.objects import Validation
from fleetplace.shared.bus.broker import MEMORY_STORAGE, EmbeddedBroker
from fleetplace.shared.bus.errors import BusError, TopicLayoutError
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.publish import InputKind, plan_files, to_outgoing
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import (
    CATALOGUE,
    Topics,
    TopicState,
    TopicStatus,
    describe_catalogue,
    ensure_topics,
)
from fleetplace.shared.settings import KafkaSettings, Settings, describe

BootstrapOption = Bootstrap
PrefixOption = Prefix


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise _fail(f"invalid settings in the environment: {describe(exc)}", 2) from None


def _connection(bootstrap: str | None, prefix: str | None) -> tuple[Settings, KafkaSettings, Topics]:
    settings = _settings()
    kafka = settings.kafka
    if bootstrap:
        kafka = kafka.model_copy(update={"bootstrap_servers": bootstrap})
    if not kafka.bootstrap_servers:
        raise _fail(
            "no broker: set KAFKA_BOOTSTRAP_SERVERS or pass --bootstrap (`fleetplace broker` starts a local one)",
            2,
        )
    return (
        settings,
        kafka,
        Topics(settings.topic_prefix if prefix is None else normalize_prefix(prefix) or ""),
    )


# records per send_all call: small enough for a progress bar to move on a large publish
_PUBLISH_CHUNK = 2_000


async def publish_records(kafka: KafkaSettings, records: list[OutgoingRecord], topics: Topics) -> None:
    needed = {r.topic for r in records}
    statuses = await describe_catalogue(kafka, topics)
    missing = sorted(s.topic for s in statuses if s.topic in needed and s.state is TopicState.MISSING)
    if missing:
        # Sending would make the broker auto-create them with its default partition count.
        raise TopicLayoutError(
            f"topics do not exist: {', '.join(missing)}; run `fleetplace topics create` first"
        )
    producer = make_producer(kafka, linger_ms=20)
    await start_client(producer)
    try:
        with progress("publishing", total=len(records)) as advance:
            for start in range(0, len(records), _PUBLISH_CHUNK):
                chunk = records[start : start + _PUBLISH_CHUNK]
                await send_all(producer, chunk)
                advance(len(chunk))
    finally:
        await producer.stop()


def _status_table(statuses: list[TopicStatus], title: str) -> Table:
    table = Table(title=title)
    table.add_column("topic", no_wrap=True)
    for column in ("kind", "partitions", "cleanup.policy", "state"):
        table.add_column(column)
    for s in statuses:
        partitions = str(s.partitions) if s.partitions is not None else "-"
        if s.state is TopicState.MISMATCH:
            partitions += f" (planned {s.planned_partitions})"
        table.add_row(s.topic, s.spec.kind.value, partitions, s.spec.config["cleanup.policy"], s.state.value)
    return table


def _status_json(statuses: list[TopicStatus]) -> str:
    return orjson.dumps(
        [
            {
                "topic": s.topic,
                "name": s.spec.name,
                "kind": s.spec.kind.value,
                "key": s.spec.key,
                "partitions": s.partitions,
                "planned_partitions": s.planned_partitions,
                "config": s.spec.config,
                "state": s.state.value,
            }
            for s in statuses
        ],
        option=orjson.OPT_INDENT_2,
    ).decode()


def register(app: typer.Typer) -> None:
    topics_app = typer.Typer(help="Create and list the topic catalogue.", no_args_is_help=True)
    app.add_typer(topics_app, name="topics")

    @app.command(
        help=paragraphs("""Send OCM objects, taints, YuniKorn configs or applications to their topics, keyed as the contract says.

        ManagedCluster → clusters; AddOnPlacementScore → scores; ManagedClusterSet → clustersets;
        ManagedClusterSetBinding → clustersetbindings; Placement → placements; ClusterTaints
        (apiVersion fleetplace.dev/v1alpha1, metadata.name = the cluster, spec.taints) → taints; a
        YuniKorn config (`partitions:` or a ConfigMap with queues.yaml) → queue-configs, one record
        per partition; with --kind application, each document → applications.

        Every document is checked first, exactly as the scheduler worker admits it (the API
        server's defaults and validation), and unknown fields, unknown apiVersions and duplicated
        YAML keys are errors unless --validate says otherwise. One bad document means nothing is
        sent (exit 2), and every bad file, document and field is named.""")
    )
    def publish(
        paths: Annotated[
            list[str] | None,
            typer.Argument(
                help="YAML/JSON/JSON Lines files, directories, or - for stdin.",
                metavar="PATH",
                show_default=False,
            ),
        ] = None,
        files: Files = None,
        delete: Annotated[
            bool, typer.Option("--delete", help="Send tombstones (deletes) for these objects.")
        ] = False,
        kind: Annotated[
            InputKind,
            typer.Option(
                "--kind",
                help="auto: route by each document's kind; application / queue-config: every document is one.",
            ),
        ] = InputKind.AUTO,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Check and print what would be sent; send nothing.")
        ] = False,
        validate: ValidateOption = None,
        bootstrap: BootstrapOption = None,
        prefix: PrefixOption = None,
    ) -> None:
        validation = Validation(validate) if validate in tuple(Validation) else None
        if validate is not None and validation is None:
            raise _fail(f"--validate: expected strict, warn or ignore, got {validate!r}", 2)
        wanted = [*(paths or []), *(files or [])]
        if not wanted:
            raise _fail("give at least one PATH or -f FILE (- for stdin)", 2)

        def warn(message: str) -> None:
            typer.echo(f"warning: {message}", err=True)

        strictness = validation or Validation.STRICT
        try:
            with progress("reading") as advance:
                planned = plan_files(
                    wanted, kind, validate=not delete, validation=strictness, warn=warn, progress=advance
                )
        except BusError as exc:
            raise _fail(str(exc), 2) from None
        if dry_run:
            topics = Topics(_settings().topic_prefix if prefix is None else normalize_prefix(prefix) or "")
            for record in to_outgoing(planned, topics, delete=delete):
                typer.echo(
                    f"{record.topic}\t{record.key!s}\t{'tombstone' if record.value is None else 'upsert'}"
                )
            return
        _, kafka, topics = _connection(bootstrap, prefix)
        records = to_outgoing(planned, topics, delete=delete)
        if not records:
            typer.echo("nothing to publish", err=True)
            return
        try:
            asyncio.run(publish_records(kafka, records, topics))
        except BusError as exc:
            raise _fail(str(exc)) from None
        counts = Counter(topics.unprefixed(r.topic) for r in records)
        what = "tombstones" if delete else "records"
        detail = ", ".join(f"{topic} {n}" for topic, n in sorted(counts.items()))
        typer.echo(f"published {len(records)} {what}: {detail}")

    @topics_app.command("create")
    def topics_create(
        partitions: Annotated[
            int | None,
            typer.Option(
                "--partitions",
                min=1,
                help="Partitions of the partitioned work topics (placements, decisions, placement-decisions, "
                "applications, app-placements; default 12). Broadcast topics keep their counts.",
            ),
        ] = None,
        replication_factor: Annotated[
            int | None,
            typer.Option(
                "--replication-factor", min=1, help="Default: $FLEETPLACE_TOPIC_REPLICATION_FACTOR or 1."
            ),
        ] = None,
        output: Annotated[
            str, typer.Option("--output", "-o", metavar="table|json|yaml", help="Table, JSON or YAML.")
        ] = "table",
        bootstrap: BootstrapOption = None,
        prefix: PrefixOption = None,
    ) -> None:
        """Create the catalogue's topics that do not exist yet (idempotent)."""
        settings, kafka, topics = _connection(bootstrap, prefix)
        try:
            statuses = asyncio.run(
                ensure_topics(
                    kafka,
                    topics,
                    work_partitions=partitions,
                    replication_factor=replication_factor or settings.topic_replication_factor,
                    compaction=settings.compaction(),
                )
            )
        except BusError as exc:
            raise _fail(str(exc)) from None
        _print_statuses(statuses, output, f"topics with prefix {topics.prefix!r}")

    @topics_app.command("list")
    def topics_list(
        output: Annotated[
            str, typer.Option("--output", "-o", metavar="table|json|yaml", help="Table, JSON or YAML.")
        ] = "table",
        bootstrap: BootstrapOption = None,
        prefix: PrefixOption = None,
    ) -> None:
        """Show the catalogue and what exists on the broker (creates nothing)."""
        _, kafka, topics = _connection(bootstrap, prefix)
        try:
            statuses = asyncio.run(describe_catalogue(kafka, topics))
        except BusError as exc:
            raise _fail(str(exc)) from None
        _print_statuses(statuses, output, f"topics with prefix {topics.prefix!r}")

    @app.command()
    def broker(
        port: Annotated[
            int | None, typer.Option("--port", min=1, max=65535, help="Default: a free port.")
        ] = None,
        storage: Annotated[
            str, typer.Option("--storage", help="Tansu storage URL: memory://tansu/ or s3://BUCKET/.")
        ] = MEMORY_STORAGE,
        create_topics: Annotated[
            bool, typer.Option("--create-topics", help="Create the topic catalogue once the broker is up.")
        ] = False,
        prefix: PrefixOption = None,
    ) -> None:
        """Run the embedded Kafka-protocol broker (Tansu) on 127.0.0.1 until Ctrl-C or SIGTERM.

        Prints the bootstrap address on the first line of stdout.
        """
        stop = threading.Event()

        def on_signal(_signum: int, _frame: FrameType | None) -> None:
            stop.set()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        embedded = EmbeddedBroker(port=port, storage=storage)
        try:
            try:
                embedded.start()
            except BusError as exc:
                raise _fail(str(exc)) from None
            typer.echo(embedded.bootstrap)
            sys.stdout.flush()
            typer.echo(
                f"broker pid {embedded.pid} ready in {embedded.start_seconds or 0:.3f} s; "
                f"export KAFKA_BOOTSTRAP_SERVERS={embedded.bootstrap}; Ctrl-C stops it",
                err=True,
            )
            if create_topics:
                topics = Topics(
                    _settings().topic_prefix if prefix is None else normalize_prefix(prefix) or ""
                )
                try:
                    asyncio.run(ensure_topics(embedded.bootstrap, topics))
                except BusError as exc:
                    raise _fail(str(exc)) from None
                typer.echo(f"created {len(CATALOGUE)} topics with prefix {topics.prefix!r}", err=True)
            while not stop.wait(0.5):
                if not embedded.running:
                    raise _fail("broker exited unexpectedly:\n" + "\n".join(embedded.log_tail()))
        finally:
            status = embedded.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        typer.echo(f"broker stopped (status {status})", err=True)


def _print_statuses(statuses: list[TopicStatus], output: str, title: str) -> None:
    if output == "json":
        typer.echo(_status_json(statuses))
    elif output == "yaml":
        write_yaml(orjson.loads(_status_json(statuses)))
    elif output == "table":
        table_console().print(_status_table(statuses, title))
    else:
        raise _fail(f"--output: expected table, json or yaml, got {output!r}", 2)
    for s in statuses:
        if s.state is TopicState.MISMATCH:
            typer.echo(
                f"warning: {s.topic} has {s.partitions} partitions, planned {s.planned_partitions}", err=True
            )
