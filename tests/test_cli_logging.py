"""Every command keeps stdout for its results: logs go to stderr (`audit --json` is parsed)."""

from __future__ import annotations

import subprocess
import sys

# a command that only logs, registered on the real app and run through the real entry point
PROGRAM = """
import sys
from fleetplace.services import cli
from fleetplace.shared.logging import get_logger

@cli.app.command("log-a-warning")
def log_a_warning() -> None:
    get_logger("fleetplace.test").warning("input held up", partitions=["decisions/3"])
    print('{"ok": true}')

sys.argv = ["fleetplace", "log-a-warning"]
cli.main()
"""


def test_a_warning_goes_to_stderr_and_stdout_holds_only_the_result() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"ok": true}\n'
    assert "input held up" in done.stderr
