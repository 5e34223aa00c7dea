"""Input objects → records on the right topic with the right key (what `fleetplace publish` sends).

Everything is read and checked before anything is sent: `plan_files` reads every file and either
returns every record or raises PublishInputError naming every bad file, document and field. An
OCM object is checked exactly as the scheduler worker admits it
(`fleetplace.shared.api.admission`), and unknown fields, unknown apiVersions and duplicated YAML
keys are errors unless relaxed (`Validation`), as with `kubectl apply --validate`.
"""

from __future__ import annotations

import difflib
import enum
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from fleetplace.shared.api.admission import read_document, read_object, read_score_source
from fleetplace.shared.api.objects import ObjectError, Validation, Warn, load_yaml, object_ref, problems_of
from fleetplace.shared.api.ocm import (
    ClaimSelector,
    ClusterTaints,
    LabelSelector,
    ManagedClusterSet,
    Placement,
)
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.envelope import new_envelope
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import (
    APPLICATIONS,
    CLUSTER_PROFILES,
    CLUSTERS,
    CLUSTERSETBINDINGS,
    CLUSTERSETS,
    PLACEMENTS,
    QUEUE_CONFIGS,
    ROLLOUTS,
    SCORE_SOURCES,
    SCORES,
    TAINTS,
    Topics,
    spec,
)
from fleetplace.shared.placement.plugins.registry import BUILT_IN
from fleetplace.shared.placement.plugins.taints import TOLERATION_OPERATORS
from fleetplace.shared.placement.selectors import OPERATORS
from fleetplace.shared.placement.weights import MODES

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


# Checks one document of a kind (raises ObjectError) and returns the record value to send.
Check = Callable[[Mapping[str, Any], str, Validation, "Warn | None"], Mapping[str, Any]]


def _ocm_object(
    body: Mapping[str, Any], where: str, validation: Validation, warn: Warn | None
) -> Mapping[str, Any]:
    """An OCM object: checked as the scheduler worker admits it, sent as written."""
    obj, _ = read_object(body, where, admission=True, validation=validation, warn=warn)
    if isinstance(obj, Placement) and warn is not None:
        _warn_cel(obj, where, warn)
        _warn_enums(obj, where, warn)
    if isinstance(obj, ManagedClusterSet) and warn is not None:
        selector = obj.spec.cluster_selector.label_selector
        for path, value, allowed in _operators(selector, "spec.clusterSelector.labelSelector"):
            _warn_value(
                warn,
                f"{where}: ManagedClusterSet {obj.metadata.name!r}",
                path,
                value,
                allowed,
                "the scheduler cannot read the set's clusters",
            )
    return body


def _operators(
    selector: LabelSelector | ClaimSelector | None, path: str
) -> Iterator[tuple[str, str, Sequence[str]]]:
    """(path, operator, the operators there are) of each of a selector's matchExpressions."""
    for j, expression in enumerate(selector.match_expressions if selector is not None else ()):
        yield f"{path}.matchExpressions[{j}].operator", expression.operator, OPERATORS


def _enum_fields(placement: Placement) -> Iterator[tuple[str, str, Sequence[str], str]]:
    """(path, value, the values there are, what another value does) of each string field of a
    Placement that OCM's API accepts as any string but the scheduler reads as one of a few."""
    misconfigured = "the scheduler will report the placement Misconfigured"
    policy = placement.spec.prioritizer_policy
    if policy.mode:  # empty: the default, Additive
        yield "spec.prioritizerPolicy.mode", policy.mode, MODES, misconfigured
    for i, config in enumerate(policy.configurations):
        coordinate = config.score_coordinate
        if coordinate is not None and coordinate.type == "BuiltIn" and config.weight != 0:
            path = f"spec.prioritizerPolicy.configurations[{i}].scoreCoordinate.builtIn"
            yield path, coordinate.built_in, tuple(BUILT_IN), misconfigured
    for i, toleration in enumerate(placement.spec.tolerations):
        if toleration.operator:  # empty: the default, Equal
            path = f"spec.tolerations[{i}].operator"
            yield path, toleration.operator, TOLERATION_OPERATORS, "the toleration tolerates nothing"
    selectors: list[tuple[str, LabelSelector | ClaimSelector | None]] = []
    for i, predicate in enumerate(placement.spec.predicates):
        path = f"spec.predicates[{i}].requiredClusterSelector"
        required = predicate.required_cluster_selector
        selectors += [(f"{path}.labelSelector", required.label_selector)]
        selectors += [(f"{path}.claimSelector", required.claim_selector)]
    for i, group in enumerate(placement.spec.decision_strategy.group_strategy.decision_groups):
        path = f"spec.decisionStrategy.groupStrategy.decisionGroups[{i}].groupClusterSelector"
        selectors += [(f"{path}.labelSelector", group.group_cluster_selector.label_selector)]
        selectors += [(f"{path}.claimSelector", group.group_cluster_selector.claim_selector)]
    for path, selector in selectors:
        for field, value, allowed in _operators(selector, path):
            yield field, value, allowed, misconfigured


