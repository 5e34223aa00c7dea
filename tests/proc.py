"""Worker processes a test started: stopping them (by PID, never by name), asking if they are ready,
reading the CPU they spent."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


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


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has spent so far (Linux: /proc; OSError when the
    process or /proc is not there)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15 of stat)


def machine_cpu_s() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of every core so far: idle and iowait are not busy (Linux:
    /proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
    except OSError:
        return None
    total = sum(ticks)
    return (total - ticks[3] - ticks[4]) / _TICKS, total / _TICKS
