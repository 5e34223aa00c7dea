"""Exceptions of the bus layer: one base class, one subclass per way things go wrong."""

from __future__ import annotations


class BusError(Exception):
    """Base class of every error raised by `fleetplace.shared.bus`."""


class BusConfigError(BusError):
    """The Kafka client settings are incomplete or contradictory."""


class BusConnectionError(BusError):
    """The brokers could not be reached (wrong address, broker down, TLS/SASL failure)."""


class DecodeError(BusError):
    """A record could not be decoded; `reason` says why, in words fit for a dead-letter record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RecordTooLargeError(DecodeError):
    """The record's value is larger than the configured limit."""


class NestingTooDeepError(DecodeError):
    """The JSON value nests deeper than the configured limit."""


class MalformedJSONError(DecodeError):
    """The value is not valid JSON, or not the JSON shape the topic requires."""


class InvalidKeyError(DecodeError):
    """The record key is missing or not valid UTF-8."""


class EnvelopeError(DecodeError):
    """The CloudEvents headers are missing or malformed."""


class TopicLayoutError(BusError):
    """The topics on the broker do not match the catalogue (missing, or co-partitioning broken)."""


class BrokerError(BusError):
    """The embedded broker could not be started or stopped."""


class BrokerPortInUseError(BrokerError):
    """The requested port is taken (Tansu then exits with status 0, so this is detected from its log)."""
