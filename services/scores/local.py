"""A Prometheus of one's own, for `fleetplace demo` and the tests: Debian's `/usr/bin/prometheus`
started on a free loopback port with a 1 s scrape of a small exporter served here, and stopped
by its PID.

`Exporter` serves one gauge per cluster (`<metric>{cluster="<name>"} <value>`) from a dict the
caller changes at will; `LocalPrometheus` scrapes it. A scrape is visible to PromQL within about
two seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import aiohttp
from aiohttp import web

from fleetplace.services.http import bind
from fleetplace.shared.bus.broker import free_port

__all__ = ["PROMETHEUS", "Exporter", "LocalPrometheus", "prometheus_missing"]

PROMETHEUS = Path("/usr/bin/prometheus")


def prometheus_missing() -> str | None:
    """Why a local Prometheus cannot run here (None: it can)."""
    if not PROMETHEUS.is_file():
        return f"no {PROMETHEUS} (Debian's prometheus package: apt-get install prometheus)"
    return None


class Exporter:
    """A /metrics endpoint on 127.0.0.1 with one gauge per cluster: `values` is read at each scrape."""

    def __init__(self, metric: str = "fleetplace_demo_free_cpu", label: str = "cluster") -> None:
        self.metric = metric
        self.label = label
        self.values: dict[str, float] = {}
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _metrics(self, request: web.Request) -> web.Response:
        lines = [f"# TYPE {self.metric} gauge"]
        lines += [f'{self.metric}{{{self.label}="{c}"}} {v!r}' for c, v in sorted(self.values.items())]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def start(self) -> Exporter:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = await bind(app, "127.0.0.1", 0)
        self.port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Exporter:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class LocalPrometheus:
    """`/usr/bin/prometheus` scraping `targets` (host:port) every second, on a free loopback port,
    with its data in a temporary directory; `stop()` ends it by its PID (and `start()` again
    brings it back on the same port)."""

    def __init__(self, targets: list[str], *, port: int | None = None) -> None:
        self.targets = targets
        self.port = port or free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="fleetplace-prometheus-"))
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _config(self) -> Path:
        config = self._dir / "prometheus.yml"
        targets = ", ".join(f'"{t}"' for t in self.targets)
        config.write_text(
            "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
            f"scrape_configs: [{{job_name: exporter, static_configs: [{{targets: [{targets}]}}]}}]\n"
        )
        return config

    async def start(self, timeout: float = 30.0) -> LocalPrometheus:
        """Start it and wait until it answers /-/ready."""
        reason = prometheus_missing()
        if reason is not None:
            raise RuntimeError(reason)
        with (self._dir / "prometheus.log").open("ab") as log:
            self._proc = subprocess.Popen(
                [
                    str(PROMETHEUS),
                    f"--config.file={self._config()}",
                    f"--storage.tsdb.path={self._dir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            while True:
                if self._proc.poll() is not None:
                    raise RuntimeError(f"prometheus exited with {self._proc.returncode}: {self.log_tail()}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(
                        f"{self.url}/-/ready", timeout=aiohttp.ClientTimeout(total=1)
                    ) as r:
                        if r.status == 200:
                            return self
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"prometheus not ready after {timeout} s: {self.log_tail()}")
                await asyncio.sleep(0.2)

    def log_tail(self, lines: int = 5) -> str:
        path = self._dir / "prometheus.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to its PID, SIGKILL if it has not exited after `timeout`."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    async def __aenter__(self) -> LocalPrometheus:
        return await self.start()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
