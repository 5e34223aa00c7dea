"""`fleetplace demo --explore`: the acts, then the explorer on the demo's broker until Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.demo_verdict import expected_verdict

pytestmark = pytest.mark.integration


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_demo_explore_serves_the_explorer_on_its_history_until_interrupted() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "FLEETPLACE_"))}
    demo = subprocess.Popen(
        # faulthandler: a demo that does not stop is made to print every thread's stack (SIGABRT)
        [sys.executable, "-X", "faulthandler", "-m", "fleetplace.services.cli", "demo", "--explore"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C as a terminal delivers it: a test runner's worker process may ignore SIGINT
        # (pytest-xdist's do), and an ignored signal stays ignored across exec
        preexec_fn=_default_sigint,
    )
    try:
        assert demo.stdout is not None
        url, lines = None, []
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = demo.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"fleetplace explorer: (http://127\.0\.0\.1:\d+)/placements", line)
            url = found.group(1) if found else None
        assert url is not None, "".join(lines)
        # the explorer catches up with the topics (on a loaded machine, interpreted, that can take
        # a while; an interrupt during the catch-up waits for the batch being read)
        caught_up = False
        deadline = time.monotonic() + 120
        while not caught_up and time.monotonic() < deadline:
            with urllib.request.urlopen(url + "/api/version", timeout=10) as r:
                caught_up = b'"caughtUp":true' in r.read()
            time.sleep(0.1)
        assert caught_up, "the explorer did not catch up with the demo's topics in 120 s"
        with urllib.request.urlopen(url + "/placements/apps/web", timeout=10) as r:
            assert b'data-trigger="toleration-expired"' in r.read()
        # the demo placed its applications into queues: the Queues page has a history
        with urllib.request.urlopen(url + "/api/queues", timeout=10) as r:
            queues = json.loads(r.read())
        placed = {p["applicationID"]: p.get("queue") for p in queues["placements"]}
        assert placed == {
            "nightly-etl": "root.batch",
            "web-build-42": "root.tenants.web",
            "adhoc": "root.default",
        }, queues
        with urllib.request.urlopen(url + "/queues", timeout=10) as r:
            assert b"No queue placements recorded." not in r.read()
        demo.send_signal(signal.SIGINT)
        # the way out is bounded: the explorer's consumer (10 s), then the broker (5 s); a loaded
        # machine stretches both
        try:
            out, _ = demo.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            demo.send_signal(signal.SIGABRT)
            out, _ = demo.communicate(timeout=30)
            # the aborted demo cannot stop its broker: stop it by the PID the demo printed
            started = re.search(r"embedded Tansu broker at\s+\S+\s+\(pid\s+(\d+)", "".join(lines))
            if started:
                os.kill(int(started.group(1)), signal.SIGTERM)
            raise AssertionError(
                f"the demo did not stop within 90 s of Ctrl-C; its stacks:\n{out[-20000:]}"
            ) from None
        assert demo.returncode == 0, out
        assert expected_verdict() in out
    finally:
        if demo.poll() is None:
            # SIGTERM first: the demo stops the broker it started (a SIGKILL would leave it running)
            demo.terminate()
            try:
                demo.wait(30)
            except subprocess.TimeoutExpired:
                demo.kill()
                demo.wait()
