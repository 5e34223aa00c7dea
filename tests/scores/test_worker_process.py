"""`fleetplace worker scores` as deployed: a process with /healthz, /readyz and /metrics that
stops cleanly on SIGTERM, and that refuses a bad endpoint setting by its variable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.topics import Topics
from tests.proc import readyz, stop_process

pytestmark = pytest.mark.integration


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETPLACE_", "KAFKA_"))}
    return {**env, **extra}


def test_the_worker_serves_health_and_metrics_and_stops_cleanly_on_sigterm(
    broker: str, topics: Topics
) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fleetplace.services.cli",
            "worker",
            "scores",
            "-b",
            broker,
            "--prefix",
            topics.prefix,
        ],
        env=_clean_env(FLEETPLACE_HTTP_PORT=str(port), FLEETPLACE_SCORE_GROUP_ID=f"{topics.prefix}scores"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while readyz(port) != 200:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            assert response.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            metrics = response.read().decode()
        assert "fleetplace_score_sources 0.0" in metrics and "fleetplace_broker_connected 1.0" in metrics
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "score worker stopped" in out + err
    finally:
        stop_process(proc)


def test_an_endpoint_setting_that_is_not_json_names_the_variable() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", "worker", "scores", "-b", "127.0.0.1:9"],
        env=_clean_env(FLEETPLACE_PROMETHEUS_ENDPOINTS="main=http://x"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "FLEETPLACE_PROMETHEUS_ENDPOINTS" in done.stderr and "Traceback" not in done.stderr
