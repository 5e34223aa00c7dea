"""`fleetplace hub run` as its own process, started as an operator starts it, and the wait for its
readiness: one way for every test that runs the bridge beside the real control plane."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from tests.proc import readyz


def hub_run_argv(
    broker: str, kubeconfig: Path, port: int, *, prefix: str | None = None, lease_namespace: str | None = None
) -> list[str]:
    argv = [sys.executable, "-m", "fleetplace.services.cli", "hub", "run", "-b", broker]
    if prefix is not None:
        argv += ["--prefix", prefix]
    argv += ["--http-port", str(port), "--kubeconfig", str(kubeconfig)]
    if lease_namespace is not None:
        argv += ["--lease-namespace", lease_namespace]
    return argv


def start_hub_bridge(
    broker: str,
    prefix: str,
    kubeconfig: Path,
    port: int,
    env: Mapping[str, str],
    *,
    lease_namespace: str | None = None,
) -> subprocess.Popen[str]:
    """The bridge with exactly `env`; its stderr kept for the failure message."""
    return subprocess.Popen(
        hub_run_argv(broker, kubeconfig, port, prefix=prefix, lease_namespace=lease_namespace),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def wait_ready(process: subprocess.Popen[str], port: int, timeout_s: float = 90.0) -> None:
    """Until its /readyz answers 200; a bridge that exits first fails with what it said."""
    deadline = time.monotonic() + timeout_s
    while readyz(port) != 200:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the bridge never became ready"
        await asyncio.sleep(0.1)
