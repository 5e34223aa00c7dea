"""The `fleetplace` command: one entry point, one sub-command per job.

Each command group lives beside the service it drives and registers itself here.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="fleetplace",
    help="Event-driven placement reconciler on Kafka (OCM Placement + YuniKorn queue placement).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """fleetplace: OCM cluster placement and YuniKorn queue placement on Kafka."""


def _register() -> None:
    from fleetplace.services.commands import simulate

    simulate.register(app)
    from fleetplace.services.commands import bus as bus_commands  # publish, topics, broker

    bus_commands.register(app)
    from fleetplace.services.commands import worker as worker_commands  # worker scheduler, watch

    worker_commands.register(app)
    from fleetplace.services.commands import demo

    demo.register(app)
    from fleetplace.services.queue_placer import cli as queues_cli

    queues_cli.register(app)
    from fleetplace.services.commands import audit as audit_commands  # audit, explain, what-if, export

    audit_commands.register(app)
    from fleetplace.services.commands import asyncapi  # docs asyncapi

    asyncapi.register(app)
    from fleetplace.services.commands import explorer  # explorer

    explorer.register(app)


_register()


def main() -> None:
    # Logs go to stderr from the first line on, whatever the command: stdout is for results
    # (`audit --json`, `export`, `watch --json` are read by programs). Workers reconfigure
    # from their settings (level, JSON or console).
    from fleetplace.shared.logging import configure_logging

    configure_logging("warning", "console")
    app()


if __name__ == "__main__":
    main()
