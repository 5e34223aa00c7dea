"""`fleetplace worker scheduler` and `fleetplace watch`."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated, Any

import orjson
import typer
from pydantic import ValidationError

from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.logging import configure_from_settings
from fleetplace.shared.settings import Settings

worker_app = typer.Typer(
    help="Run a worker in the foreground (stops cleanly on SIGTERM/SIGINT).", no_args_is_help=True
)


def _settings(bootstrap: str | None, prefix: str | None, **updates: Any) -> Settings:
    try:
        settings = Settings()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        typer.echo(f"error: invalid settings in the environment: {problems}", err=True)
        raise typer.Exit(2) from None
    kafka = settings.kafka
    if bootstrap:
        kafka = kafka.model_copy(update={"bootstrap_servers": bootstrap})
    if not kafka.bootstrap_servers:
        typer.echo(
            "error: no broker: set KAFKA_BOOTSTRAP_SERVERS or pass --bootstrap (`fleetplace broker` starts one)",
            err=True,
        )
        raise typer.Exit(2)
    changes: dict[str, Any] = {"kafka": kafka, **{k: v for k, v in updates.items() if v is not None}}
    if prefix is not None:
        changes["topic_prefix"] = prefix
    return settings.model_copy(update=changes)


Bootstrap = Annotated[
    str | None, typer.Option("--bootstrap", help="Kafka bootstrap servers (else $KAFKA_BOOTSTRAP_SERVERS).")
]
Prefix = Annotated[str | None, typer.Option("--prefix", help="Topic prefix (else $FLEETPLACE_TOPIC_PREFIX).")]


@worker_app.command("scheduler")
def worker_scheduler(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    clock: Annotated[str | None, typer.Option("--clock", help="wall (default) or topic.")] = None,
    http_port: Annotated[
        int | None, typer.Option("--http-port", help="Port of /healthz, /readyz, /metrics (0: any).")
    ] = None,
    group: Annotated[
        str | None, typer.Option("--group", help="Consumer group of the scheduler instances.")
    ] = None,
    instance: Annotated[
        str, typer.Option("--instance", help="Name of this instance (CloudEvents source).")
    ] = "scheduler",
) -> None:
    """Consume the fleet and placement topics; publish decision diffs."""
    from fleetplace.services.scheduler.worker import run_worker

    if clock not in (None, "wall", "topic"):
        typer.echo(f"error: --clock: expected wall or topic, got {clock!r}", err=True)
        raise typer.Exit(2)
    settings = _settings(bootstrap, prefix, clock=clock, http_port=http_port, scheduler_group_id=group)
    configure_from_settings(settings)
    try:
        asyncio.run(run_worker(settings, instance))
    except BusError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


@worker_app.command("queues")
def worker_queues(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    http_port: Annotated[
        int | None, typer.Option("--http-port", help="Port of /healthz, /readyz, /metrics (0: any).")
    ] = None,
    group: Annotated[
        str | None, typer.Option("--group", help="Consumer group of the queue-placer instances.")
    ] = None,
    instance: Annotated[
        str, typer.Option("--instance", help="Name of this instance (CloudEvents source).")
    ] = "queues",
) -> None:
    """Consume queue configs and application submissions; publish queue placements."""
    from fleetplace.services.queue_placer.worker import run_queue_worker

    settings = _settings(bootstrap, prefix, http_port=http_port, queue_placer_group_id=group)
    configure_from_settings(settings)
    try:
        asyncio.run(run_queue_worker(settings, instance))
    except BusError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


@worker_app.command("rollout")
def worker_rollout(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    clock: Annotated[str | None, typer.Option("--clock", help="wall (default) or topic.")] = None,
    http_port: Annotated[
        int | None, typer.Option("--http-port", help="Port of /healthz, /readyz, /metrics (0: any).")
    ] = None,
    group: Annotated[
        str | None, typer.Option("--group", help="Consumer group of the rollout instances.")
    ] = None,
    instance: Annotated[
        str, typer.Option("--instance", help="Name of this instance (CloudEvents source).")
    ] = "rollout",
) -> None:
    """Consume placement decisions, rollouts and deployers' reports; publish rollout diffs."""
    from fleetplace.services.rollout.worker import run_rollout_worker

    if clock not in (None, "wall", "topic"):
        typer.echo(f"error: --clock: expected wall or topic, got {clock!r}", err=True)
        raise typer.Exit(2)
    settings = _settings(bootstrap, prefix, clock=clock, http_port=http_port, rollout_group_id=group)
    configure_from_settings(settings)
    try:
        asyncio.run(run_rollout_worker(settings, instance))
    except BusError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


def register(app: typer.Typer) -> None:
    app.add_typer(worker_app, name="worker")

    @app.command()
    def watch(
        placement: Annotated[str | None, typer.Option("--placement", help="Only this NS/NAME.")] = None,
        output: Annotated[str, typer.Option("--output", "-o", help="text or json.")] = "text",
        bootstrap: Bootstrap = None,
        prefix: Prefix = None,
        follow: Annotated[
            bool, typer.Option("--follow/--no-follow", help="Keep watching after catching up.")
        ] = True,
    ) -> None:
        """Print decision diffs as they are published (history first)."""
        settings = _settings(bootstrap, prefix)
        topics = Topics(settings.topic_prefix)

        async def main() -> None:
            async with BroadcastReader(settings.kafka, [topics.decisions]) as reader:
                while True:
                    batch = await reader.poll()
                    for record in batch.records:
                        if placement is not None and record.key != placement:
                            continue
                        value: dict[str, Any] | None = decode_object(record.value)
                        if value is None:
                            continue
                        if output == "json":
                            sys.stdout.buffer.write(orjson.dumps(value) + b"\n")
                        else:
                            added = " ".join(f"+{c}" for c in value.get("added", []))
                            removed = " ".join(f"-{c}" for c in value.get("removed", []))
                            trig = value.get("trigger") or {}
                            sys.stdout.write(
                                f"{value.get('evaluatedAt')} {value.get('placement')} seq={value.get('seq')} "
                                f"[{trig.get('kind')}:{trig.get('key')}] {added} {removed} "
                                f"-> {','.join(value.get('decisions', [])) or '(none)'}\n"
                            )
                        sys.stdout.flush()
                    if batch.caught_up and not follow:
                        return

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            pass
        except BusError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(1) from None
