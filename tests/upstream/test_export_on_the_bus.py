"""Through a real worker and broker: placements with names too long for labels and object names
come out of `fleetplace export placementdecisions` (both formats) as objects the upstream CRDs
and the API server's name rules accept, and `--placement` still finds them by their whole name."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.shared.bus.topics import Topics
from tests.api.profiles import profile_of
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for
from tests.upstream.schema import problems

LONG = "web-" + "x" * 70  # over 63: the placement label is shortened
LONGEST = ".".join(["a" * 60, "b" * 60, "c" * 60, "d" * 60, "e" * 9])  # 253: so are the object names


def _export(broker: str, prefix: str, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(
        app, ["export", "placementdecisions", *args, "-o", "json", "--bootstrap", broker, "--prefix", prefix]
    )
    assert result.exit_code == 0, result.output
    items: list[dict[str, Any]] = orjson.loads(result.stdout)["items"]
    return items


async def _exported(broker: str, prefix: str, *args: str, count: int) -> list[dict[str, Any]]:
    """The export (the command runs its own event loop, so in a thread) once it has `count` objects."""
    deadline = time.monotonic() + 30
    while True:
        items = await asyncio.to_thread(_export, broker, prefix, *args)
        if len(items) == count or time.monotonic() > deadline:
            return items
        await asyncio.sleep(0.2)


@pytest.mark.integration
async def test_long_placement_names_export_as_objects_the_api_server_accepts(
    broker: str, topics: Topics
) -> None:
    profiles = [profile_of(cluster(f"c{i}"), "ns1") for i in range(3)]
    async with (
        Bus(broker, topics) as bus,
        running(settings_for(broker, topics.prefix, sigmc_decisions=True)),
    ):
        await bus.publish(*base_fleet(), *profiles)
        await bus.publish(placement("ns1", LONG), placement("ns1", LONGEST))
        await bus.wait_for(
            lambda: all(
                len(bus.latest().get(f"ns1/{n}", {}).get("decisions", [])) == 3 for n in (LONG, LONGEST)
            ),
            what="both decisions",
        )
        for name in (LONG, LONGEST):
            for fmt in ("ocm", "sig-mc"):
                (obj,) = await _exported(
                    broker, topics.prefix, "--format", fmt, "--placement", f"ns1/{name}", count=1
                )
                assert problems(obj) == []
                assert obj["metadata"]["annotations"]["fleetplace.dev/placement"] == name
                assert len(obj["metadata"]["labels"]["cluster.open-cluster-management.io/placement"]) <= 63
        everything = [
            *await _exported(broker, topics.prefix, count=2),
            *await _exported(broker, topics.prefix, "--format", "sig-mc", count=2),
        ]
        assert len(everything) == 4
        assert [p for obj in everything for p in problems(obj)] == []
