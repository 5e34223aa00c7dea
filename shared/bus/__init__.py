"""The bus layer: typed records, codec and envelope, topic catalogue, Kafka clients, embedded broker.

Everything that talks to Kafka goes through here; no aiokafka type leaks past it.
"""

from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.codec import (
    DecodeLimits,
    JSONObject,
    JSONValue,
    decode_object,
    decode_record,
    encode_json,
)
from fleetplace.shared.bus.envelope import DeadLetter, Envelope, new_envelope
from fleetplace.shared.bus.errors import BusError, DecodeError, TopicLayoutError
from fleetplace.shared.bus.kafka import (
    Batch,
    BroadcastReader,
    Watermark,
    caught_up,
    make_admin,
    make_consumer,
    make_producer,
    send,
    send_all,
    stop_with_leave,
    true_end_offsets,
)
from fleetplace.shared.bus.records import Delivered, OutgoingRecord, Record
from fleetplace.shared.bus.subscriber import DecisionSubscriber as DecisionSubscriber
from fleetplace.shared.bus.topics import TopicKind, Topics, ensure_topics

__all__ = [
    "Batch",
    "BroadcastReader",
    "BusError",
    "DeadLetter",
    "DecodeError",
    "DecodeLimits",
    "Delivered",
    "EmbeddedBroker",
    "Envelope",
    "JSONObject",
    "JSONValue",
    "OutgoingRecord",
    "Record",
    "TopicKind",
    "TopicLayoutError",
    "Topics",
    "Watermark",
    "caught_up",
    "decode_object",
    "decode_record",
    "encode_json",
    "ensure_topics",
    "make_admin",
    "make_consumer",
    "make_producer",
    "new_envelope",
    "send",
    "send_all",
    "stop_with_leave",
    "true_end_offsets",
]
