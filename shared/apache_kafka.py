"""Apache Kafka on loopback, for the tests, the fault runs, the benchmarks and `make apache-kafka`.

The broker comes by package name from Maven Central: `compose/kafka/pom.xml` names
`org.apache.kafka:kafka_2.13` at the version pinned in `compose/.env` (`KAFKA_VERSION`, the same
file docker compose reads for its image), and Maven copies the jars into the git-ignored
`.cache/kafka/<version>/` at the repository root once. Java 17 and Maven must be on PATH.

    with ApacheKafka(nodes=3) as kafka:          # every node broker and KRaft controller
        run(bootstrap=kafka.bootstrap)           # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        kafka.partition_leader("decisions", 0).kill()

One node is a combined broker+controller with replication factor 1; three nodes form one KRaft
quorum with replication factor 3 and `min.insync.replicas=2`. Ports are free loopback ports, the
data lives in a temporary directory removed on stop, and every node runs in a process group of
its own that is signalled by its PID, never by name.

`python -m fleetplace.shared.apache_kafka` runs one in the foreground (`make apache-kafka`): the
first line of stdout is `KAFKA_BOOTSTRAP_SERVERS=...`; SIGINT or SIGTERM stops it and removes the
data. `APACHE_KAFKA_NODES=3` starts the three-node cluster.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
VERSIONS_FILE = ROOT / "compose" / ".env"
POM = ROOT / "compose" / "kafka" / "pom.xml"
CACHE = ROOT / ".cache" / "kafka"
HOST = "127.0.0.1"
NODES_ENV = "APACHE_KAFKA_NODES"
DEFAULT_HEAP = "512m"

_T = TypeVar("_T")
_running: weakref.WeakSet[ApacheKafka] = weakref.WeakSet()


class ApacheKafkaError(RuntimeError):
    """Apache Kafka could not be obtained, started or queried; the message says why."""


def kafka_version(versions_file: Path = VERSIONS_FILE) -> str:
    """The pinned Apache Kafka version: `KAFKA_VERSION` in compose/.env."""
    try:
        text = versions_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ApacheKafkaError(f"{versions_file}: cannot read the pinned Kafka version: {exc}") from exc
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "KAFKA_VERSION":
            version = value.strip().strip("\"'")
            if not re.fullmatch(r"\d+\.\d+\.\d+", version):
                raise ApacheKafkaError(
                    f"{versions_file}: KAFKA_VERSION: {version!r} is not a release version"
                )
            return version
    raise ApacheKafkaError(f"{versions_file}: KAFKA_VERSION: not set")


def kafka_libs(version: str | None = None) -> Path:
    """The directory of the broker's jars, fetched by Maven on first use (one process at a time).

    The directory is stamped with a digest of the pom, so editing the pom fetches again."""
    version = version or kafka_version()
    target = CACHE / version
    stamp = target / ".pom-sha256"
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{version}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
            return target
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ApacheKafkaError("Maven (mvn) is not on PATH: it fetches Apache Kafka from Maven Central")
        staging = Path(tempfile.mkdtemp(prefix=f"{version}.", dir=CACHE))
        print(
            f"apache-kafka: fetching Apache Kafka {version} from Maven Central into {target}", file=sys.stderr
        )
        command = [
            mvn,
            "-q",
            "-B",
            "-Dstyle.color=never",
            "-f",
            str(POM),
            f"-Dkafka.version={version}",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ]
        # Maven's output goes to stderr: stdout of `make apache-kafka` starts with the bootstrap line.
        done = subprocess.run(command, stdout=sys.stderr, stderr=sys.stderr, check=False)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise ApacheKafkaError(
                f"{POM}: mvn dependency:copy-dependencies exited with status {done.returncode}"
            )
        (staging / stamp.name).write_text(digest, encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


def java_binary() -> str:
    """`$JAVA_HOME/bin/java` if set, else `java` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "java", os.X_OK):
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise ApacheKafkaError("Java (17 or newer) is not on PATH: Apache Kafka's broker runs on it")
    return found


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((HOST, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _can_connect(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def run_async(make: Callable[[], Awaitable[_T]], timeout_s: float = 60.0) -> _T:
    """Run a coroutine to completion on a loop of its own in a helper thread, so that it can be
    called from synchronous code and from inside a running event loop alike."""

    async def _bounded() -> _T:
        async with asyncio.timeout(timeout_s):
            return await make()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _bounded()).result()


_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
"""


class KafkaNode:
    """One node of an `ApacheKafka`: a broker and KRaft controller in its own process group."""

    def __init__(
        self, cluster: ApacheKafka, node_id: int, port: int, controller_port: int, home: Path
    ) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.port = port
        self.controller_port = controller_port
        self.home = home
        self._process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"KafkaNode(node_id={self.node_id}, port={self.port}, pid={self.pid_or_none})"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    @property
    def pid_or_none(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def pid(self) -> int:
        if self._process is None:
            raise ApacheKafkaError(f"node {self.node_id} is not running")
        return self._process.pid

    @property
    def running(self) -> bool:
        """The process exists (it may be stopped by SIGSTOP)."""
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(
                self.log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            )
        return ""

    def start(self) -> KafkaNode:
        """Start the node's JVM on its formatted storage (again, after a kill or stop)."""
        if self.running:
            return self
        log = open(self.log_file, "ab")  # noqa: SIM115 - the child owns it; closed below
        try:
            self._process = subprocess.Popen(
                [
                    self.cluster.java,
                    f"-Xmx{self.cluster.heap}",
                    "-Xms64m",
                    "-XX:+UseG1GC",
                    "-XX:MaxGCPauseMillis=20",
                    "-Djava.awt.headless=true",
                    f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
                    "-cp",
                    f"{self.cluster.libs}/*",
                    "kafka.Kafka",
                    str(self.config_file),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # A process group of its own: a Ctrl-C meant for the caller does not reach it, and
                # signals go to the whole group by its PID.
                start_new_session=True,
            )
        finally:
            log.close()
        return self

    def signal(self, signum: int) -> None:
        """Send `signum` to the node's process group (while the process is unreaped, so ours)."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signum)

    def kill(self) -> None:
        """SIGKILL: a crash. The storage stays; `restart()` brings the node back."""
        self.signal(signal.SIGKILL)
        self._reap(10.0)

    def pause(self) -> None:
        """SIGSTOP: the node freezes, its sockets stay open."""
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after `pause()`."""
        self.signal(signal.SIGCONT)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """A clean shutdown (SIGTERM, then SIGKILL after the timeout); the exit status."""
        if self._process is None:
            return None
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        return self._reap(timeout_s)

    def restart(self, *, clean: bool = True, timeout_s: float = 120.0) -> KafkaNode:
        """Stop the node (cleanly, or by SIGKILL with clean=False), start it again and wait until
        it serves."""
        if clean:
            self.stop()
        else:
            self.kill()
        self.start()
        self.cluster.wait_until_serving([self], timeout_s=timeout_s)
        return self

    def _reap(self, timeout_s: float) -> int | None:
        process = self._process
        if process is None:
            return None
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        # Nothing is signalled once the process is reaped: its PID may belong to another by then.
        self._process = None
        return int(process.returncode)


class ApacheKafka:
    """Apache Kafka in KRaft mode: one combined node or a three-node quorum, on loopback.

    `config_overrides` are broker settings written into every node's server.properties after the
    defaults here (e.g. {"log.cleaner.backoff.ms": "500"}).
    """

    def __init__(
        self,
        nodes: int = 1,
        config_overrides: Mapping[str, str] | None = None,
        *,
        version: str | None = None,
        heap: str = DEFAULT_HEAP,
        start_timeout_s: float = 180.0,
        port_attempts: int = 3,
    ) -> None:
        if nodes not in (1, 3):
            raise ApacheKafkaError(f"nodes: {nodes}: one node or a three-node cluster (1 or 3)")
        self.node_count = nodes
        self.config_overrides = dict(config_overrides or {})
        self.version = version or kafka_version()
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        self.port_attempts = max(1, port_attempts)
        self.nodes: list[KafkaNode] = []
        self.data_dir: Path | None = None
        self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        self.java = ""
        self.libs = Path()
        self.start_seconds: float | None = None

    # -- what callers need ---------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """`127.0.0.1:p1[,...]` for KAFKA_BOOTSTRAP_SERVERS."""
        if not self.nodes:
            raise ApacheKafkaError("Apache Kafka is not started")
        return ",".join(node.bootstrap for node in self.nodes)

    @property
    def replication_factor(self) -> int:
        return self.node_count

    def node(self, node_id: int) -> KafkaNode:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise ApacheKafkaError(f"no node {node_id} (nodes: {[n.node_id for n in self.nodes]})")

    def live_bootstrap(self) -> str:
        """The bootstrap addresses of the nodes whose process runs."""
        return ",".join(node.bootstrap for node in self.nodes if node.running)

    def active_controller(self, timeout_s: float = 60.0) -> KafkaNode:
        """The node that leads the KRaft metadata quorum now, as `kafka-metadata-quorum describe
        --status` reports it (a client's Metadata response names a random broker in KRaft)."""
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            done = subprocess.run(
                [
                    self.java,
                    "-Xmx128m",
                    f"-Dlog4j2.configurationFile={self.nodes[0].home / 'log4j2.properties'}",
                    "-cp",
                    f"{self.libs}/*",
                    "org.apache.kafka.tools.MetadataQuorumCommand",
                    "--bootstrap-server",
                    self.live_bootstrap(),
                    "describe",
                    "--status",
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=max(5.0, deadline - time.monotonic()),
            )
            last = (done.stdout + done.stderr).strip()
            found = re.search(r"^LeaderId:\s+(\d+)\s*$", done.stdout, re.MULTILINE)
            if done.returncode == 0 and found and int(found.group(1)) >= 0:
                return self.node(int(found.group(1)))
            time.sleep(0.5)
        raise ApacheKafkaError(f"no active controller reported within {timeout_s} s: {last}")

    def partition_leader(self, topic: str, partition: int = 0, timeout_s: float = 60.0) -> KafkaNode:
        """The node leading `topic`'s partition, from the cluster's metadata."""

        async def _leader() -> int:
            from aiokafka.admin import AIOKafkaAdminClient

            while True:
                admin = AIOKafkaAdminClient(bootstrap_servers=self.live_bootstrap(), request_timeout_ms=5000)
                try:
                    await admin.start()
                    described: list[dict[str, Any]] = await admin.describe_topics([topic])
                finally:
                    await admin.close()
                for entry in described:
                    for part in entry.get("partitions", []):
                        if part.get("partition") == partition and int(part.get("leader", -1)) >= 0:
                            return int(part["leader"])
                await asyncio.sleep(0.2)

        return self.node(run_async(_leader, timeout_s))

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> ApacheKafka:
        if self.nodes:
            return self
        self.java = java_binary()
        self.libs = kafka_libs(self.version)
        started = time.monotonic()
        for attempt in range(self.port_attempts):
            self.data_dir = Path(tempfile.mkdtemp(prefix="fleetplace-kafka-"))
            _running.add(self)
            try:
                self._configure()
                self._format()
                for node in self.nodes:
                    node.start()
                self.wait_until_serving(self.nodes, timeout_s=self.start_timeout_s)
            except ApacheKafkaError:
                in_use = any("Address already in use" in node.log_tail(200) for node in self.nodes)
                self.stop()
                if in_use and attempt + 1 < self.port_attempts:
                    continue  # another process took a port between picking and binding it
                raise
            self.start_seconds = time.monotonic() - started
            return self
        raise AssertionError("unreachable")  # pragma: no cover

    def _configure(self) -> None:
        assert self.data_dir is not None
        ports = _free_ports(2 * self.node_count)
        count = self.node_count
        self.nodes = [
            KafkaNode(self, i + 1, ports[2 * i], ports[2 * i + 1], self.data_dir / f"node-{i + 1}")
            for i in range(count)
        ]
        voters = ",".join(f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes)
        min_isr = "2" if count == 3 else "1"
        for node in self.nodes:
            node.home.mkdir(parents=True)
            settings = {
                "process.roles": "broker,controller",
                "node.id": str(node.node_id),
                "controller.quorum.voters": voters,
                "listeners": f"PLAINTEXT://{HOST}:{node.port},CONTROLLER://{HOST}:{node.controller_port}",
                "advertised.listeners": f"PLAINTEXT://{HOST}:{node.port}",
                "controller.listener.names": "CONTROLLER",
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "log.dirs": str(node.home / "data"),
                "default.replication.factor": str(count),
                "min.insync.replicas": min_isr,
                "offsets.topic.replication.factor": str(count),
                "transaction.state.log.replication.factor": str(count),
                "transaction.state.log.min.isr": min_isr,
                "share.coordinator.state.topic.replication.factor": str(count),
                "share.coordinator.state.topic.min.isr": min_isr,
                # Small internal topics and buffers: the tests' machines have two cores.
                "offsets.topic.num.partitions": "10",
                "transaction.state.log.num.partitions": "10",
                "num.network.threads": "2",
                "num.io.threads": "4",
                "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
                # A group's first member is assigned at once, not after 3 s of waiting for others.
                "group.initial.rebalance.delay.ms": "0",
                # The tests take over a crashed member's partitions within seconds, with sessions
                # shorter than Kafka's default minimum of 6 s (FLEETPLACE_GROUP_SESSION_TIMEOUT_MS).
                "group.min.session.timeout.ms": "1000",
                **self.config_overrides,
            }
            node.config_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()), encoding="utf-8")
            (node.home / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")

    def _format(self) -> None:
        """`kafka-storage format` for every node, in parallel (each is a JVM start)."""
        formats = [
            subprocess.Popen(
                [
                    self.java,
                    "-Xmx256m",
                    f"-Dlog4j2.configurationFile={node.home / 'log4j2.properties'}",
                    "-cp",
                    f"{self.libs}/*",
                    "kafka.tools.StorageTool",
                    "format",
                    "--cluster-id",
                    self.cluster_id,
                    "--config",
                    str(node.config_file),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            for node in self.nodes
        ]
        for node, process in zip(self.nodes, formats, strict=True):
            output, _ = process.communicate(timeout=120)
            if process.returncode != 0:
                raise ApacheKafkaError(
                    f"formatting the storage of node {node.node_id} failed with status {process.returncode}: "
                    + output.decode("utf-8", "replace")
                )

    def wait_until_serving(self, nodes: list[KafkaNode], timeout_s: float) -> None:
        """Until every one of `nodes` listens and the cluster's metadata lists it as a broker."""
        deadline = time.monotonic() + timeout_s
        wanted = {node.node_id for node in nodes}
        while time.monotonic() < deadline:
            for node in nodes:
                if not node.running:
                    raise ApacheKafkaError(
                        f"node {node.node_id} exited before it served (log {node.log_file}):\n{node.log_tail()}"
                    )
            if all(_can_connect(node.port) for node in nodes):
                try:
                    brokers = run_async(self._broker_ids, timeout_s=10.0)
                except Exception:  # not serving yet: metadata requests fail while it starts
                    brokers = set()
                if wanted <= brokers:
                    return
            time.sleep(0.2)
        tails = "\n".join(f"node {n.node_id}:\n{n.log_tail()}" for n in nodes)
        raise ApacheKafkaError(f"Apache Kafka not serving after {timeout_s} s:\n{tails}")

    async def _broker_ids(self) -> set[int]:
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=self.live_bootstrap(), request_timeout_ms=5000)
        try:
            await admin.start()
            cluster: dict[str, Any] = await admin.describe_cluster()
        finally:
            await admin.close()
        return {int(broker["node_id"]) for broker in cluster.get("brokers", [])}

    def stop(self) -> None:
        """Stop every node by PID and remove the data directory."""
        _running.discard(self)
        # Stopping nodes one by one lets the last ones wait for a quorum that is gone: stop all at
        # once, then wait for each.
        for node in self.nodes:
            node.signal(signal.SIGCONT)
            node.signal(signal.SIGTERM)
        for node in self.nodes:
            node.stop(timeout_s=20.0)
        self.nodes = []
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def __enter__(self) -> ApacheKafka:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ApacheKafka:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)


@atexit.register
def _stop_leftovers() -> None:
    for kafka in list(_running):
        kafka.stop()


def main() -> int:
    """`make apache-kafka`: run Apache Kafka until SIGINT or SIGTERM, then remove its data."""
    raw = os.environ.get(NODES_ENV, "1")
    try:
        nodes = int(raw)
    except ValueError:
        print(f"apache-kafka: {NODES_ENV}={raw!r}: 1 or 3", file=sys.stderr)
        return 2
    stopping = threading.Event()

    def _on_signal(signum: int, frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        kafka = ApacheKafka(nodes=nodes)
        with kafka:
            print(f"KAFKA_BOOTSTRAP_SERVERS={kafka.bootstrap}", flush=True)
            for node in kafka.nodes:
                print(
                    f"apache-kafka: node {node.node_id} pid {node.pid} port {node.port} data {node.home}",
                    file=sys.stderr,
                    flush=True,
                )
            print(
                f"apache-kafka: Apache Kafka {kafka.version}, {nodes} node(s); Ctrl-C stops it and removes its data",
                file=sys.stderr,
                flush=True,
            )
            while not stopping.wait(1.0):
                for node in kafka.nodes:
                    if not node.running:
                        print(
                            f"apache-kafka: node {node.node_id} exited:\n{node.log_tail()}", file=sys.stderr
                        )
                        return 1
        print("apache-kafka: stopped, data removed", file=sys.stderr, flush=True)
    except ApacheKafkaError as exc:
        print(f"apache-kafka: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
