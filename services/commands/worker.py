"""`fleetplace worker scheduler` and `fleetplace watch`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from fleetplace.services.commands.output import (
    Bootstrap,
    Output,
    Prefix,
    normalize_prefix,
    parse_output,
    write_json,
    write_yaml,
)
from fleetplace.services.http import HttpPortInUseError
from fleetplace.shared.api.rollouts import RolloutDiff
from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.topics import APP_PLACEMENTS, DEADLETTER, DECISIONS, ROLLOUT_DECISIONS, Topics
from fleetplace.shared.logging import configure_from_settings
from fleetplace.shared.settings import Settings, describe
from fleetplace.shared.wording import located

DEFAULTS = {name: info.default for name, info in Settings.model_fields.items()}

worker_app = typer.Typer(
    help="Run a worker in the foreground (stops cleanly on SIGTERM/SIGINT).", no_args_is_help=True
)


def environment_settings() -> Settings:
    """The settings from the environment, or exit 2 saying which variable is wrong and why (what
    every command prints, never a traceback)."""
    try:
        return Settings()
    except ValidationError as exc:
        typer.echo(f"error: invalid settings in the environment: {describe(exc)}", err=True)
        raise typer.Exit(2) from None


def _settings(bootstrap: str | None, prefix: str | None, **updates: Any) -> Settings:
    settings = environment_settings()
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
        changes["topic_prefix"] = normalize_prefix(prefix)
    return settings.model_copy(update=changes)


HttpPort = Annotated[
    int,
    typer.Option(
        "--http-port",
        envvar="FLEETPLACE_HTTP_PORT",
        metavar="PORT",
        help="Port of /healthz, /readyz, /metrics; 0 picks a free one.",
    ),
]
Clock = Annotated[
    str,
    typer.Option(
        "--clock",
        envvar="FLEETPLACE_CLOCK",
        metavar="wall|topic",
        help="Where time comes from: the wall clock, or the clock topic (replays, tests).",
    ),
]


def _group(envvar: str, workers: str) -> Any:
    """The --group option of a worker: the consumer group its instances share."""
    return typer.Option(
        "--group", envvar=envvar, metavar="GROUP", help=f"Consumer group of the {workers} instances."
    )


Instance = Annotated[
    str, typer.Option("--instance", metavar="NAME", help="Name of this instance (CloudEvents source).")
]


def _run(main: Any) -> None:
    """Run a worker; exit 2 for a setting to change (a taken port), 1 when the bus fails it."""
    try:
        asyncio.run(main)
    except HttpPortInUseError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    except BusError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


__all__ = ["Bootstrap", "Prefix", "register"]


@worker_app.command("scheduler")
def worker_scheduler(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    clock: Clock = DEFAULTS["clock"],
    http_port: HttpPort = DEFAULTS["http_port"],
    group: Annotated[str, _group("FLEETPLACE_SCHEDULER_GROUP_ID", "scheduler")] = DEFAULTS[
        "scheduler_group_id"
    ],
    instance: Instance = "scheduler",
) -> None:
    """Consume the fleet and placement topics; publish decision diffs."""
    from fleetplace.services.scheduler.worker import run_worker

    if clock not in ("wall", "topic"):
        typer.echo(f"error: --clock: expected wall or topic, got {clock!r}", err=True)
        raise typer.Exit(2)
    settings = _settings(bootstrap, prefix, clock=clock, http_port=http_port, scheduler_group_id=group)
    configure_from_settings(settings)
    _run(run_worker(settings, instance))


@worker_app.command("queues")
def worker_queues(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    http_port: HttpPort = DEFAULTS["http_port"],
    group: Annotated[str, _group("FLEETPLACE_QUEUE_PLACER_GROUP_ID", "queue-placer")] = DEFAULTS[
        "queue_placer_group_id"
    ],
    instance: Instance = "queues",
) -> None:
    """Consume queue configs and application submissions; publish queue placements."""
    from fleetplace.services.queue_placer.worker import run_queue_worker

    settings = _settings(bootstrap, prefix, http_port=http_port, queue_placer_group_id=group)
    configure_from_settings(settings)
    _run(run_queue_worker(settings, instance))


@worker_app.command("rollout")
def worker_rollout(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    clock: Clock = DEFAULTS["clock"],
    http_port: HttpPort = DEFAULTS["http_port"],
    group: Annotated[str, _group("FLEETPLACE_ROLLOUT_GROUP_ID", "rollout")] = DEFAULTS["rollout_group_id"],
    instance: Instance = "rollout",
) -> None:
    """Consume placement decisions, rollouts and deployers' reports; publish rollout diffs."""
    from fleetplace.services.rollout.worker import run_rollout_worker

    if clock not in ("wall", "topic"):
        typer.echo(f"error: --clock: expected wall or topic, got {clock!r}", err=True)
        raise typer.Exit(2)
    settings = _settings(bootstrap, prefix, clock=clock, http_port=http_port, rollout_group_id=group)
    configure_from_settings(settings)
    _run(run_rollout_worker(settings, instance))


