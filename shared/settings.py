"""Process settings from the environment.

Two groups: the standard `KAFKA_*` variables every Kafka tool understands, and
fleetplace's own `FLEETPLACE_*` variables. Secrets are `SecretStr`, so they never
show up in `repr()`, in `model_dump()` output or in log lines.

An invalid value is reported by the environment variable that holds it, as an operator wrote
it (`FLEETPLACE_HTTP_PORT: not a valid integer: 'abc'`), never by the Python field; the value
itself is shown except for secrets (docs/operations.md, Settings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, Json, SecretStr, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

from fleetplace.shared.wording import plain

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
ClockSource = Literal["wall", "topic"]
LogFormat = Literal["json", "console"]
LogLevel = Literal["debug", "info", "warning", "error", "critical"]
# A broker capability a setting turns on, off, or leaves to a probe of the broker at start-up.
Capability = Literal["auto", "true", "false"]

SECRET_FIELDS = frozenset({"sasl_password", "debug_token"})
_ERROR_TYPE = "invalid_setting"
# a Prometheus base URL, as a ScoreSource's `spec.prometheus.url` must be one
_HTTP_URL = re.compile(r"^https?://[^/\s]+")


def _problem(error: Mapping[str, Any], field: str) -> str:
    # pydantic's sentence said in an operator's words (shared/wording.py)
    phrase = plain(error)
    given = error.get("input")
    if isinstance(given, str | int | float) and field not in SECRET_FIELDS:
        return f"{phrase}: {given!r}"
    return phrase


def by_variable(exc: ValidationError, env_prefix: str) -> ValidationError:
    """The same errors, each located at the environment variable that holds the value."""
    details: list[InitErrorDetails] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] == _ERROR_TYPE:  # already said by variable (a nested settings group)
            details.append(
                {
                    "type": PydanticCustomError(_ERROR_TYPE, str(error["msg"])),
                    "loc": loc,
                    "input": error["input"],
                }
            )
            continue
        prefix, path = env_prefix, loc
        if path and path[0] == "kafka":
            prefix, path = KafkaSettings.model_config.get("env_prefix", ""), path[1:]
        field = str(path[0]) if path else ""
        # a rule across fields names its variables in its own message: no location of its own
        name = f"{prefix}{field}".upper() if field else ""
        problem = _problem(error, field)
        details.append(
            {
                "type": PydanticCustomError(_ERROR_TYPE, "{problem}", {"problem": problem}),
                "loc": (name,) if name else (),
                "input": "**********" if field in SECRET_FIELDS else error["input"],
            }
        )
    return ValidationError.from_exception_data(exc.title, details)


def describe(exc: ValidationError) -> str:
    """One line for an operator: `FLEETPLACE_HTTP_PORT: not a valid integer: 'abc'; ...`."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else str(e["msg"]) for e in exc.errors()
    )


