"""Process settings from the environment.

Two groups: the standard `KAFKA_*` variables every Kafka tool understands, and
fleetplace's own `FLEETPLACE_*` variables. Secrets are `SecretStr`, so they never
show up in `repr()`, in `model_dump()` output or in log lines.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
ClockSource = Literal["wall", "topic"]
LogFormat = Literal["json", "console"]
LogLevel = Literal["debug", "info", "warning", "error", "critical"]


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
    # record twice. Apache Kafka supports it: turn it on there. Off by default because the embedded
    # broker does not (its producer start fails).
    enable_idempotence: bool = False

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

    topic_prefix: str = "fleetplace."
    topic_replication_factor: int = Field(default=1, ge=1)

    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)
    # When set, debug routes require `Authorization: Bearer <token>`.
    debug_token: SecretStr | None = None

    # Intervals from OCM: the informer resync (10 min) and the AddOn score resync (5 min).
    resync_interval_s: float = Field(default=600.0, gt=0)
    addon_resync_interval_s: float = Field(default=300.0, gt=0)
    clock: ClockSource = "wall"
    # Beyond OCM, off by default: "penalize" scores untolerated PreferNoSelect taints -100.
    prefer_no_select: Literal["ignore", "penalize"] = "ignore"

    scheduler_group_id: str = "fleetplace-scheduler"
    queue_placer_group_id: str = "fleetplace-queue-placer"
    rollout_group_id: str = "fleetplace-rollout"

    log_level: LogLevel = "info"
    log_format: LogFormat = "json"

    # Decode limits: hostile input is rejected with a reason instead of exhausting memory.
    max_record_bytes: int = Field(default=1024 * 1024, gt=0)
    max_json_depth: int = Field(default=64, gt=0, le=1000)
