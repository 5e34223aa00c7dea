"""Stopping a worker process a test started: by its PID, never by name."""

from __future__ import annotations

import signal
import subprocess
import urllib.error
import urllib.request
from typing import Any


def stop_process(proc: subprocess.Popen[Any], timeout: float = 20.0) -> None:
    """SIGTERM (the clean stop a deployment sends), SIGKILL if it has not exited after `timeout`."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def readyz(port: int) -> int | None:
    """The status /readyz of a worker on 127.0.0.1:`port` answers (None: nothing answers)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return None
