"""One evaluation of a ScoreSource against Prometheus's HTTP API (`POST /api/v1/query`).

The I/O half of score sources: the query is sent with the source's timeout (Prometheus is told
the same timeout, so both give up together), and the answer goes to the pure functions of
`fleetplace.shared.scoring`. Every way an evaluation can fail becomes an `EvaluationError` with a
reason; nothing here raises anything else for a bad Prometheus.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import aiohttp

from fleetplace.shared.api.score_sources import ScoreSource
from fleetplace.shared.scoring import EvaluationError, Reason, query_timeout_s, read_vector, scores_for

__all__ = ["Evaluation", "base_url_of", "evaluate", "query"]

QUERY_PATH = "/api/v1/query"
# A Prometheus answer bigger than this is not a per-cluster vector anyone meant to write.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Evaluation:
    """One evaluation's outcome: raw values and scores by cluster, or the error; skipped series."""

    source: ScoreSource
    at: datetime
    values: Mapping[str, float] = field(default_factory=dict)
    scores: Mapping[str, int] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    error: EvaluationError | None = None


def base_url_of(source: ScoreSource, endpoints: Mapping[str, str], override: str | None = None) -> str:
    """The Prometheus to ask: `override`, the source's URL, or its named endpoint (EvaluationError
    with reason `endpoint` when the settings do not name it)."""
    if override:
        return override.rstrip("/")
    ref = source.spec.prometheus
    if ref.url is not None:
        return ref.url.rstrip("/")
    assert ref.endpoint is not None
    url = endpoints.get(ref.endpoint)
    if url is None:
        known = ", ".join(sorted(endpoints)) or "none"
        raise EvaluationError(
            Reason.ENDPOINT,
            f"no Prometheus endpoint {ref.endpoint!r} in FLEETPLACE_PROMETHEUS_ENDPOINTS (known: {known})",
        )
    return url.rstrip("/")


async def query(
    session: aiohttp.ClientSession, base_url: str, promql: str, timeout_s: float
) -> tuple[int, bytes]:
    """The HTTP status and body of one instant query; EvaluationError (unreachable, timeout) when
    there is no answer."""
    form = {"query": promql, "timeout": f"{timeout_s:g}s"}
    try:
        async with session.post(
            base_url + QUERY_PATH, data=form, timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.content.iter_chunked(1 << 16):
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise EvaluationError(Reason.BAD_RESPONSE, f"the answer is over {MAX_ANSWER_BYTES} bytes")
                chunks.append(chunk)
            return response.status, b"".join(chunks)
    except TimeoutError:
        raise EvaluationError(Reason.TIMEOUT, f"no answer from {base_url} within {timeout_s:g}s") from None
    except aiohttp.ClientConnectorError as e:
        # aiohttp's own text names its TLS context (`ssl:default`) even for plain http: say the cause
        error = e.os_error
        cause = os.strerror(error.errno) if error.errno else str(error) or type(error).__name__
        raise EvaluationError(Reason.UNREACHABLE, f"{base_url}: cannot connect: {cause}") from None
    except aiohttp.ClientError as e:
        raise EvaluationError(Reason.UNREACHABLE, f"{base_url}: {type(e).__name__}: {e}") from None


async def evaluate(
    session: aiohttp.ClientSession,
    source: ScoreSource,
    now: datetime,
    *,
    endpoints: Mapping[str, str] | None = None,
    override: str | None = None,
) -> Evaluation:
    """Query, read and normalize once. Never raises for Prometheus's sake: a failure is the
    Evaluation's `error`."""
    try:
        base = base_url_of(source, endpoints or {}, override)
        status, body = await query(session, base, source.spec.query, query_timeout_s(source))
        got = read_vector(status, body, source.spec.cluster_label)
    except EvaluationError as e:
        return Evaluation(source, now, error=e)
    return Evaluation(source, now, got.values, scores_for(source.spec.normalize, got.values), got.skipped)