def _warn_value(warn: Warn, subject: str, path: str, value: str, allowed: Sequence[str], effect: str) -> None:
    if value in allowed:
        return
    close = [a for a in allowed if a.lower() == value.lower()] or difflib.get_close_matches(
        value, allowed, n=1
    )
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    warn(f"{subject}: {path}: {value!r} is not one of {', '.join(allowed)}{hint}: {effect}")


def _warn_enums(placement: Placement, where: str, warn: Warn) -> None:
    """A typo in a field OCM's API takes as any string (`mode: Addtive`) is admitted, as the API
    server admits it, and the scheduler then reports the placement Misconfigured (or, for a
    toleration's operator, tolerates nothing): worth a warning before sending, as for CEL."""
    for path, value, allowed, effect in _enum_fields(placement):
        _warn_value(warn, f"{where}: Placement {placement.key!r}", path, value, allowed, effect)


def _warn_cel(placement: Placement, where: str, warn: Warn) -> None:
    """A CEL expression that does not compile is admitted (the API server does not compile it) and
    makes the placement Misconfigured in the scheduler: worth a warning before sending."""
    from fleetplace.shared.placement.cel import CelCompileError, compile_cel

    for i, predicate in enumerate(placement.spec.predicates):
        selector = predicate.required_cluster_selector.cel_selector
        for j, expression in enumerate(selector.cel_expressions if selector else ()):
            try:
                compile_cel(expression)
            except CelCompileError as exc:
                path = f"spec.predicates[{i}].requiredClusterSelector.celSelector.celExpressions[{j}]"
                warn(
                    f"{where}: Placement {placement.key!r}: {path}: the scheduler will report the "
                    f"placement Misconfigured: {exc}"
                )


def _cluster_taints(
    body: Mapping[str, Any], where: str, validation: Validation, warn: Warn | None
) -> Mapping[str, Any]:
    """A ClusterTaints document: sent as the taint set the worker reads, `{"taints": [...]}`."""
    document, _ = read_document(body, where, _parse_cluster_taints, validation=validation, warn=warn)
    return {
        "taints": [
            t.model_dump(mode="json", by_alias=True, exclude_defaults=True) for t in document.spec.taints
        ]
    }


def _parse_cluster_taints(raw: Any, where: str) -> ClusterTaints:
    try:
        return ClusterTaints.model_validate(raw)
    except ValidationError as e:
        raise ObjectError(
            where, object_ref(raw) if isinstance(raw, Mapping) else "document", problems_of(e)
        ) from None


def _score_source(
    body: Mapping[str, Any], where: str, validation: Validation, warn: Warn | None
) -> Mapping[str, Any]:
    """A ScoreSource: checked as the score worker reads it, sent as written."""
    read_score_source(body, where, validation=validation, warn=warn)
    return body


@dataclass(frozen=True, slots=True)
class Route:
    """Where documents of one kind go: the topic, whether the key is `namespace/name` (else the
    name), and the check that also gives the record value."""

    topic: str
    namespaced: bool
    check: Check


# One entry per publishable kind.
ROUTES: dict[str, Route] = {
    "ManagedCluster": Route(CLUSTERS, False, _ocm_object),
    "ClusterProfile": Route(CLUSTER_PROFILES, True, _ocm_object),
    "AddOnPlacementScore": Route(SCORES, True, _ocm_object),
    "ManagedClusterSet": Route(CLUSTERSETS, False, _ocm_object),
    "ManagedClusterSetBinding": Route(CLUSTERSETBINDINGS, True, _ocm_object),
    "Placement": Route(PLACEMENTS, True, _ocm_object),
    "ClusterTaints": Route(TAINTS, False, _cluster_taints),
    "Rollout": Route(ROLLOUTS, True, _ocm_object),
    "ScoreSource": Route(SCORE_SOURCES, True, _score_source),
}


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise PublishInputError(
            f"{path}: cannot read: not UTF-8 at byte {exc.start} (0x{byte:02x}): not a YAML or JSON text"
        ) from None
    except OSError as exc:
        raise PublishInputError(f"{path}: cannot read: {exc.strerror or exc}") from None


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


