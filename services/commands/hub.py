"""`fleetplace hub`: the bridge between a hub's API server and the topics (docs/hub.md)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated

import typer

from fleetplace.services.commands.output import Bootstrap, Prefix
from fleetplace.services.commands.worker import DEFAULTS, HttpPort, Instance, _run, _settings
from fleetplace.shared.logging import configure_from_settings

hub_app = typer.Typer(
    help="Bridge a hub's API server and the topics: `fleetplace hub run` copies the hub's OCM objects "
    "and ClusterProfiles onto their topics (docs/hub.md).",
    no_args_is_help=True,
)


Kubeconfig = Annotated[
    str,
    typer.Option(
        "--kubeconfig",
        envvar="FLEETPLACE_HUB_KUBECONFIG",
        metavar="PATH",
        help="The hub's kubeconfig; default $KUBECONFIG, ~/.kube/config, else the pod's ServiceAccount.",
    ),
]


@contextlib.contextmanager
def _hub_errors() -> Iterator[None]:
    """A hub that cannot be reached, read or written: one line naming it, exit 2."""
    from fleetplace.services.hub.api import HubError

    try:
        yield
    except HubError as error:
        typer.echo(f"error: the hub: {error}", err=True)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    app.add_typer(hub_app, name="hub")


@hub_app.command("run")
def hub_run(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    http_port: HttpPort = DEFAULTS["http_port"],
    kubeconfig: Kubeconfig = DEFAULTS["hub_kubeconfig"],
    lease_namespace: Annotated[
        str,
        typer.Option(
            "--lease-namespace",
            envvar="FLEETPLACE_HUB_LEASE_NAMESPACE",
            metavar="NAMESPACE",
            help="Namespace of the Lease that keeps one bridge active per hub; default the pod's, else default.",
        ),
    ] = DEFAULTS["hub_lease_namespace"],
    instance: Instance = "hub",
) -> None:
    """Watch ManagedClusters, sets, bindings, Placements, AddOnPlacementScores and ClusterProfiles
    on the hub and publish each to its topic (a deletion as a tombstone)."""
    from fleetplace.services.hub.worker import run_hub_bridge

    settings = _settings(
        bootstrap, prefix, http_port=http_port, hub_kubeconfig=kubeconfig, hub_lease_namespace=lease_namespace
    )
    configure_from_settings(settings)
    with _hub_errors():
        _run(run_hub_bridge(settings, instance))


@hub_app.command("status")
def hub_status(
    bootstrap: Bootstrap = None,
    prefix: Prefix = None,
    kubeconfig: Kubeconfig = DEFAULTS["hub_kubeconfig"],
) -> None:
    """Shadow mode's agreement per placement: agreeing, disagreeing (each cluster only one side
    chose, with fleetplace's explanation) or not comparable (and why)."""
    import asyncio

    from fleetplace.services.hub.agreement import render_status
    from fleetplace.services.hub.status import agreements
    from fleetplace.services.hub.worker import connect
    from fleetplace.shared.bus.codec import DecodeLimits
    from fleetplace.shared.bus.topics import Topics

    settings = _settings(bootstrap, prefix, hub_kubeconfig=kubeconfig)

    async def report() -> str:
        api = await connect(settings)
        try:
            found = await agreements(
                settings.kafka, Topics(settings.topic_prefix), api, DecodeLimits.from_settings(settings)
            )
        finally:
            await api.close()
        return render_status(found)

    with _hub_errors():
        typer.echo(asyncio.run(report()), nl=False)