@worker_app.command("scores")
def worker_scores(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    http_port: HttpPort = DEFAULTS["http_port"],
    group: Annotated[
        str,
        typer.Option(
            "--group",
            envvar="FLEETPLACE_SCORE_GROUP_ID",
            metavar="GROUP",
            help="Consumer group of the score worker instances.",
        ),
    ] = DEFAULTS["score_group_id"],
    instance: Instance = "scores",
) -> None:
    """Evaluate ScoreSources against Prometheus; publish AddOnPlacementScores (docs/scores.md)."""
    from fleetplace.services.scores.worker import run_score_worker

    settings = _settings(bootstrap, prefix, http_port=http_port, score_group_id=group)
    configure_from_settings(settings)
    _run(run_score_worker(settings, instance))


def describe_decision(value: Mapping[str, Any]) -> str:
    """One line per DecisionDiff: time, placement, seq, trigger, the change and the outcome. A
    deleted placement ends in `(deleted)`, a misconfigured one in `(misconfigured: why)`."""
    added = " ".join(f"+{c}" for c in value.get("added", []))
    removed = " ".join(f"-{c}" for c in value.get("removed", []))
    trig = value.get("trigger") or {}
    status = value.get("status")
    conditions = (status.get("conditions") or []) if isinstance(status, Mapping) else []
    misconfigured = next(
        (
            c
            for c in conditions
            if isinstance(c, Mapping)
            and c.get("type") == "PlacementMisconfigured"
            and c.get("status") == "True"
        ),
        None,
    )
    if value.get("deleted"):
        outcome = "(deleted)"
    elif misconfigured is not None:
        outcome = f"(misconfigured: {misconfigured.get('message') or misconfigured.get('reason')})"
    else:
        outcome = ",".join(value.get("decisions", [])) or "(none)"
    return (
        f"{value.get('evaluatedAt')} {value.get('placement')} seq={value.get('seq')} "
        f"[{trig.get('kind')}:{trig.get('key')}] {added} {removed} -> {outcome}"
    )


def describe_app_placement(value: Mapping[str, Any]) -> str:
    """One line per queue placement: the queue and the rule, or the rejection and its reason."""
    head = f"{value.get('evaluatedAt')} {value.get('applicationID')}"
    if value.get("rejected"):
        return f"{head} rejected: {value.get('reason')}: {value.get('detail')}"
    created = " (created)" if value.get("created") else ""
    return f"{head} -> {value.get('queue')} [{value.get('rule')}]{created}"


