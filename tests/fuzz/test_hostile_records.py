"""Hostile records through the worker's own consume step, in process (no broker): property tests.

`SchedulerWorker._consume` is the decode → validate → apply step every record goes through. For any
record it must either apply it or return exactly one dead letter with a reason, never raise; a
record that was applied must never make evaluation raise; and a dead letter must be small enough
to be produced (a worker that cannot send a dead letter stops: a poison pill).
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.bus.envelope import DeadLetter
from fleetplace.shared.bus.records import Record
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.fuzz import hostile as H

PREFIX = "t."
NOW = datetime(2026, 1, 1, tzinfo=UTC)
# aiokafka's default max_request_size, and Apache Kafka's default message.max.bytes is about the same
PRODUCIBLE_BYTES = 1024 * 1024


def new_worker() -> SchedulerWorker:
    worker = SchedulerWorker(
        Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:1"), topic_prefix=PREFIX, clock="topic")
    )
    worker._assigned = {(PREFIX + "placements", p) for p in range(12)}  # owns every placement
    return worker


class Feeder:
    def __init__(self) -> None:
        self.worker = new_worker()
        self.offset = 0
        for item in [H.good_clock(0), *map(H.record, H.fleet())]:
            assert not self.feed(item)

    def feed(self, item: H.Hostile) -> list[DeadLetter]:
        self.offset += 1
        key = None if item.key is None else item.key.decode("utf-8", "surrogateescape")
        record = Record(PREFIX + item.topic, 0, self.offset, key, item.value)
        letters = []
        for out in self.worker._consume(record):
            size = (
                len(out.key_bytes or b"")
                + len(out.value or b"")
                + sum(len(k) + len(v) for k, v in out.headers)
            )
            assert size < PRODUCIBLE_BYTES, f"{item.what}: a dead letter of {size} bytes cannot be produced"
            assert out.value is not None
            import orjson

            letters.append(DeadLetter.from_value(orjson.loads(out.value)))
        return letters


@pytest.fixture(scope="module")
def feeder() -> Feeder:
    return Feeder()


@pytest.mark.parametrize("maker", list(H.ALL_MAKERS), ids=lambda m: m.__name__)
def test_each_kind_of_hostile_record_is_dead_lettered_or_applied_as_labelled(maker: H.Maker) -> None:
    feeder = Feeder()
    rng = random.Random(maker.__name__)
    for _ in range(3 if maker in (H.oversized, H.huge_strings) else 25):
        item = maker(rng)
        letters = feeder.feed(item)
        assert len(letters) == (1 if item.bad else 0), f"{item.what} on {item.topic}: {letters}"
        for letter in letters:
            assert letter.error, "a dead letter says why"
            assert letter.record.topic == PREFIX + item.topic and letter.record.offset == feeder.offset
        if not item.bad and item.value is not None:
            # a valid object that is not dead-lettered is applied, not dropped without a word
            fleet = feeder.worker.processor.fleet
            assert item.topic in ("clusters", "placements"), item.topic
            held = fleet.clusters if item.topic == "clusters" else fleet.placements
            applied = item.key is not None and item.key.decode() in held
            assert applied, f"{item.what} {item.key!r}: neither applied nor dead-lettered"
        feeder.worker.processor.evaluate(NOW, {})  # whatever was applied evaluates without raising


def test_a_dead_letter_for_an_oversized_record_is_small_enough_to_produce() -> None:
    feeder = Feeder()
    item = H.oversized(random.Random(1))
    [letter] = feeder.feed(item)
    assert "above the limit" in letter.error
    assert letter.record.value is not None and item.value is not None
    assert item.value.startswith(letter.record.value), "the dead letter keeps the start of the original"
    assert "truncated" in letter.error


def test_a_record_with_a_huge_key_is_dead_lettered_within_the_size_limit() -> None:
    feeder = Feeder()
    key = b"ns/" + b"k" * (2 * 1024 * 1024)
    letters = feeder.feed(H.Hostile("placements", key, b"{}", True, "huge-key"))
    assert len(letters) == 1


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_field_values = st.one_of(_json, st.sampled_from(["", "x", "ns/x", "gold1", "Exact", "Additive", "NoSelect"]))


@st.composite
def mutated(draw: st.DrawFn) -> H.Hostile:
    """A valid object of some input topic with one field replaced, added or removed at random."""
    topic = draw(st.sampled_from(H.INPUT_TOPICS))
    key, obj = H._valid_object(topic, random.Random(draw(st.integers(0, 2**32))))
    node = obj
    path = []
    while isinstance(node, dict) and node and draw(st.booleans()):
        name = draw(st.sampled_from(sorted(node)))
        path.append(name)
        node = node[name]
    target = obj
    for name in path[:-1]:
        target = target[name]
    field = path[-1] if path else draw(st.text(max_size=10))
    if isinstance(target, dict):
        if draw(st.integers(0, 4)) == 0:
            target.pop(field, None)
        else:
            target[field] = draw(_field_values)
    raw_key = draw(st.sampled_from([key.encode(), None, b"", key.encode() + b"\xff", b"other"]))
    return H.Hostile(topic, raw_key, H.dumps(obj), False, "mutated")  # `bad` unknown: either is fine


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(item=mutated())
def test_any_mutated_object_is_applied_or_dead_lettered_and_never_breaks_evaluation(
    feeder: Feeder, item: H.Hostile
) -> None:
    letters = feeder.feed(item)
    assert len(letters) <= 1
    started = time.perf_counter()
    feeder.worker.processor.evaluate(NOW, {})
    assert time.perf_counter() - started < 5.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    topic=st.sampled_from(H.INPUT_TOPICS),
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=300),
)
def test_arbitrary_bytes_on_any_input_topic_never_raise(
    feeder: Feeder, topic: str, key: bytes | None, value: bytes | None
) -> None:
    letters = feeder.feed(H.Hostile(topic, key, value, False, "bytes"))
    assert len(letters) <= 1
    feeder.worker.processor.evaluate(NOW, {})