def _parse_text(
    text: str, name: str, validation: Validation = Validation.STRICT, warn: Warn | None = None
) -> list[Any]:
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
        return load_yaml(text, name, validation, warn)
    except ObjectError as exc:
        (_, reason), *_ = exc.problems
        if reason.startswith("not valid YAML"):
            reason = f"not valid JSON, JSON Lines or YAML: {json_error}as YAML:{reason.partition(':')[2]}"
        raise PublishInputError(f"{name}: {reason}") from None


def documents(
    text: str, name: str, validation: Validation = Validation.STRICT, warn: Warn | None = None
) -> Iterator[Document]:
    """Every document of a YAML (multi-document), JSON (object, array, k8s List) or JSON Lines text."""
    index = 0
    for doc in _parse_text(text, name, validation, warn):
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


def read_documents(
    paths: Sequence[str],
    validation: Validation = Validation.STRICT,
    warn: Warn | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[Document], list[str]]:
    """The documents of every file that reads and parses, and a problem for each that does not:
    one bad file does not hide the next. `progress` is told the count of each file's documents."""
    docs: list[Document] = []
    problems: list[str] = []
    for path in expand_paths(paths):
        try:
            read = list(documents(read_text(path), "<stdin>" if path == "-" else path, validation, warn))
        except PublishInputError as exc:
            problems.append(str(exc))
            read = []
        docs.extend(read)
        if progress is not None:
            progress(len(read))
    return docs, problems


def load_documents(
    paths: Sequence[str],
    validation: Validation = Validation.STRICT,
    warn: Warn | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Document]:
    """The documents of every file; PublishInputError naming every file that cannot be read."""
    docs, problems = read_documents(paths, validation, warn, progress)
    if problems:
        raise PublishInputError("\n".join(problems))
    return docs


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
    """YuniKorn's partition name normalisation: empty or any case of `default` is `default`;
    other names keep their case."""
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


def plan_document(
    doc: Document,
    kind: InputKind = InputKind.AUTO,
    *,
    validate: bool = True,
    validation: Validation = Validation.STRICT,
    warn: Warn | None = None,
) -> list[PlannedRecord]:
    """The records for one document, or PublishInputError saying why it cannot be published.

    With `validate`, documents are checked as the workers check them (skip it for deletes);
    `validation` says what an unknown field or apiVersion is."""
    if kind is InputKind.APPLICATION:
        return [_application_record(doc)]
    if kind is InputKind.QUEUE_CONFIG or _is_yunikorn_config(doc.body):
        return _queue_config_records(doc)
    if not isinstance(doc.body, Mapping):
        raise PublishInputError(f"{doc.where}: expected an object, got {type(doc.body).__name__}")
    object_kind = doc.body.get("kind")
    route = ROUTES.get(object_kind) if isinstance(object_kind, str) else None
    if route is None or not isinstance(object_kind, str):
        hint = ""
        if object_kind is None and "applicationID" in doc.body:
            hint = " (an application? use --kind application)"
        known = ", ".join([*ROUTES, "YuniKorn config"])
        raise PublishInputError(
            f"{doc.where}: unknown kind {object_kind!r}{hint}; publishable kinds: {known}"
        )
    key = _metadata_key(doc, object_kind, route.namespaced)
    value: Mapping[str, Any] = doc.body
    if validate:
        try:
            value = route.check(doc.body, doc.where, validation, warn)
        except ObjectError as exc:
            raise PublishInputError(str(exc)) from None
    return [PlannedRecord(doc.where, route.topic, key, value)]


def plan_records(
    docs: Iterable[Document],
    kind: InputKind = InputKind.AUTO,
    *,
    validate: bool = True,
    validation: Validation = Validation.STRICT,
    warn: Warn | None = None,
) -> list[PlannedRecord]:
    """Plan every document; if any is bad, PublishInputError names every bad one (one per line),
    so nothing is sent half-way."""
    records: list[PlannedRecord] = []
    problems: list[str] = []
    for doc in docs:
        try:
            records.extend(plan_document(doc, kind, validate=validate, validation=validation, warn=warn))
        except PublishInputError as exc:
            problems.append(str(exc))
    if problems:
        raise PublishInputError("\n".join(problems))
    return records


def plan_files(
    paths: Sequence[str],
    kind: InputKind = InputKind.AUTO,
    *,
    validate: bool = True,
    validation: Validation = Validation.STRICT,
    warn: Warn | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[PlannedRecord]:
    """Read every file and plan every document that reads; if anything is bad, PublishInputError
    names every file that cannot be read and every bad document of the others (one per line)."""
    docs, problems = read_documents(paths, validation, warn, progress)
    try:
        planned = plan_records(docs, kind, validate=validate, validation=validation, warn=warn)
    except PublishInputError as exc:
        problems.append(str(exc))
    if problems:
        raise PublishInputError("\n".join(problems))
    return planned


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
