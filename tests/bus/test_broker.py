"""The embedded broker: started on a free loopback port, stopped by PID, AddrInUse detected."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from fleetplace.shared.bus import broker as broker_module
from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.errors import BrokerPortInUseError
from fleetplace.shared.bus.topics import Topics, ensure_topics

pytestmark = pytest.mark.integration


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_start_serves_kafka_on_loopback_and_stop_ends_the_process() -> None:
    broker = EmbeddedBroker().start()
    try:
        pid = broker.pid
        assert broker.bootstrap == f"127.0.0.1:{broker.port}"
        assert broker.running and _alive(pid)
        assert broker.start_seconds is not None and broker.start_seconds < 5
        with socket.create_connection(("127.0.0.1", broker.port), timeout=1):
            pass
    finally:
        status = broker.stop()
    assert status is not None
    assert not broker.running and not _alive(pid)
    assert broker.stop() is None  # idempotent


def test_requested_port_in_use_is_detected_despite_exit_status_zero(taken_port: int) -> None:
    with pytest.raises(BrokerPortInUseError, match=str(taken_port)):
        EmbeddedBroker(port=taken_port).start()


def test_a_picked_port_taken_meanwhile_is_retried_on_another(
    taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_free_port = broker_module.free_port
    picks = iter([taken_port])
    monkeypatch.setattr(broker_module, "free_port", lambda host: next(picks, None) or real_free_port(host))
    with EmbeddedBroker() as broker:
        assert broker.port != taken_port


async def test_async_context_serves_clients(topic_prefix: str) -> None:
    async with EmbeddedBroker() as broker:
        statuses = await ensure_topics(broker.bootstrap, Topics(topic_prefix), only=["clock"])
        assert statuses[0].partitions == 1
        pid = broker.pid
    assert not _alive(pid)


def test_broker_command_prints_bootstrap_and_stops_cleanly_on_sigterm() -> None:
    code = "import typer; from fleetplace.services.commands import bus; app = typer.Typer(); bus.register(app); app()"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "broker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        bootstrap = process.stdout.readline().strip()
        host, port = bootstrap.split(":")
        assert host == "127.0.0.1"
        with socket.create_connection((host, int(port)), timeout=1):
            pass
        banner = process.stderr.readline()
        broker_pid = int(banner.split("broker pid ")[1].split()[0])
        assert _alive(broker_pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        deadline = time.monotonic() + 5
        while _alive(broker_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(broker_pid)
        assert "broker stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
