"""`fleetplace simulate`: OCM's placement debugger as a command.

"Why was my cluster (not) picked?" — evaluates placements against objects from files, with the
same engine the worker runs, and prints the decision with its full explanation.

Two kinds of input: plain object files (YAML/JSON documents, `kind: List`), which together form
one fleet however many files, directories or `-f` they come from, and read as the worker reads
them (the API server's defaults and validation); and scenario files (a JSON object with
`objects`, or a list of them), each scenario evaluated on its own, with its objects as written
unless it says `"admission": true`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic import TypeAdapter, ValidationError

from fleetplace.services.commands.output import (
    Files,
    Output,
    ValidateOption,
    paragraphs,
    parse_output,
    progress,
    table_console,
    write_json,
    write_yaml,
)
from fleetplace.services.scheduler.core import SchedulerOptions, SchedulerProcessor
from fleetplace.services.scheduler.ingest import ingest
from fleetplace.shared.api.admission import read_object
from fleetplace.shared.api.cluster_profiles import ClusterProfile
from fleetplace.shared.api.cluster_sources import fold_cluster_sources, profile_namespaces
from fleetplace.shared.api.objects import Document as ObjectDocument
from fleetplace.shared.api.objects import ObjectError, Validation, Warn, documents_of
from fleetplace.shared.api.ocm import ClusterTaints, OcmObject, PlacementDecision
from fleetplace.shared.api.rollouts import Rollout
from fleetplace.shared.api.sigmc import slices
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, encode_json
from fleetplace.shared.bus.publish import ROUTES, Document, PublishInputError, plan_document
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import PLACEMENTS
from fleetplace.shared.placement import Fleet, apply_object, schedule
from fleetplace.shared.placement.engine import delete_object
from fleetplace.shared.placement.explain import result_json
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.placement.reasons import decision_reasons

_TIME = TypeAdapter(datetime)
SIGMC_OUTPUT = "sig-mc"


class InputError(Exception):
    """Bad input: the message names the file, the field and the reason."""


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


def parse_time(text: Any, where: str, field: str) -> datetime:
    try:
        t = _TIME.validate_python(text)
    except ValidationError:
        raise InputError(f"{where}: {field}: not an RFC 3339 time: {text!r}") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _objects(
    docs: Sequence[tuple[str, Any]],
    admission: bool = False,
    validation: Validation = Validation.IGNORE,
    warn: Warn | None = None,
) -> tuple[list[tuple[OcmObject, Mapping[str, Any]]], dict[str, str]]:
    """Parse documents as written, or (admission) as an API server would store them; with the
    namespaces of the profiles clusters were read from (`profile_namespaces`).

    Every bad document is named, one per line, in one InputError."""
    read: list[tuple[ObjectDocument, Mapping[str, Any]]] = []
    problems = []
    for where, doc in docs:
        try:
            obj, doc = read_object(doc, where, admission=admission, validation=validation, warn=warn)
        except ObjectError as e:
            problems.append(str(e))
            continue
        if isinstance(obj, Rollout):
            problems.append(
                f"{where}: a Rollout is no input of placement simulate (`fleetplace rollout simulate`)"
            )
            continue
        read.append((obj, doc))
    if problems:
        raise InputError("\n".join(problems))
    # ClusterProfiles and ClusterTaints become the ManagedClusters the engine sees
    objects = [
        (obj, doc)
        for obj, doc in fold_cluster_sources(read)
        if not isinstance(obj, ClusterProfile | ClusterTaints | Rollout)
    ]
    return objects, profile_namespaces(read)


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
    objects, namespaces = _objects(docs, admission, validation, warn)
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
                objects, namespaces = _objects(
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
            objects, namespaces = _objects(
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


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start}): {e.reason}") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None


def _paths(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    for p in paths:
        if p == "-":
            yield "<stdin>", sys.stdin.read()
            continue
        path = Path(p)
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.suffix in (".json", ".yaml", ".yml") and child.is_file():
                    yield str(child), _read(child)
        elif path.is_file():
            yield p, _read(path)
        else:
            raise InputError(f"{p}: no such file or directory")


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


def _table(line: dict[str, Any]) -> None:
    from rich.table import Table

    console = table_console()
    title = f"{line['placement']}" + (f"  ({line['name']})" if line.get("name") else "")
    console.rule(title)
    if "error" in line:
        console.print(f"[red]error:[/red] {line['error']}")
        return
    console.print(f"selected {line['numberOfSelectedClusters']}: {', '.join(line['decisions']) or '—'}")
    for c in line["conditions"]:
        console.print(f"  {c['type']}={c['status']} {c['reason']}: {c['message']}")
    if line["requeueAfterSeconds"] is not None:
        console.print(f"  requeue after {line['requeueAfterSeconds']} s")
    table = Table("cluster", "selected", "total", "prioritizers (score × weight) / filtered by")
    for cluster, ex in line["explain"].items():
        if "filteredBy" in ex:
            table.add_row(cluster, "", "", f"[dim]{ex['filteredBy']}: {ex['reason']}[/dim]")
        else:
            parts = ", ".join(f"{k} {v['score']}×{v['weight']}" for k, v in ex["prioritizers"].items())
            table.add_row(cluster, "✔" if ex["selected"] else "", str(ex["total"]), parts)
    console.print(table)


def _sequences(path: Path, output: Output, admission: bool, options: EngineOptions) -> None:
    where = str(path)
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as e:
        typer.echo(f"error: {where}: {e}", err=True)
        raise typer.Exit(2) from None
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list):
        typer.echo(f"error: {where}: expected a JSON array of sequences", err=True)
        raise typer.Exit(2)
    failed = False
    for i, seq in enumerate(data):
        label = f"{where}[{i}]"
        try:
            lines = run_sequence(seq, label, admission, options)
        except InputError as e:
            failed = True
            typer.echo(f"error: {e}", err=True)
            name = seq.get("name") if isinstance(seq, Mapping) else None
            lines = [{"name": name, "error": str(e)}]
        for line in lines:
            _emit(line, output)
    sys.stdout.flush()
    if failed:
        raise typer.Exit(2)


def _emit(line: Mapping[str, Any], output: Output) -> None:
    if output is Output.JSON:
        write_json(line)
    elif output is Output.YAML:
        write_yaml(line)
    else:
        _table(dict(line))


_RULE = """Plain object files (YAML/JSON documents, `kind: List`) given together — several paths, a
directory, -f repeated, or - for stdin — form ONE fleet, and every Placement in it is
evaluated. They are read as the worker reads them: the API server's defaults and validation
(a configuration without `weight` has weight 1; weight 11 is refused), and unknown fields,
unknown apiVersions and duplicated YAML keys are errors (--validate to relax).

