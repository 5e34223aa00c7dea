"""What the Kubernetes API server does to OCM objects before the controller sees them.

`admit(raw)` applies the CRD defaults (a nested default applies only where its parent object is
present: a policy without `configurations` gets no configuration) and the CRD/webhook validation,
and returns the defaulted document or raises `AdmissionError` naming the object and every
offending field. The worker admits every record it consumes, so a hand-written Placement on the
bus means what it would mean in a cluster (a configuration without `weight` has weight 1), and
drops the fields no schema knows, as the API server does. `fleetplace publish` and
`fleetplace simulate` run the same admission (`read_object`), and by default also refuse unknown
fields and duplicated keys, as `kubectl` does; `simulate --as-written` reads objects as the
controller would see them without an API server.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fleetplace.shared.api.cluster_profiles import profile_problems
from fleetplace.shared.api.fields import API_VERSIONS, unknown_fields
from fleetplace.shared.api.names import metadata_problems
from fleetplace.shared.api.objects import Document, ObjectError, Validation, Warn, object_ref, parse_object
from fleetplace.shared.api.score_sources import ScoreSource, parse_score_source

__all__ = ["AdmissionError", "admit", "check_fields", "read_document", "read_object", "read_score_source"]

T = TypeVar("T")

# Told the paths of the fields admission dropped from one object (the worker counts them).
DroppedFields = Callable[[list[str]], None]


class AdmissionError(ObjectError):
    """An object the API server would reject."""


_TAINT_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_GROUP_NAME = re.compile(r"^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$")
_GROUP_SIZE = re.compile(r"^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$")
_RATE_LIMIT = re.compile(r"^[0-9]+[hms]$")
_EFFECTS = ("NoSelect", "PreferNoSelect", "NoSelectIfNew")
_NAMESPACED = (
    "Placement",
    "ManagedClusterSetBinding",
    "AddOnPlacementScore",
    "PlacementDecision",
    "Rollout",
    "ScoreSource",
)


def _obj(v: Any) -> dict[str, Any] | None:
    return v if isinstance(v, dict) else None


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _default_placement(doc: dict[str, Any]) -> None:
    spec = _obj(doc.get("spec"))
    if spec is None:
        return
    policy = _obj(spec.get("prioritizerPolicy"))
    if policy is not None:
        policy.setdefault("mode", "Additive")
        for config in _list(policy.get("configurations")):
            if isinstance(config, dict):
                config.setdefault("weight", 1)
                coord = _obj(config.get("scoreCoordinate"))
                if coord is not None:
                    coord.setdefault("type", "BuiltIn")
    for tol in _list(spec.get("tolerations")):
        if isinstance(tol, dict):
            tol.setdefault("operator", "Equal")
    strategy = _obj(spec.get("decisionStrategy"))
    group = _obj(strategy.get("groupStrategy")) if strategy else None
    if group is not None:
        group.setdefault("clustersPerDecisionGroup", "100%")
    spread = _obj(spec.get("spreadPolicy"))
    for term in _list(spread.get("spreadConstraints")) if spread else []:
        if isinstance(term, dict):
            term.setdefault("maxSkew", 1)
            term.setdefault("whenUnsatisfiable", "ScheduleAnyway")
    spec.setdefault("sortBy", "ClusterName")
    spec.setdefault("scoreRateLimit", "1m")


def _default_set(doc: dict[str, Any]) -> None:
    spec = doc.setdefault("spec", {})
    if isinstance(spec, dict):
        selector = spec.setdefault("clusterSelector", {})
        if isinstance(selector, dict):
            selector.setdefault("selectorType", "ExclusiveClusterSetLabel")


def _check_taint_like(
    item: Mapping[str, Any], path: str, problems: list[tuple[str, str]], *, taint: bool
) -> None:
    key = item.get("key")
    if taint and not key:
        problems.append((f"{path}.key", "Required value"))
    if isinstance(key, str) and key:
        if len(key) > 316:
            problems.append((f"{path}.key", "may not be longer than 316"))
        elif not _TAINT_KEY.match(key):
            problems.append((f"{path}.key", f"should match '{_TAINT_KEY.pattern}'"))
    value = item.get("value")
    if isinstance(value, str) and len(value) > 1024:
        problems.append((f"{path}.value", "may not be longer than 1024"))
    effect = item.get("effect")
    if (taint or effect) and effect not in _EFFECTS:
        problems.append(
            (f"{path}.effect", f"Unsupported value: {effect!r}: supported values: {', '.join(_EFFECTS)}")
        )


def _validate(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    kind = doc.get("kind")
    problems.extend(_api_version(doc))
    spec = _obj(doc.get("spec")) or {}
    status = _obj(doc.get("status")) or {}
    meta = _obj(doc.get("metadata")) or {}
    if not meta.get("name"):
        problems.append(("metadata.name", "Required value"))
    namespaced = kind in _NAMESPACED
    if namespaced and not meta.get("namespace"):
        problems.append(("metadata.namespace", "Required value"))
    # names, namespaces, label keys and values, annotation keys: the API server's rules (docs/names.md)
    problems.extend(metadata_problems(meta, namespaced=True if namespaced else None))
    if kind in ("ManagedCluster", "ClusterTaints"):
        for i, t in enumerate(_list(spec.get("taints"))):
            if isinstance(t, dict):
                _check_taint_like(t, f"spec.taints[{i}]", problems, taint=True)
        for i, c in enumerate(_list(status.get("clusterClaims"))):
            if isinstance(c, dict):
                if not 1 <= len(str(c.get("name", ""))) <= 253:
                    problems.append((f"status.clusterClaims[{i}].name", "length must be 1..253"))
                if not 1 <= len(str(c.get("value", ""))) <= 1024:
                    problems.append((f"status.clusterClaims[{i}].value", "length must be 1..1024"))
    elif kind == "ClusterProfile":
        problems.extend(profile_problems(doc))
    elif kind == "ManagedClusterSet":
        st = (_obj(spec.get("clusterSelector")) or {}).get("selectorType")
        if st not in ("ExclusiveClusterSetLabel", "LabelSelector"):
            problems.append(("spec.clusterSelector.selectorType", f"Unsupported value: {st!r}"))
    elif kind == "ManagedClusterSetBinding":
        if not spec.get("clusterSet"):
            problems.append(("spec.clusterSet", "Required value"))
        elif spec.get("clusterSet") != meta.get("name"):
            # the registration webhook forces metadata.name == spec.clusterSet
            problems.append(("metadata.name", "must equal spec.clusterSet"))
    elif kind == "Placement":
        policy = _obj(spec.get("prioritizerPolicy")) or {}
        for i, c in enumerate(_list(policy.get("configurations"))):
            path = f"spec.prioritizerPolicy.configurations[{i}]"
            if not isinstance(c, dict):
                continue
            coord = _obj(c.get("scoreCoordinate"))
            if coord is None:
                problems.append((f"{path}.scoreCoordinate", "Required value"))
            else:
                if coord.get("type") not in ("BuiltIn", "AddOn"):
                    problems.append(
                        (f"{path}.scoreCoordinate.type", f"Unsupported value: {coord.get('type')!r}")
                    )
                addon = _obj(coord.get("addOn"))
                if addon is not None:
                    for field in ("resourceName", "scoreName"):
                        if not addon.get(field):
                            problems.append((f"{path}.scoreCoordinate.addOn.{field}", "Required value"))
            w = c.get("weight")
            if isinstance(w, int) and not -10 <= w <= 10:
                problems.append((f"{path}.weight", "should be in [-10, 10]"))
        for i, t in enumerate(_list(spec.get("tolerations"))):
            if isinstance(t, dict):
                _check_taint_like(t, f"spec.tolerations[{i}]", problems, taint=False)
        strategy = (
            _obj(_obj(spec.get("decisionStrategy") or {}) and spec["decisionStrategy"].get("groupStrategy"))
            or {}
        )
        for i, g in enumerate(_list(strategy.get("decisionGroups"))):
            if isinstance(g, dict):
                name = g.get("groupName")
                if not isinstance(name, str) or not _GROUP_NAME.match(name):
                    problems.append(
                        (
                            f"spec.decisionStrategy.groupStrategy.decisionGroups[{i}].groupName",
                            f"should match '{_GROUP_NAME.pattern}'",
                        )
                    )
        size = strategy.get("clustersPerDecisionGroup")
        if isinstance(size, str) and not _GROUP_SIZE.match(size):
            problems.append(
                (
                    "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup",
                    f"should match '{_GROUP_SIZE.pattern}'",
                )
            )
        spread = _obj(spec.get("spreadPolicy")) or {}
        terms = _list(spread.get("spreadConstraints"))
        if len(terms) > 8:
            problems.append(("spec.spreadPolicy.spreadConstraints", "must have at most 8 items"))
        for i, term in enumerate(terms):
            path = f"spec.spreadPolicy.spreadConstraints[{i}]"
            if not isinstance(term, dict):
                continue
            key = term.get("topologyKey")
            if not isinstance(key, str) or not key or len(key) > 316 or not _TAINT_KEY.match(key):
                problems.append((f"{path}.topologyKey", "Required value matching the label-key pattern"))
            if term.get("topologyKeyType") not in ("Label", "Claim"):
                problems.append(
                    (f"{path}.topologyKeyType", f"Unsupported value: {term.get('topologyKeyType')!r}")
                )
            skew = term.get("maxSkew")
            if isinstance(skew, int) and skew < 1:
                problems.append((f"{path}.maxSkew", "should be greater than or equal to 1"))
            if term.get("whenUnsatisfiable") not in ("DoNotSchedule", "ScheduleAnyway"):
                problems.append(
                    (f"{path}.whenUnsatisfiable", f"Unsupported value: {term.get('whenUnsatisfiable')!r}")
                )
        if spec.get("sortBy") not in ("ClusterName", "Score"):
            problems.append(("spec.sortBy", f"Unsupported value: {spec.get('sortBy')!r}"))
        rate = spec.get("scoreRateLimit")
        if not isinstance(rate, str) or not _RATE_LIMIT.match(rate):
            problems.append(("spec.scoreRateLimit", f"should match '{_RATE_LIMIT.pattern}'"))
    elif kind == "AddOnPlacementScore":
        for i, s in enumerate(_list(status.get("scores"))):
            if isinstance(s, dict):
                if not s.get("name"):
                    problems.append((f"status.scores[{i}].name", "Required value"))
                v = s.get("value")
                if not isinstance(v, int) or not -100 <= v <= 100:
                    problems.append((f"status.scores[{i}].value", "should be an integer in [-100, 100]"))
    return problems


def _api_version(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """An apiVersion the kind is not served in (an absent one means the kind's current version)."""
    version, kind = doc.get("apiVersion"), doc.get("kind")
    served = API_VERSIONS.get(kind) if isinstance(kind, str) else None
    if version is None or served is None or version in served:
        return []
    return [("apiVersion", f"{version!r} does not serve {kind}; expected {' or '.join(served)}")]


def admit(raw: Mapping[str, Any], where: str = "", *, dropped: DroppedFields | None = None) -> dict[str, Any]:
    """The defaulted object, or AdmissionError with every problem the API server would report.

    `dropped`, when given, is told the fields no schema knows (the models ignore them)."""
    kind = raw.get("kind")
    # only Placements and sets get defaults; other kinds are validated without copying
    doc = copy.deepcopy(dict(raw)) if kind in ("Placement", "ManagedClusterSet") else dict(raw)
    if kind == "Placement":
        _default_placement(doc)
    elif kind == "ManagedClusterSet":
        _default_set(doc)
    problems = _validate(doc)
    if problems:
        raise AdmissionError(where, object_ref(doc), problems)
    if dropped is not None:
        unknown = unknown_fields(doc)
        if unknown:
            dropped(unknown)
    return doc


def check_fields(
    raw: Mapping[str, Any], where: str, validation: Validation, warn: Warn | None = None
) -> None:
    """kubectl's `--validate` for one object: unknown fields and an apiVersion the kind is not
    served in are an ObjectError (strict), a warning (warn) or nothing (ignore)."""
    problems = _field_problems(raw, validation, where, warn)
    if problems:
        raise ObjectError(where, object_ref(raw), problems)


def _field_problems(
    raw: Mapping[str, Any], validation: Validation, where: str, warn: Warn | None
) -> list[tuple[str, str]]:
    """The strict problems (to report with any others), after warning about them when asked."""
    if validation is Validation.IGNORE:
        return []
    problems = [(path, "unknown field") for path in unknown_fields(raw)] + _api_version(raw)
    if problems and validation is Validation.WARN:
        if warn is not None:
            warn(str(ObjectError(where, object_ref(raw), problems)))
        return []
    return problems


def read_object(
    raw: Any,
    where: str,
    *,
    admission: bool = True,
    validation: Validation = Validation.STRICT,
    warn: Warn | None = None,
) -> tuple[Document, Mapping[str, Any]]:
    """One document as the product reads user input: fields checked (`validation`), then admitted
    as the worker admits it (or, without `admission`, taken as written), then parsed.

    Returns the object and the document it was parsed from; raises ObjectError naming every
    problem of the document."""
    return read_document(raw, where, parse_object, admission=admission, validation=validation, warn=warn)


def read_document(
    raw: Any,
    where: str,
    parse: Callable[[Any, str], T],
    *,
    admission: bool = True,
    validation: Validation = Validation.STRICT,
    warn: Warn | None = None,
) -> tuple[T, Mapping[str, Any]]:
    """`read_object` for any kind `admit` knows, parsed by `parse` (which raises ObjectError)."""
    fields = _field_problems(raw, validation, where, warn) if isinstance(raw, Mapping) else []
    try:
        if admission and isinstance(raw, Mapping):
            raw = admit(raw, where)
        obj = parse(raw, where)
    except ObjectError as e:
        problems = fields + [p for p in e.problems if p not in fields]
        raise ObjectError(where, e.obj, problems) from None
    if fields:
        raise ObjectError(where, object_ref(raw), fields)
    return obj, raw


def read_score_source(
    raw: object, where: str, *, validation: Validation = Validation.STRICT, warn: Warn | None = None
) -> ScoreSource:
    """A ScoreSource as `publish` and the score worker read it: fields checked, admitted, parsed."""
    source, _ = read_document(raw, where, parse_score_source, validation=validation, warn=warn)
    return source
