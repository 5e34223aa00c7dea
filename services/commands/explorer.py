"""`fleetplace explorer`: the decision history in a browser, live (services/explorer)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console

from fleetplace.services.auditor.history import HistoryError
from fleetplace.services.commands.worker import Prefix, _settings
from fleetplace.services.hub.api import HubError
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.settings import Settings


async def serve(
    settings: Settings, host: str, port: int, token: str | None, allowed_hosts: Sequence[str] = ()
) -> None:
    """Serve the explorer until cancelled (Ctrl-C), saying where."""
    from fleetplace.services.explorer import Explorer, TokenRequired

    try:
        explorer = Explorer(settings, host=host, port=port, token=token, allowed_hosts=allowed_hosts)
    except TokenRequired as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    async with explorer:
        typer.echo(f"fleetplace explorer: {explorer.url}/placements (Ctrl-C stops it)")
        await explorer.source  # runs until cancelled; raises what stopped the consumer


def explore_demo(console: Console, settings: Settings, port: int = 8090) -> None:
    """After `fleetplace demo --explore`'s acts: the explorer on the demo's topics until Ctrl-C."""
    console.print("\n[bold]Exploring the demo's decisions[/bold]: open the URL below; Ctrl-C stops it.")
    with contextlib.suppress(KeyboardInterrupt):
        try:
            asyncio.run(serve(settings, "127.0.0.1", port, None))
        except OSError:  # the port is taken: any free one
            asyncio.run(serve(settings, "127.0.0.1", 0, None))


def explorer_hint(settings: Settings, embedded: bool, kept: bool) -> str:
    """The command that explores what the demo just did."""
    if embedded or not kept:
        return "Explore these decisions in a browser: fleetplace demo --explore"
    return (
        "Explore these decisions in a browser: fleetplace explorer "
        f"--bootstrap {settings.kafka.bootstrap_servers} --prefix {settings.topic_prefix}"
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def explorer(
        bootstrap: Annotated[
            str | None,
            typer.Option(
                "--bootstrap", "-b", help="Kafka bootstrap servers (else $KAFKA_BOOTSTRAP_SERVERS)."
            ),
        ] = None,
        prefix: Prefix = None,
        host: Annotated[str, typer.Option("--host", help="Address to serve on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="Port to serve on (0: any).")] = 8090,
        token: Annotated[
            str | None,
            typer.Option(
                "--token",
                help="Required off loopback: Bearer token or ?token= once (else $FLEETPLACE_DEBUG_TOKEN).",
            ),
        ] = None,
        allow_host: Annotated[
            list[str] | None,
            typer.Option(
                "--allow-host",
                help="A Host name to answer besides loopback and --host (repeatable; "
                "else $FLEETPLACE_EXPLORER_HOSTS, comma-separated).",
            ),
        ] = None,
        hub_kubeconfig: Annotated[
            str | None,
            typer.Option(
                "--hub-kubeconfig",
                metavar="PATH",
                help="A hub's kubeconfig: placement pages show shadow mode's agreement with OCM "
                "(else $FLEETPLACE_EXPLORER_HUB_KUBECONFIG; none: no hub is asked).",
            ),
        ] = None,
    ) -> None:
        """A read-only web app over every placement's decisions, why, and how they changed; live."""
        settings = _settings(bootstrap, prefix, explorer_hub_kubeconfig=hub_kubeconfig)
        try:
            asyncio.run(serve(settings, host, port, token, allow_host or ()))
        except KeyboardInterrupt:
            pass
        except (HistoryError, BusError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(1) from None
        except HubError as e:
            typer.echo(f"error: the hub: {e}", err=True)
            raise typer.Exit(2) from None
