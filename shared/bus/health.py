"""Is the broker there? A watch over a running client's connection, and quiet logs while it is not.

When the brokers go away, aiokafka's clients retry on their own every few hundred milliseconds and
log an error for every try (about fifty lines a second for a worker's three clients). A worker
needs instead one answer, connected or not, for its readiness and a metric, and a log that says
so once and then backs off. `BrokerWatch` gives that answer by asking the cluster for metadata
through a client that is already running; `RepeatedLogFilter` lets the first line of each kind
from aiokafka's loggers through and holds back the repeats until the connection is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from fleetplace.shared.logging import get_logger

log = get_logger("fleetplace.bus")

# Probes while connected; while not, the pause doubles from the first to the last.
PROBE_INTERVAL_S = 1.0
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 5.0
PROBE_TIMEOUT_S = 3.0
# A kind of aiokafka line held back during an outage still shows once in this long.
REPEAT_WINDOW_S = 300.0

CLIENT_LOGGERS = (
    "aiokafka",
    "aiokafka.conn",
    "aiokafka.cluster",
    "aiokafka.admin.client",
    "aiokafka.consumer.consumer",
    "aiokafka.consumer.fetcher",
    "aiokafka.consumer.group_coordinator",
    "aiokafka.producer.producer",
    "aiokafka.producer.sender",
)


class RepeatedLogFilter(logging.Filter):
    """Passes the first record of each (logger, message template), then one per `window_s` seconds,
    until `reset()`: a broker that has gone makes aiokafka repeat the same few lines endlessly."""

    def __init__(
        self, window_s: float = REPEAT_WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.window_s = window_s
        self._clock = clock
        self._shown: dict[tuple[str, str], float] = {}
        self.held_back = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, str(record.msg))
        now = self._clock()
        shown = self._shown.get(key)
        if shown is not None and now - shown < self.window_s:
            self.held_back += 1
            return False
        self._shown[key] = now
        return True

    def reset(self) -> None:
        self._shown.clear()
        self.held_back = 0


_client_filter: RepeatedLogFilter | None = None


def quiet_client_logs() -> RepeatedLogFilter:
    """The filter on aiokafka's loggers (installed once per process)."""
    global _client_filter
    if _client_filter is None:
        _client_filter = RepeatedLogFilter()
        for name in CLIENT_LOGGERS:
            logging.getLogger(name).addFilter(_client_filter)
    return _client_filter


class BrokerWatch:
    """Tracks whether the brokers answer, by asking for cluster metadata through a running client.

    `connected` starts True (the client has just started, which needs the brokers). A failed probe
    sets it False and logs one line; while disconnected the probe is retried with a growing pause,
    one log line per attempt with its count; the first answer sets it True again and says how long
    the outage lasted. `on_change(connected)` is called on every change.
    """

    def __init__(
        self,
        client: Any,
        *,
        bootstrap: str,
        on_change: Callable[[bool], None] | None = None,
        interval_s: float = PROBE_INTERVAL_S,
        retry_first_s: float = RETRY_FIRST_S,
        retry_max_s: float = RETRY_MAX_S,
        timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        self._client = client  # aiokafka's AIOKafkaClient (a producer's `.client`)
        self.bootstrap = bootstrap
        self._on_change = on_change
        self.interval_s = interval_s
        self.retry_first_s = retry_first_s
        self.retry_max_s = retry_max_s
        self.timeout_s = timeout_s
        self.connected = True
        self.attempts = 0
        self._lost_at = 0.0
        self._last_error = ""
        self._logs = quiet_client_logs()

    async def probe(self) -> bool:
        """One metadata request to any known broker, bounded by `timeout_s`."""
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._client.fetch_all_metadata()
        except Exception as exc:  # a timeout, a refused connection, a Kafka error: no answer
            self._last_error = str(exc) or type(exc).__name__
            return False
        return True

    async def run(self) -> None:
        """Probe until cancelled."""
        pause = self.retry_first_s
        while True:
            answered = await self.probe()
            if answered and not self.connected:
                self._set(True)
                log.info(
                    "broker connection restored",
                    bootstrap=self.bootstrap,
                    attempts=self.attempts,
                    down_s=round(time.monotonic() - self._lost_at, 1),
                    client_lines_held_back=self._logs.held_back,
                )
                self._logs.reset()
                self.attempts = 0
            elif not answered and self.connected:
                self._lost_at = time.monotonic()
                self.attempts = 1
                pause = self.retry_first_s
                self._set(False)
                log.error(
                    "broker unreachable; not ready until it answers again",
                    bootstrap=self.bootstrap,
                    attempt=self.attempts,
                    error=self._last_error,
                    retry_in_s=pause,
                )
            elif not answered:
                self.attempts += 1
                pause = min(pause * 2, self.retry_max_s)
                log.warning(
                    "broker still unreachable",
                    bootstrap=self.bootstrap,
                    attempt=self.attempts,
                    down_s=round(time.monotonic() - self._lost_at, 1),
                    retry_in_s=pause,
                )
            await asyncio.sleep(self.interval_s if self.connected else pause)

    def _set(self, connected: bool) -> None:
        self.connected = connected
        if self._on_change is not None:
            self._on_change(connected)
