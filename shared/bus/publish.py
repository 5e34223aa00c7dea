"""Input objects → records on the right topic with the right key (what `fleetplace publish` sends).

Everything is read and checked before anything is sent: `plan_records` either
returns every record or raises PublishInputError naming the file and document.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.envelope import new_envelope
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import (
    APPLICATIONS,
    CLUSTERS,
    CLUSTERSETBINDINGS,
    CLUSTERSETS,
    PLACEMENTS,
    QUEUE_CONFIGS,
    ROLLOUTS,
    SCORES,
    Topics,
    spec,
)

SOURCE = "/fleetplace/publish"
_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".ndjson")


class PublishInputError(BusError):
    """A document that cannot be published; the message names the file and the document index."""


class InputKind(enum.StrEnum):
    """How to read documents: by their `kind` (OCM objects, YuniKorn configs), or all as one kind."""

    AUTO = "auto"
    APPLICATION = "application"
    QUEUE_CONFIG = "queue-config"


@dataclass(frozen=True, slots=True)
class Document:
    where: str  # "<file>#<index>", index counted from 0 over the file's documents and List items
    body: Any


@dataclass(frozen=True, slots=True)
class PlannedRecord:
    """One record to publish, before it is encoded: topic (unprefixed), key, JSON value or None."""

    where: str
    topic: str
    key: str
    value: Mapping[str, Any] | None


# kind -> (topic, key needs a namespace)
_OCM_ROUTES: dict[str, tuple[str, bool]] = {
    "ManagedCluster": (CLUSTERS, False),
    "AddOnPlacementScore": (SCORES, True),
    "ManagedClusterSet": (CLUSTERSETS, False),
    "ManagedClusterSetBinding": (CLUSTERSETBINDINGS, True),
    "Placement": (PLACEMENTS, True),
    "Rollout": (ROLLOUTS, True),
}


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PublishInputError(f"{path}: cannot read: {exc}") from None


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files as given; directories become their YAML/JSON files, sorted."""
    result: list[str] = []
    for path in paths:
        p = Path(path)
        if path != "-" and p.is_dir():
            result.extend(str(f) for f in sorted(p.rglob("*")) if f.is_file() and f.suffix in _FILE_SUFFIXES)
        else:
            result.append(path)
    return result


def _json_lines(text: str) -> list[Any]:
    """One JSON value per non-empty line; ValueError naming the first bad line."""
    docs: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                docs.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"line {number}: {exc}") from None
    return docs


def _parse_text(text: str, name: str) -> list[Any]:
    json_error = ""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [orjson.loads(text)]
        except orjson.JSONDecodeError:
            pass
        try:
            return _json_lines(text)
        except ValueError as exc:
            json_error = f"as JSON Lines: {exc}; "
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise PublishInputError(
            f"{name}: not valid JSON, JSON Lines or YAML: {json_error}as YAML: {exc}"
        ) from None
    except RecursionError:
        # PyYAML recurses once per nesting level: a hostile document must not end in a traceback
        raise PublishInputError(f"{name}: the document nests too deeply to be read") from None


def documents(text: str, name: str) -> Iterator[Document]:
    """Every document of a YAML (multi-document), JSON (object, array, k8s List) or JSON Lines text."""
    index = 0
    for doc in _parse_text(text, name):
        for item in doc if isinstance(doc, list) else [doc]:
            if (
                isinstance(item, Mapping)
                and isinstance(item.get("items"), list)
                and str(item.get("kind", "")).endswith("List")
            ):
                for sub in item["items"]:
                    yield Document(f"{name}#{index}", sub)
                    index += 1
            else:
                yield Document(f"{name}#{index}", item)
                index += 1


def load_documents(paths: Sequence[str]) -> list[Document]:
    return [doc for path in expand_paths(paths) for doc in documents(read_text(path), path)]


def _metadata_key(doc: Document, kind: str, namespaced: bool) -> str:
    meta = doc.body.get("metadata")
    if not isinstance(meta, Mapping):
        raise PublishInputError(f"{doc.where}: {kind}: metadata is missing")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise PublishInputError(f"{doc.where}: {kind}: metadata.name is missing")
    if not namespaced:
        return name
    namespace = meta.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise PublishInputError(f"{doc.where}: {kind} {name!r}: metadata.namespace is missing")
    return f"{namespace}/{name}"


def partition_key(name: Any) -> str:
    """YuniKorn's partition name normalisation (queue-placement spec §2.1): empty or any case of
    `default` is `default`; other names keep their case."""
    text = name if isinstance(name, str) else ""
    return "default" if text == "" or text.lower() == "default" else text


