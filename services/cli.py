"""The `fleetplace` command: one entry point, one sub-command per job.

Each command group lives beside the service it drives and registers itself here.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Annotated

import typer

from fleetplace.services.commands.plain_help import PlainHelpGroup

app = typer.Typer(
    name="fleetplace",
    help="Event-driven placement reconciler on Kafka (OCM Placement + YuniKorn queue placement).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=PlainHelpGroup,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"fleetplace {version('fleetplace')}")
        except PackageNotFoundError:
            typer.echo("fleetplace (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
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
    from fleetplace.services.commands import taint  # taint

    taint.register(app)
    from fleetplace.services.queue_placer import cli as queues_cli

    queues_cli.register(app)
    from fleetplace.services.commands import audit as audit_commands  # audit, explain, what-if, export

    audit_commands.register(app)
    from fleetplace.services.commands import asyncapi  # docs asyncapi

    asyncapi.register(app)
    from fleetplace.services.commands import rollout as rollout_commands  # rollout simulate, status, report

    rollout_commands.register(app)
    from fleetplace.services.commands import explorer  # explorer

    explorer.register(app)
    from fleetplace.services.commands import scores  # scores preview, status

    scores.register(app)
    from fleetplace.services.commands import hub  # hub run

    hub.register(app)


_register()


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    """SIGTERM (what `kill`, `timeout` or a supervisor sends) stops a command as Ctrl-C does, so
    whatever Ctrl-C cleans up is cleaned up: the demo's embedded broker, the explorer it serves.
    Python's default ends the process at once and leaves child processes running. Workers put
    their own clean stop on both signals while they run (services/lifecycle.py)."""
    if callable(signal.getsignal(signal.SIGINT)):
        # delivered as a Ctrl-C is, to whichever handler has it (an event loop's included)
        signal.raise_signal(signal.SIGINT)
        return
    # Ctrl-C ignored (a job started in the background) or left to the system: stop all the same
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    # Logs go to stderr from the first line on, whatever the command: stdout is for results
    # (`audit --json`, `export`, `watch --json` are read by programs). Workers reconfigure
    # from their settings (level, JSON or console).
    from fleetplace.shared.logging import configure_logging

    configure_logging("warning", "console")
    app()


if __name__ == "__main__":
    main()