A scenario file — a JSON object with `objects` (and `placement`, `now`, `name`, `expect`), or a
list of them, the format of the conformance samples — is one evaluation per scenario, its
objects as written (what OCM's controller sees without an API server; unknown fields
ignored), unless the scenario says `"admission": true`. --admission / --as-written and
--validate given on the command line apply to every input.

Exit status: 0; 1 when a scenario's `expect` does not match the result (the line then has
`expectMismatch`); 2 on bad input."""


def register(app: typer.Typer) -> None:
    @app.command(
        help=paragraphs(
            f"Evaluate placements offline and explain every decision (OCM's debugger as a command).\n\n{_RULE}"
        )
    )
    def simulate(
        paths: Annotated[
            list[str] | None,
            typer.Argument(
                help="Scenario or object files (YAML/JSON), directories, or - for stdin.",
                metavar="PATH",
                show_default=False,
            ),
        ] = None,
        files: Files = None,
        placement: Annotated[
            str | None, typer.Option("--placement", metavar="NS/NAME", help="Evaluate only NS/NAME.")
        ] = None,
        now: Annotated[
            str | None,
            typer.Option(
                "--now",
                metavar="TIME",
                help="RFC 3339 time of evaluation  \\[default: the scenario's, else now]",
                show_default=False,
            ),
        ] = None,
        output: Annotated[
            str,
            typer.Option(
                "--output",
                "-o",
                metavar="json|yaml|table|sig-mc",
                help="JSON Lines, YAML documents, tables, or sig-mc: the decisions as SIG-Multicluster "
                "PlacementDecision slices (a YAML List for kubectl apply).",
            ),
        ] = "json",
        cluster_namespace: Annotated[
            str,
            typer.Option(
                "--cluster-namespace",
                metavar="NS",
                help="With -o sig-mc: the namespace of the ClusterProfiles that ManagedClusters are "
                "referenced by  [default: the placement's namespace]",
                show_default=False,
            ),
        ] = "",
        admission: Annotated[
            bool | None,
            typer.Option(
                "--admission/--as-written",
                help="Apply the API server's defaults and validation, or read objects exactly as written  "
                "[default: admission for object files and --sequence, as written for scenario files]",
                show_default=False,
            ),
        ] = None,
        validate: ValidateOption = None,
        prefer_no_select: Annotated[
            str,
            typer.Option(
                "--prefer-no-select",
                metavar="ignore|penalize",
                help="ignore (OCM) or penalize: score -100 for untolerated PreferNoSelect taints (beyond OCM).",
            ),
        ] = "ignore",
        sequence: Annotated[
            Path | None,
            typer.Option(
                "--sequence",
                metavar="FILE",
                help="JSON array of step sequences to run offline, every object ingested as the worker ingests it.",
            ),
        ] = None,
    ) -> None:
        sigmc = SigmcRefs(cluster_namespace) if output == SIGMC_OUTPUT else None
        out = Output.JSON if sigmc is not None else parse_output(output)
        if sigmc is not None and sequence is not None:
            typer.echo("error: --output sig-mc: not with --sequence", err=True)
            raise typer.Exit(2)
        if prefer_no_select not in ("ignore", "penalize"):
            typer.echo(
                f"error: --prefer-no-select: expected ignore or penalize, got {prefer_no_select!r}", err=True
            )
            raise typer.Exit(2)
        validation = _validation(validate)
        engine_options = EngineOptions(
            prefer_no_select="penalize" if prefer_no_select == "penalize" else "ignore"
        )
        if placement is not None and placement.count("/") != 1:
            typer.echo(f"error: --placement: expected NS/NAME, got {placement!r}", err=True)
            raise typer.Exit(2)
        try:
            default_now = parse_time(now, "--now", "now") if now else datetime.now(UTC).replace(microsecond=0)
        except InputError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        failed = mismatched = False
        sigmc_items: list[dict[str, Any]] = []
        if sequence is not None:
            _sequences(sequence, out, admission is not False, engine_options)
            return
        wanted = [*(paths or []), *(files or [])]
        if not wanted:
            typer.echo("error: give at least one PATH or -f FILE (or --sequence FILE)", err=True)
            raise typer.Exit(2)

        def warn(message: str) -> None:
            typer.echo(f"warning: {message}", err=True)

        try:
            with progress("reading") as advance:
                sources = []
                for source in _paths(wanted):
                    sources.append(source)
                    advance(1)
                entries = load_scenarios(sources, admission, validation, warn)
        except InputError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        for sc in entries:
            try:
                if isinstance(sc, InputError):
                    raise sc
                lines = run_scenario(sc, placement, default_now, engine_options, sigmc)
            except InputError as e:
                failed = True
                typer.echo(f"error: {e}", err=True)
                name = sc.name if isinstance(sc, Scenario) else None
                lines = [{"name": name, "placement": placement, "error": str(e)}]
            expect = sc.expect if isinstance(sc, Scenario) else None
            for line in lines:
                if isinstance(sc, Scenario) and expect is not None and "error" not in line:
                    differences = expect_mismatches(line, expect)
                    if differences:
                        mismatched = True
                        line["expectMismatch"] = differences
                        typer.echo(
                            f"mismatch: {sc.where}: {line.get('name') or line['placement']}: "
                            + "; ".join(differences),
                            err=True,
                        )
                if sigmc is not None:
                    sigmc_items.extend(line.get("sigmc", []))
                else:
                    _emit(line, out)
        if sigmc is not None:
            write_yaml({"apiVersion": "v1", "kind": "List", "items": sigmc_items})
        sys.stdout.flush()
        if failed:
            raise typer.Exit(2)
        if mismatched:
            raise typer.Exit(1)


def _validation(value: str | None) -> Validation | None:
    if value is None:
        return None
    try:
        return Validation(value)
    except ValueError:
        typer.echo(f"error: --validate: expected strict, warn or ignore, got {value!r}", err=True)
        raise typer.Exit(2) from None