def _queue_config_records(doc: Document) -> list[PlannedRecord]:
    body = doc.body
    if isinstance(body, Mapping) and body.get("kind") == "ConfigMap":
        data = body.get("data")
        text = data.get("queues.yaml") if isinstance(data, Mapping) else None
        if not isinstance(text, str):
            raise PublishInputError(f"{doc.where}: ConfigMap has no data.queues.yaml (a YuniKorn config)")
        try:
            body = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise PublishInputError(f"{doc.where}: data.queues.yaml is not valid YAML: {exc}") from None
        except RecursionError:
            raise PublishInputError(f"{doc.where}: data.queues.yaml nests too deeply to be read") from None
    if not isinstance(body, Mapping):
        raise PublishInputError(f"{doc.where}: a YuniKorn config must be an object")
    if "partitions" in body:
        partitions = body["partitions"]
        if not isinstance(partitions, list) or not partitions:
            raise PublishInputError(f"{doc.where}: partitions must be a non-empty list")
    else:
        partitions = [body]  # a single partition entry
    records = []
    for i, partition in enumerate(partitions):
        if not isinstance(partition, Mapping):
            raise PublishInputError(f"{doc.where}: partitions[{i}] must be an object")
        records.append(
            PlannedRecord(doc.where, QUEUE_CONFIGS, partition_key(partition.get("name")), partition)
        )
    return records


def _application_record(doc: Document) -> PlannedRecord:
    if not isinstance(doc.body, Mapping):
        raise PublishInputError(f"{doc.where}: an application must be an object")
    app_id = doc.body.get("applicationID")
    if not isinstance(app_id, str) or not app_id:
        raise PublishInputError(f"{doc.where}: application has no applicationID")
    return PlannedRecord(doc.where, APPLICATIONS, app_id, doc.body)


def _is_yunikorn_config(body: Any) -> bool:
    if not isinstance(body, Mapping):
        return False
    if body.get("kind") == "ConfigMap":
        data = body.get("data")
        return isinstance(data, Mapping) and "queues.yaml" in data
    return "kind" not in body and isinstance(body.get("partitions"), list)


def _validate_ocm(doc: Document) -> None:
    # The same models the workers decode with: a bad object fails here, not in a dead-letter topic later.
    from fleetplace.shared.api.objects import ObjectError, parse_object

    try:
        parse_object(doc.body, doc.where)
    except ObjectError as exc:
        raise PublishInputError(str(exc)) from None


def plan_document(
    doc: Document, kind: InputKind = InputKind.AUTO, *, validate: bool = True
) -> list[PlannedRecord]:
    """The records for one document, or PublishInputError saying why it cannot be published.

    With `validate`, OCM objects are checked against the API models (skip it for deletes)."""
    if kind is InputKind.APPLICATION:
        return [_application_record(doc)]
    if kind is InputKind.QUEUE_CONFIG or _is_yunikorn_config(doc.body):
        return _queue_config_records(doc)
    if not isinstance(doc.body, Mapping):
        raise PublishInputError(f"{doc.where}: expected an object, got {type(doc.body).__name__}")
    object_kind = doc.body.get("kind")
    route = _OCM_ROUTES.get(object_kind) if isinstance(object_kind, str) else None
    if route is None or not isinstance(object_kind, str):
        hint = ""
        if object_kind is None and "applicationID" in doc.body:
            hint = " (an application? use --kind application)"
        known = ", ".join([*_OCM_ROUTES, "YuniKorn config"])
        raise PublishInputError(
            f"{doc.where}: unknown kind {object_kind!r}{hint}; publishable kinds: {known}"
        )
    topic, namespaced = route
    key = _metadata_key(doc, object_kind, namespaced)
    if validate:
        _validate_ocm(doc)
    return [PlannedRecord(doc.where, topic, key, doc.body)]


def plan_records(
    docs: Iterable[Document], kind: InputKind = InputKind.AUTO, *, validate: bool = True
) -> list[PlannedRecord]:
    """Plan every document; the first bad one raises, so nothing is sent half-way."""
    return [record for doc in docs for record in plan_document(doc, kind, validate=validate)]


def to_outgoing(
    planned: Iterable[PlannedRecord], topics: Topics, *, delete: bool = False, time: datetime | None = None
) -> list[OutgoingRecord]:
    """Encode planned records with CloudEvents headers; `delete` sends tombstones for the same keys."""
    result = []
    for p in planned:
        envelope = new_envelope(spec(p.topic).ce_type, SOURCE, time=time)
        value = None if delete or p.value is None else encode_json(p.value)
        result.append(OutgoingRecord(topics.name(p.topic), p.key, value, envelope.to_headers()))
    return result