def describe_rollout_decision(value: Mapping[str, Any]) -> str:
    """One line per rollout diff: time, rollout, seq, revision, trigger, the change of the
    roll-out-now set and the set; then, in parentheses, what else the answer says: clusters timed
    out, a placement's error, a maxFailures breach, completion, the next recheck. A deleted rollout
    ends in `(deleted)`."""
    try:
        diff = RolloutDiff.model_validate(value)
    except ValidationError as e:
        return f"{value.get('rollout')} seq={value.get('seq')}: not a rollout diff ({located(e.errors()[0])})"
    added = " ".join(f"+{c}" for c in diff.added)
    removed = " ".join(f"-{c}" for c in diff.removed)
    outcome = "(deleted)" if diff.deleted else ",".join(diff.clusters) or "(none)"
    notes = [
        f"{p.name}: timed out {','.join(c.cluster_name for c in p.clusters_time_out)}"
        for p in diff.placements
        if p.clusters_time_out
    ]
    notes += [f"{p.name}: error: {p.error}" for p in diff.placements if p.error]
    if diff.max_failure_breach:
        notes.append("maxFailureBreach")
    if diff.complete:
        notes.append("complete")
    if diff.next_recheck_at:
        notes.append(f"recheck at {diff.next_recheck_at}")
    trigger = f"[{diff.trigger.get('kind')}:{diff.trigger.get('key')}]"
    line = f"{diff.evaluated_at} {diff.rollout} seq={diff.seq} {diff.revision} {trigger} {added} {removed} -> {outcome}"
    return f"{line} ({'; '.join(notes)})" if notes else line


def describe_dead_letter(value: Mapping[str, Any]) -> str:
    """One line per dead letter: where the record was read, its key and why it was rejected."""
    key = value.get("key") if value.get("key") is not None else f"(base64 {value.get('key_b64')})"
    return (
        f"{value.get('topic')}/{value.get('partition')}@{value.get('offset')} key={key}: {value.get('error')}"
    )


_WATCHED: dict[str, Callable[[Mapping[str, Any]], str]] = {
    DECISIONS: describe_decision,
    APP_PLACEMENTS: describe_app_placement,
    ROLLOUT_DECISIONS: describe_rollout_decision,
    DEADLETTER: describe_dead_letter,
}


def register(app: typer.Typer) -> None:
    app.add_typer(worker_app, name="worker")

    @app.command()
    def watch(
        topic: Annotated[
            str,
            typer.Option(
                "--topic",
                "-t",
                metavar="|".join(_WATCHED),
                help="What to follow: decision diffs, queue placements, rollout diffs, or dead letters "
                "(with the rejection reason).",
            ),
        ] = DECISIONS,
        placement: Annotated[
            str | None,
            typer.Option(
                "--placement",
                "--rollout",
                metavar="NS/NAME",
                help="Only this key: a placement (decisions) or a rollout (rollout-decisions).",
            ),
        ] = None,
        output: Annotated[
            str,
            typer.Option(
                "--output",
                "-o",
                metavar="table|json|yaml",
                help="One line per record (table), JSON Lines, or YAML documents.",
            ),
        ] = "table",
        bootstrap: Bootstrap = None,
        prefix: Prefix = None,
        follow: Annotated[
            bool, typer.Option("--follow/--no-follow", help="Keep watching after catching up.")
        ] = True,
    ) -> None:
        """Print records of a topic as they are published (history first): decision diffs by default."""
        if output == "text":  # the name this output had before `table`
            output = "table"
        out = parse_output(output)
        if topic not in _WATCHED:
            typer.echo(f"error: --topic: expected {', '.join(_WATCHED)}, got {topic!r}", err=True)
            raise typer.Exit(2)
        describe = _WATCHED[topic]
        settings = _settings(bootstrap, prefix)
        topics = Topics(settings.topic_prefix)

        async def main() -> None:
            async with BroadcastReader(settings.kafka, [topics.name(topic)]) as reader:
                while True:
                    batch = await reader.poll()
                    for record in batch.records:
                        if placement is not None and record.key != placement:
                            continue
                        value: dict[str, Any] | None = decode_object(record.value)
                        if value is None:
                            continue
                        if out is Output.JSON:
                            write_json(value)
                        elif out is Output.YAML:
                            write_yaml(value)
                        else:
                            sys.stdout.write(describe(value) + "\n")
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
