"""`fleetplace simulate --sequence`: the worker's stepwise semantics without a bus."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleetplace.services.commands.simulate_inputs import InputError, parse_time
from fleetplace.services.scheduler.core import SchedulerOptions, SchedulerProcessor
from fleetplace.services.scheduler.ingest import ingest
from fleetplace.shared.api.admission import read_object
from fleetplace.shared.api.objects import ObjectError, Validation
from fleetplace.shared.api.ocm import PlacementDecision
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, encode_json
from fleetplace.shared.bus.publish import ROUTES, Document, PublishInputError, plan_document
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import PLACEMENTS
from fleetplace.shared.placement import apply_object
from fleetplace.shared.placement.engine import delete_object
from fleetplace.shared.placement.explain import result_json
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions


def _delete_ref(item: Any, where: str) -> tuple[str, str, str]:
    if (
        not isinstance(item, Mapping)
        or not isinstance(item.get("kind"), str)
        or not isinstance(item.get("name"), str)
    ):
        raise InputError(f"{where}: expected {{kind, namespace, name}}, got {item!r}")
    ns = item.get("namespace") or ""
    if not isinstance(ns, str):
        raise InputError(f"{where}.namespace: expected a string")
    return item["kind"], ns, item["name"]


@dataclass(frozen=True, slots=True)
class _Input:
    """One sequence input: the record the worker would consume (`topic`, `record`), or a
    PlacementDecision (`decision`, applied on its own path: see `_apply`)."""

    where: str
    topic: str = ""
    record: Record | None = None
    decision: PlacementDecision | None = None
    delete: tuple[str, str] | None = None  # a deleted PlacementDecision's (namespace, name)


class _Records:
    """Sequence documents as the records the worker would consume: the topic, key and value
    `fleetplace publish` sends for each, numbered in order as a partition would number them."""

    def __init__(self, admission: bool) -> None:
        self.admission = admission
        self.offset = 0

    def _record(self, topic: str, key: str, value: Mapping[str, Any] | None) -> Record:
        self.offset += 1
        return Record(topic, 0, self.offset, key, None if value is None else encode_json(value))

    def upsert(self, doc: Any, where: str) -> _Input:
        if isinstance(doc, Mapping) and doc.get("kind") == "PlacementDecision":
            try:
                obj, _ = read_object(doc, where, admission=self.admission, validation=Validation.IGNORE)
            except ObjectError as e:
                raise InputError(str(e)) from None
            assert isinstance(obj, PlacementDecision)
            return _Input(where, decision=obj)
        try:
            # a ClusterTaints document is sent as the taint set it declares (its route builds the
            # value); every other object is sent as written and admitted by the ingest
            kind = doc.get("kind") if isinstance(doc, Mapping) else None
            (planned,) = plan_document(
                Document(where, doc), validate=kind == "ClusterTaints", validation=Validation.IGNORE
            )
        except PublishInputError as e:
            raise InputError(str(e)) from None
        return _Input(where, planned.topic, self._record(planned.topic, planned.key, planned.value))

    def delete(self, ref: Any, where: str) -> _Input:
        kind, ns, name = _delete_ref(ref, where)
        if kind == "PlacementDecision":
            return _Input(where, delete=(ns, name))
        route = ROUTES.get(kind)
        if route is None:
            raise InputError(
                f"{where}: kind {kind!r}: expected one of {', '.join([*ROUTES, 'PlacementDecision'])}"
            )
        key = f"{ns}/{name}" if route.namespaced else name
        return _Input(where, route.topic, self._record(route.topic, key, None))


def _apply(processor: SchedulerProcessor, item: _Input, initial: bool) -> None:
    """One input into the processor through the worker's ingest; InputError with the reason the
    worker would dead-letter it for."""
    if item.decision is not None:
        # PlacementDecisions are no record of any topic the worker consumes (its decisions topic
        # carries its own DecisionDiffs, one per placement): they stand for decisions made before
        # the sequence, possibly several per placement or naming none, each counted by Balance.
        # So they load into the engine's fleet as OCM's informer would, and only in `initial`.
        if initial:
            apply_object(processor.fleet, item.decision)
        return
    if item.delete is not None:
        delete_object(processor.fleet, "PlacementDecision", *item.delete)
        return
    assert item.record is not None
    rejection = ingest(processor, item.topic, item.record, DEFAULT_LIMITS)
    if rejection is not None:
        raise InputError(f"{item.where}: {rejection.reason}")
    if item.topic == PLACEMENTS and item.record.value is None:
        # a deleted placement's decisions go with it (the worker forgets them when it publishes
        # the deletion; OCM garbage-collects its PlacementDecisions)
        assert item.record.key is not None
        processor.engine.forget(item.record.key)


def run_sequence(
    seq: Any, where: str, admission: bool = True, options: EngineOptions = DEFAULT_OPTIONS
) -> list[dict[str, Any]]:
    """The worker's stepwise semantics without a bus.

    Every object becomes the record the worker would consume and goes through the worker's
    ingest (`admission`: with the API server's defaults and validation, else as written); a
    record the worker would dead-letter fails the whole sequence, naming the object and the
    reason. After each step (deletes, then upserts, then the clock moves) every existing
    placement is evaluated once, in `order`, each seeing the decisions committed before it.
    """
    if not isinstance(seq, Mapping):
        raise InputError(f"{where}: expected an object")
    name = seq.get("name")
    order = seq.get("order") or []
    if not isinstance(order, list) or not all(isinstance(k, str) for k in order):
        raise InputError(f"{where}.order: expected a list of 'namespace/name' strings")
    initial = seq.get("initial")
    if not isinstance(initial, Mapping):
        raise InputError(f"{where}.initial: expected {{now, objects}}")
    steps = seq.get("steps")
    if not isinstance(steps, list):
        raise InputError(f"{where}.steps: expected a list")
    now = parse_time(initial.get("now"), where, "initial.now")
    objs = initial.get("objects") or []
    if not isinstance(objs, list):
        raise InputError(f"{where}.initial.objects: expected a list")
    records = _Records(admission)
    start = [records.upsert(o, f"{where}.initial.objects[{i}]") for i, o in enumerate(objs)]
    # read every step before evaluating any, so a malformed step fails the sequence cleanly
    parsed: list[tuple[datetime, list[_Input]]] = []
    for i, step in enumerate(steps):
        at = f"{where}.steps[{i}]"
        if not isinstance(step, Mapping):
            raise InputError(f"{at}: expected an object")
        t = parse_time(step["now"], at, "now") if step.get("now") is not None else None
        inputs = [records.delete(d, f"{at}.delete[{j}]") for j, d in enumerate(step.get("delete") or [])]
        inputs += [records.upsert(o, f"{at}.upsert[{j}]") for j, o in enumerate(step.get("upsert") or [])]
        parsed.append((t or now, inputs))
        now = t or now
    processor = SchedulerProcessor(SchedulerOptions(engine=options), fan_out=False, admission=admission)
    for item in start:
        _apply(processor, item, initial=True)
    engine = processor.engine
    lines = []
    for i, (t, inputs) in enumerate(parsed):
        for item in inputs:
            _apply(processor, item, initial=False)
        keys = [k for k in order if k in engine.fleet.placements]
        keys += sorted(k for k in engine.fleet.placements if k not in set(order))
        for key in keys:
            placement = engine.fleet.placements[key]
            result = engine.evaluate(key, t)
            assert result is not None
            lines.append({"name": name, "step": i} | result_json(result, name, placement, engine.fleet, t))
            engine.commit(result)
    return lines
