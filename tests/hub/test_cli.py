"""`fleetplace hub run` as an operator meets it when the hub cannot be used: a clear error naming
what is wrong, exit status 2, before anything starts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.control_plane import kubeconfig_text, make_credentials
from tests.hub.processes import hub_run_argv


def hub_run(kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETPLACE_", "KAFKA_", "KUBECONFIG"))}
    return subprocess.run(
        hub_run_argv("127.0.0.1:1", kubeconfig, 0),
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    done = hub_run(tmp_path / "absent")
    assert done.returncode == 2, done.stderr
    assert f"kubeconfig {tmp_path / 'absent'}: no such file" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_kubeconfig_that_is_not_yaml_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("clusters: [\n")
    done = hub_run(broken)
    assert done.returncode == 2, done.stderr
    assert f"no credentials for the hub in kubeconfig {broken}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_hub_that_does_not_answer_is_an_error_at_start(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text(f"https://127.0.0.1:{free_port()}", make_credentials(tmp_path)))
    done = hub_run(kubeconfig)
    assert done.returncode == 2, done.stderr
    assert "error: the hub: GET /version" in done.stderr
    assert "Traceback" not in done.stderr
