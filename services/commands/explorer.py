"""`fleetplace explorer`: the decision history in a browser, live (services/explorer)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from fleetplace.services.auditor.history import HistoryError
from fleetplace.services.commands.worker import Prefix, _settings
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.settings import Settings


async def serve(settings: Settings, host: str, port: int, token: str | None) -> None:
    """Serve the explorer until cancelled (Ctrl-C), saying where."""
    from fleetplace.services.explorer import Explorer, TokenRequired

    try:
        explorer = Explorer(settings, host=host, port=port, token=token)
    except TokenRequired as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    async with explorer:
        typer.echo(f"fleetplace explorer: {explorer.url}/placements (Ctrl-C stops it)")
        await explorer.source  # runs until cancelled; raises what stopped the consumer


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
    ) -> None:
        """A read-only web app over every placement's decisions, why, and how they changed; live."""
        settings = _settings(bootstrap, prefix)
        try:
            asyncio.run(serve(settings, host, port, token))
        except KeyboardInterrupt:
            pass
        except (HistoryError, BusError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(1) from None
