"""Scenarios of `fleetplace simulate`: plain object files pooled into one fleet, or scenario
files (a JSON object with `objects`, or a list of them) each evaluated on its own, with its
objects as written unless it says `"admission": true`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from fleetplace.services.commands.simulate_inputs import InputError, parse_time, read_objects
from fleetplace.shared.api.objects import ObjectError, Validation, Warn, documents_of
from fleetplace.shared.api.ocm import OcmObject
from fleetplace.shared.api.sigmc import slices
from fleetplace.shared.placement import Fleet, apply_object, schedule
from fleetplace.shared.placement.explain import result_json
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.placement.reasons import decision_reasons


@dataclass
class Scenario:
    where: str
    name: str | None
    now: datetime | None
    placement: str | None
    objects: list[tuple[OcmObject, Mapping[str, Any]]]
    raw: Mapping[str, Any] | None = None
    # cluster -> the namespace of the ClusterProfile it was read from (the others: ManagedClusters)
    profile_namespaces: Mapping[str, str] = field(default_factory=dict)

    @property
    def expect(self) -> Mapping[str, Any] | None:
        expect = self.raw.get("expect") if self.raw is not None else None
        return expect if isinstance(expect, Mapping) else None


def _is_scenario(doc: Any) -> bool:
    return isinstance(doc, Mapping) and "objects" in doc and "kind" not in doc


def _scenario(
    doc: Mapping[str, Any],
    where: str,
    admission: bool | None = False,
    validation: Validation | None = None,
    warn: Warn | None = None,
) -> Scenario:
    """A scenario is a test vector for the controller: its objects are read as written and
    unknown fields are ignored, unless it says `"admission": true` (then it is read as the worker
    reads), or `admission` / `validation` are given (the command line's explicit choice)."""
    if admission is None:
        admission = doc.get("admission") is True
    if validation is None:
        validation = Validation.STRICT if admission else Validation.IGNORE
    objs = doc.get("objects")
    if not isinstance(objs, list):
        raise InputError(f"{where}: objects: expected a list of Kubernetes objects")
    name = doc.get("name")
    now = parse_time(doc["now"], where, "now") if doc.get("now") is not None else None
    placement = doc.get("placement")
    if placement is not None and (not isinstance(placement, str) or placement.count("/") != 1):
        raise InputError(f"{where}: placement: expected 'namespace/name', got {placement!r}")
    docs = [(f"{where}: objects[{i}]", o) for i, o in enumerate(objs)]
    objects, namespaces = read_objects(docs, admission, validation, warn)
    return Scenario(where, name if isinstance(name, str) else None, now, placement, objects, doc, namespaces)


def scenarios_of(
    text: str,
    where: str,
    admission: bool | None = False,
    validation: Validation | None = None,
    warn: Warn | None = None,
) -> Iterator[Scenario | InputError]:
    """One file: a scenario, an array of scenarios, or plain objects (one scenario)."""
    for entry in _entries(text, where, admission, validation, warn):
        if isinstance(entry, list):
            try:
                objects, namespaces = read_objects(
                    entry, admission is True, validation or Validation.IGNORE, warn
                )
                yield Scenario(where, None, None, None, objects, None, namespaces)
            except InputError as e:
                yield e
        else:
            yield entry


def _entries(
    text: str,
    where: str,
    admission: bool | None,
    validation: Validation | None,
    warn: Warn | None,
) -> Iterator[Scenario | InputError | list[tuple[str, Any]]]:
    """A scenario file's scenarios, or a plain file's documents (for the caller to pool)."""
    try:
        docs = list(documents_of(text, where, validation or Validation.STRICT, warn))
    except ObjectError as e:
        yield InputError(str(e))
        return
    if docs and all(_is_scenario(d) for _, d in docs):
        for i, (_, d) in enumerate(docs):
            label = where if len(docs) == 1 else f"{where}[{i}]"
            try:
                yield _scenario(d, label, admission, validation, warn)
            except InputError as e:
                yield e
        return
    yield docs


def load_scenarios(
    sources: Sequence[tuple[str, str]],
    admission: bool | None,
    validation: Validation | None,
    warn: Warn | None,
) -> list[Scenario | InputError]:
    """Every scenario of the sources, in order; the plain object files together are one scenario,
    in the place of the first of them, read as the worker reads (unless `admission` is False)."""
    entries: list[Scenario | InputError] = []
    pooled: list[tuple[str, Any]] = []
    pool_files: list[str] = []
    pool_at: int | None = None
    for where, text in sources:
        for entry in _entries(text, where, admission, validation, warn):
            if isinstance(entry, list):
                pooled.extend(entry)
                pool_files.append(where)
                if pool_at is None:
                    pool_at = len(entries)
                    entries.append(InputError("placeholder"))
            else:
                entries.append(entry)
    if pool_at is not None:
        where = ", ".join(pool_files)
        try:
            objects, namespaces = read_objects(
                pooled, admission is not False, validation or Validation.STRICT, warn
            )
            entries[pool_at] = Scenario(where, None, None, None, objects, None, namespaces)
        except InputError as e:
            entries[pool_at] = e
    return entries


def expect_mismatches(line: Mapping[str, Any], expect: Mapping[str, Any]) -> list[str]:
    """Where a result differs from a scenario's `expect`: every key `expect` has is compared
    exactly, except that a condition is compared only on the fields the expected one gives."""
    out = []
    for key, wanted in expect.items():
        got = line.get(key)
        if key == "conditions" and isinstance(wanted, list) and isinstance(got, list):
            got = [
                {k: c.get(k) for k in w} if isinstance(w, Mapping) and isinstance(c, Mapping) else c
                for w, c in zip(wanted, got, strict=False)
            ] + got[len(wanted) :]
        if got != wanted:
            out.append(f"{key}: expected {orjson.dumps(wanted).decode()}, got {orjson.dumps(got).decode()}")
    return out


def run_scenario(
    sc: Scenario,
    only: str | None,
    default_now: datetime,
    options: EngineOptions = DEFAULT_OPTIONS,
    sigmc: SigmcRefs | None = None,
) -> list[dict[str, Any]]:
    """One line per evaluated placement; with `sigmc`, each line also holds the decision as
    SIG-Multicluster PlacementDecision slices (`sigmc`), with every decision's reason."""
    fleet = Fleet()
    for obj, raw in sc.objects:
        apply_object(fleet, obj, raw)
    now = sc.now or default_now
    wanted = only or sc.placement
    if wanted is not None:
        if wanted not in fleet.placements:
            raise InputError(f"{sc.where}: placement: {wanted!r} is not among the objects")
        keys = [wanted]
    else:
        keys = sorted(fleet.placements)
        if not keys:
            raise InputError(f"{sc.where}: objects: no Placement to evaluate")
    out = []
    for key in keys:
        placement = fleet.placements[key]
        result = schedule(placement, fleet, now, options=options)
        line = result_json(result, sc.name, placement, fleet, now)
        if sigmc is not None:
            groups = [(g["groupName"], g["groupIndex"], g["clusters"]) for g in line["decisionGroups"]]
            resolve = sigmc.resolver(placement.metadata.namespace, sc.profile_namespaces)
            line["sigmc"] = slices(key, groups, decision_reasons(result, placement, fleet), resolve)
        out.append(line)
    return out


@dataclass(frozen=True, slots=True)
class SigmcRefs:
    """Where SIG-MC decisions reference the ClusterProfile of a cluster: the namespace of the
    profile it was read from; for a ManagedCluster, `cluster_namespace` (empty: the placement's)."""

    cluster_namespace: str = ""

    def resolver(self, placement_namespace: str, profiles: Mapping[str, str]) -> Callable[[str], str]:
        default = self.cluster_namespace or placement_namespace
        return lambda cluster: profiles.get(cluster, default)