class KafkaSettings(BaseSettings):
    """Where the brokers are and how to authenticate: `KAFKA_BOOTSTRAP_SERVERS`, `KAFKA_SASL_*`, `KAFKA_SSL_*`."""

    model_config = SettingsConfigDict(env_prefix="KAFKA_", extra="ignore", frozen=True)

    # None means "no Kafka configured": `fleetplace demo` and the tests then start the embedded broker.
    bootstrap_servers: str | None = None
    client_id: str = "fleetplace"
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    # Idempotent producers: a retry after a lost acknowledgement (a broker restart) cannot write a
    # record twice. "auto": a worker probes the broker at start-up and uses them where it offers
    # them (Apache Kafka does, the embedded broker does not); other tools use them only with "true".
    enable_idempotence: Capability = "auto"
    # Exactly-once output (docs/deployment.md#delivery): each evaluation's records and the input
    # offsets it consumed commit in one transaction. "auto": probed at start-up, like idempotence.
    transactions: Capability = "auto"

    @field_validator("enable_idempotence", "transactions", mode="before")
    @classmethod
    def _capability(cls, value: Any) -> Any:
        """A boolean, or a word an operator writes for one, as "true"/"false"."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            word = value.strip().lower()
            return {
                "1": "true",
                "yes": "true",
                "on": "true",
                "0": "false",
                "no": "false",
                "off": "false",
            }.get(word, word)
        return value

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise by_variable(exc, "KAFKA_") from None

    @model_validator(mode="after")
    def _sasl_needs_credentials(self) -> KafkaSettings:
        if self.security_protocol.startswith("SASL_") and (
            not self.sasl_username or self.sasl_password is None
        ):
            raise ValueError(
                f"KAFKA_SECURITY_PROTOCOL={self.security_protocol} needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"
            )
        if bool(self.ssl_certfile) != bool(self.ssl_keyfile):
            raise ValueError("KAFKA_SSL_CERTFILE and KAFKA_SSL_KEYFILE must be set together")
        return self

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")


class Settings(BaseSettings):
    """Settings of a fleetplace process (`FLEETPLACE_*`), with the Kafka connection nested under `kafka`."""

    model_config = SettingsConfigDict(env_prefix="FLEETPLACE_", extra="ignore", frozen=True)

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise by_variable(exc, "FLEETPLACE_") from None

    topic_prefix: str = "fleetplace."
    topic_replication_factor: int = Field(default=1, ge=1)
    # Set by `topics create` on the compacted topics (docs/operations.md#compaction): how long a
    # version is kept before the cleaner may drop it (the audit window), and a tombstone after.
    topic_min_compaction_lag_ms: int = Field(default=7 * 24 * 3600 * 1000, ge=0)
    topic_delete_retention_ms: int = Field(default=24 * 3600 * 1000, ge=0)

    def compaction(self) -> dict[str, str]:
        """The topic settings `topics create` gives the compacted topics."""
        return {
            "min.compaction.lag.ms": str(self.topic_min_compaction_lag_ms),
            "delete.retention.ms": str(self.topic_delete_retention_ms),
        }

    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)
    # When set, debug routes require `Authorization: Bearer <token>`.
    debug_token: SecretStr | None = None
    # Host names the explorer answers to besides the loopback names and the address it binds,
    # comma-separated (a request naming any other host is refused: DNS rebinding).
    explorer_hosts: str = ""
    # The hub the explorer asks for shadow mode's agreement on a placement's page (docs/hub.md):
    # a kubeconfig; empty, the explorer shows no agreement and never talks to a hub.
    explorer_hub_kubeconfig: str = ""

    # Intervals from OCM: the informer resync (10 min) and the AddOn score resync (5 min).
    resync_interval_s: float = Field(default=600.0, gt=0)
    addon_resync_interval_s: float = Field(default=300.0, gt=0)
    clock: ClockSource = "wall"
    # Beyond OCM, off by default: "penalize" scores untolerated PreferNoSelect taints -100.
    prefer_no_select: Literal["ignore", "penalize"] = "ignore"

    # Outputs beside the decisions (docs/cluster-inventory.md): SIG-Multicluster PlacementDecision
    # slices on their own topic (off unless asked for: every changed decision then writes a second,
    # larger record), the namespace their references give a ManagedCluster's profile (empty: the
    # placement's), and the decision reason in OCM's own PlacementDecisions (OCM leaves it empty;
    # off, so that output stays as OCM writes it).
    sigmc_decisions: bool = False
    sigmc_cluster_namespace: str = ""
    ocm_decision_reasons: bool = False

    # The consumer-group session of every worker: an instance that dies (SIGKILL, a lost node) is
    # replaced once it expires, so it bounds how long its placements go unserved. Kafka brokers
    # refuse a session shorter than their `group.min.session.timeout.ms` (6 s by default); a
    # longer one rides out longer pauses (docs/operations.md#running-several-workers).
    group_session_timeout_ms: int = Field(default=6000, ge=1000, le=3_600_000)

    scheduler_group_id: str = "fleetplace-scheduler"
    queue_placer_group_id: str = "fleetplace-queue-placer"
    rollout_group_id: str = "fleetplace-rollout"
    score_group_id: str = "fleetplace-scores"
    # Named Prometheus endpoints a ScoreSource may use instead of a URL (`spec.prometheus.endpoint`),
    # as JSON: {"main": "http://prometheus:9090"}. Json[...] makes a value that is not JSON an
    # error of this variable (a dict field would fail in the settings source, unnamed).
    prometheus_endpoints: Json[dict[str, str]] = "{}"  # type: ignore[assignment]

    @field_validator("prometheus_endpoints")
    @classmethod
    def _endpoint_urls(cls, value: dict[str, str]) -> dict[str, str]:
        """Each endpoint an http:// or https:// URL: said when the settings load, not at the
        first query of a source that names it."""
        bad = [name for name, url in value.items() if not _HTTP_URL.match(url)]
        if bad:
            names = ", ".join(repr(n) for n in bad)
            raise ValueError(f"endpoint {names} is not an http:// or https:// URL")
        return value

    # The hub bridge (docs/hub.md): its kubeconfig (empty: $KUBECONFIG, ~/.kube/config, else the
    # pod's ServiceAccount), its requests per second and burst (OCM's controllers use 50 and 100),
    # and the Lease that keeps one bridge active per hub, with client-go's leader-election times
    # (empty namespace: the pod's own, else `default`).
    hub_kubeconfig: str = ""
    hub_qps: float = Field(default=50.0, gt=0)
    hub_burst: int = Field(default=100, ge=1)
    hub_lease_namespace: str = ""
    hub_lease_name: str = "fleetplace-hub"
    hub_lease_duration_s: float = Field(default=15.0, gt=0)
    hub_lease_renew_deadline_s: float = Field(default=10.0, gt=0)
    hub_lease_retry_s: float = Field(default=2.0, gt=0)
    # A watch is ended by the API server after this long (spread up to twice it) and resumed.
    hub_watch_timeout_s: int = Field(default=300, ge=1)
    # shadow: SIG-MC slices beside OCM's decisions; replace: OCM's own PlacementDecisions and
    # Placement status, for a hub where OCM's placement controller does not run (docs/hub.md)
    hub_mode: Literal["shadow", "replace"] = "shadow"

    log_level: LogLevel = "info"
    log_format: LogFormat = "json"

    # Decode limits: hostile input is rejected with a reason instead of exhausting memory.
    max_record_bytes: int = Field(default=1024 * 1024, gt=0)
    max_json_depth: int = Field(default=64, gt=0, le=1000)
