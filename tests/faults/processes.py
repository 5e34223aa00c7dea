"""Real processes for fault injection: scheduler workers, a broker we can pause and restart, moto for S3.

Every process is started here and stopped here by its PID (SIGTERM, then SIGKILL), never by name.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

from fleetplace.shared.apache_kafka import ApacheKafka, KafkaNode
from fleetplace.shared.bus.broker import MEMORY_STORAGE, EmbeddedBroker, free_port
from fleetplace.shared.bus.errors import BrokerPortInUseError
from fleetplace.shared.bus.topics import Topics, ensure_topics
from fleetplace.shared.testing import create_topics

S3_BUCKET = "tansu"


def _stop(process: subprocess.Popen[bytes], timeout: float = 20.0) -> int:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)  # a paused process cannot act on SIGTERM
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait()
    return int(process.returncode)


def peak_rss_mb(pid: int) -> float:
    """VmHWM (peak resident set) of a live process, in MiB; 0 if it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"^VmHWM:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) / 1024 if match else 0.0


class MotoS3:
    """`moto_server` on a free 127.0.0.1 port with the bucket Tansu needs (in memory: keep it running)."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def broker_env(self) -> dict[str, str]:
        """What Tansu needs for s3:// on moto (kafka-local-broker.md): all four, or it tries the cloud."""
        return {
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def start(self) -> MotoS3:
        binary = Path(sys.executable).with_name("moto_server")
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(binary), "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"moto_server did not start: {self.log_path.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.1)
        import boto3

        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        ).create_bucket(Bucket=S3_BUCKET)
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None

    def __enter__(self) -> MotoS3:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FaultyBroker:
    """An embedded broker that keeps its address across restarts: pause (SIGSTOP), resume, restart."""

    def __init__(
        self,
        storage: str = "memory://tansu/",
        env: Mapping[str, str] | None = None,
        stop_timeout_s: float = 30.0,
    ) -> None:
        self.storage = storage
        self.env = dict(env or {})
        self.stop_timeout_s = stop_timeout_s
        self._broker = EmbeddedBroker(storage=storage, env=self.env, stop_timeout_s=stop_timeout_s)
        self.paused = False
        self.restarts = 0
        self.peak_rss_mb = 0.0

    @property
    def bootstrap(self) -> str:
        return self._broker.bootstrap

    @property
    def pid(self) -> int:
        return self._broker.pid

    def start(self) -> FaultyBroker:
        self._broker.start()
        return self

    def sample_rss(self) -> None:
        if self._broker.running:
            self.peak_rss_mb = max(self.peak_rss_mb, peak_rss_mb(self._broker.pid))

    def pause(self) -> None:
        os.kill(self._broker.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        os.kill(self._broker.pid, signal.SIGCONT)
        self.paused = False

    def restart(self, *, kill: bool = False) -> float:
        """Stop the broker (SIGTERM, or SIGKILL) and start it again on the same port; seconds down."""
        port = self._broker.port
        self.sample_rss()
        started = time.monotonic()
        if kill:
            os.kill(self._broker.pid, signal.SIGKILL)
        self._broker.stop()
        deadline = time.monotonic() + 30
        while True:
            broker = EmbeddedBroker(
                port=port, storage=self.storage, env=self.env, stop_timeout_s=self.stop_timeout_s
            )
            try:
                broker.start()
                break
            except BrokerPortInUseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self._broker = broker
        self.restarts += 1
        return time.monotonic() - started

    def stop(self) -> None:
        if self.paused:
            self.resume()
        self.sample_rss()
        self._broker.stop()

    def __enter__(self) -> FaultyBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FaultyCluster:
    """A three-node Apache Kafka (every node broker and KRaft controller, replication factor 3,
    min.insync.replicas=2) whose nodes are killed, paused and restarted by the fault runs."""

    def __init__(self) -> None:
        self.kafka = ApacheKafka(nodes=3)
        self.peak_rss_mb = 0.0
        self.restarts = 0

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap

    def start(self) -> FaultyCluster:
        self.kafka.start()
        return self

    def sample_rss(self) -> None:
        for node in self.kafka.nodes:
            if node.running:
                self.peak_rss_mb = max(self.peak_rss_mb, peak_rss_mb(node.pid))

    def kill_and_restart(self, node: KafkaNode, down_s: float) -> float:
        """SIGKILL `node`, keep it down `down_s`, start it again; seconds until it serves."""
        self.sample_rss()
        node.kill()
        time.sleep(down_s)
        started = time.monotonic()
        node.start()
        self.kafka.wait_until_serving([node], timeout_s=180)
        self.restarts += 1
        return time.monotonic() - started

    def stop(self) -> None:
        self.sample_rss()
        self.kafka.stop()

    def __enter__(self) -> FaultyCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class WorkerProcess:
    """`fleetplace worker <kind>` (scheduler by default) as deployed: its own process, JSON logs to
    a file, metrics over HTTP."""

    def __init__(
        self,
        bootstrap: str,
        prefix: str,
        group: str,
        name: str,
        log_dir: Path,
        *,
        clock: str | None = None,
        env: Mapping[str, str] | None = None,
        kind: str = "scheduler",
    ) -> None:
        self.kind = kind
        self.bootstrap = bootstrap
        self.prefix = prefix
        self.group = group
        self.name = name
        self.log_dir = log_dir
        self.clock = clock
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.http_port = 0
        self.starts = 0
        self.kills = 0
        self.unexpected_exits: list[int] = []
        self.peak_rss_mb = 0.0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"{self.name}-{self.starts}.log"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> WorkerProcess:
        self.http_port = free_port()
        self.starts += 1
        command = [
            sys.executable,
            "-m",
            "fleetplace.services.cli",
            "worker",
            self.kind,
            "--bootstrap",
            self.bootstrap,
            "--prefix",
            self.prefix,
            "--group",
            self.group,
            "--instance",
            self.name,
            "--http-port",
            str(self.http_port),
        ]
        if self.clock:
            command += ["--clock", self.clock]
        env = {**os.environ, "FLEETPLACE_LOG_FORMAT": "json", "FLEETPLACE_LOG_LEVEL": "info", **self.env}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        return self

    def check(self) -> None:
        """Note (and clear) an exit nobody asked for, so the supervisor can restart the worker."""
        if self.process is not None and self.process.poll() is not None:
            self.unexpected_exits.append(int(self.process.returncode))
            self.process = None

    def sample_rss(self) -> None:
        if self.running:
            self.peak_rss_mb = max(self.peak_rss_mb, peak_rss_mb(self.pid))

    def kill(self) -> None:
        """SIGKILL by PID: no chance to finish a batch, flush the producer or leave the group."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self.process = None
        self.kills += 1

    def pause(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.sample_rss()
        status = _stop(self.process)
        self.process = None
        return status

    def metrics(self, timeout: float = 2.0) -> dict[str, float]:
        """The worker's Prometheus samples (`name{labels}` → value)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=timeout) as r:
            text = r.read().decode()
        samples: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                with contextlib.suppress(ValueError):
                    samples[name] = float(value)
        return samples

    def log_lines(self) -> Iterator[str]:
        for n in range(1, self.starts + 1):
            path = self.log_dir / f"{self.name}-{n}.log"
            if path.exists():
                yield from path.read_text(errors="replace").splitlines()


async def fault_broker(
    stack: contextlib.ExitStack, kind: str, storage: str, partitions: int, prefix: str, workdir: Path
) -> tuple[FaultyBroker | FaultyCluster, Topics]:
    """The broker a fault run injects into, stopped with `stack`, and its topics created: the
    three-node Apache Kafka (replication factor 3) for kind `apache`, else the embedded broker on
    `storage` (`s3`: moto's, started here too)."""
    if kind == "apache":
        cluster = stack.enter_context(FaultyCluster())
        topics = Topics(prefix)
        await ensure_topics(
            cluster.bootstrap, topics, work_partitions=partitions, replication_factor=cluster.kafka.node_count
        )
        return cluster, topics
    where, env = MEMORY_STORAGE, {}
    if storage == "s3":
        moto = stack.enter_context(MotoS3(workdir / "moto.log"))
        where, env = f"s3://{S3_BUCKET}/", moto.broker_env()
    broker = stack.enter_context(FaultyBroker(where, env))
    topics, _ = await create_topics(broker.bootstrap, prefix, work_partitions=partitions)
    return broker, topics
