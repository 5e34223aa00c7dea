"""`fleetplace worker rollout` as an operator meets it: a taken port, a clean stop, a lost broker."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from fleetplace.shared.bus.broker import EmbeddedBroker, free_port
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.testing import create_topics
from tests.proc import readyz
from tests.rollout_worker.harness import running, settings_for

pytestmark = pytest.mark.integration


def _command(broker: str, topics: Topics, port: int) -> list[str]:
    return [
        sys.executable, "-m", "fleetplace.services.cli", "worker", "rollout",
        "--bootstrap", broker, "--prefix", topics.prefix, "--group", f"{topics.prefix}rollout",
        "--http-port", str(port),
    ]  # fmt: skip


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("FLEETPLACE_", "KAFKA_"))}


def _broker_connected(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
        text = response.read().decode()
    line = next(row for row in text.splitlines() if row.startswith("fleetplace_broker_connected "))
    return float(line.split()[1])


async def _wait_for_readyz(port: int, status: int, timeout: float) -> float:
    started = time.monotonic()
    while await asyncio.to_thread(readyz, port) != status:
        if time.monotonic() - started > timeout:
            raise AssertionError(f"/readyz never answered {status} within {timeout} s")
        await asyncio.sleep(0.1)
    return time.monotonic() - started


def test_a_rollout_worker_on_a_taken_port_names_the_port_and_exits_2(
    broker: str, topics: Topics, taken_port: int
) -> None:
    done = subprocess.run(
        _command(broker, topics, taken_port),
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"HTTP port {taken_port} on 127.0.0.1 is already in use" in done.stderr
    # the port is bound before any Kafka client starts: nothing to stop, nothing left open
    assert "Traceback" not in done.stderr and "Unclosed" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


async def test_sigterm_stops_a_ready_rollout_worker_with_status_0(broker: str, topics: Topics) -> None:
    port = free_port()
    env = {**_clean_env(), "FLEETPLACE_LOG_FORMAT": "console"}
    process = subprocess.Popen(
        _command(broker, topics, port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        await _wait_for_readyz(port, 200, 60)
        process.send_signal(signal.SIGTERM)
        status = await asyncio.to_thread(process.wait, 30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = (process.stderr.read() if process.stderr else b"").decode()
    assert status == 0, log[-3000:]
    assert "rollout worker stopped" in log
    assert "Traceback" not in log and "CancelledError" not in log


@pytest.mark.timeout(120)
async def test_a_rollout_worker_whose_broker_goes_is_not_ready_and_still_stops() -> None:
    broker = EmbeddedBroker().start()
    try:
        topics, _ = await create_topics(broker.bootstrap, "gone.")
        async with running(settings_for(broker.bootstrap, topics.prefix)) as worker:
            assert worker.http is not None
            port = worker.http.port
            await _wait_for_readyz(port, 200, 30)
            assert await asyncio.to_thread(_broker_connected, port) == 1
            broker.stop()
            assert await _wait_for_readyz(port, 503, 10) < 5
            assert await asyncio.to_thread(_broker_connected, port) == 0
        # leaving `running` stopped the worker: every client closed without a broker to talk to
    finally:
        broker.stop()
