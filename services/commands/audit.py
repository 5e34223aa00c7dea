"""`fleetplace audit`, `explain`, `what-if` and `export`: answers from the topics alone.

Each reads the history once (the scheduler's inputs and `decisions`, up to the high watermarks
at start) and works offline on it with the auditor (`fleetplace.services.auditor`).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic import TypeAdapter, ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fleetplace.services.auditor.audit import audit, audit_topics
from fleetplace.services.auditor.explain import Explanation, NoDecision, explain_decision
from fleetplace.services.auditor.export import current_decisions, current_sigmc_slices, kubernetes_objects
from fleetplace.services.auditor.history import History, HistoryError, read_history
from fleetplace.services.auditor.report import AuditReport
from fleetplace.services.auditor.rollout_report import RolloutAuditReport
from fleetplace.services.auditor.whatif import PlacementWhatIf, what_if_engine, what_if_placement
from fleetplace.services.commands.output import Output, parse_output, table_console, write_yaml
from fleetplace.services.commands.worker import Bootstrap, Prefix, _settings
from fleetplace.shared.api.objects import ObjectError, documents_of, parse_object
from fleetplace.shared.api.ocm import PLACEMENT_LABEL, Placement
from fleetplace.shared.api.sigmc import PLACEMENT_ANNOTATION
from fleetplace.shared.bus.codec import DecodeLimits
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.placement.options import EngineOptions
from fleetplace.shared.settings import Settings
from fleetplace.shared.yaml_text import write_yaml_documents

_TIME: TypeAdapter[datetime] = TypeAdapter(datetime)

Json = Annotated[bool, typer.Option("--json", hidden=True, help="The same as -o json.")]
OutputFormat = Annotated[
    str, typer.Option("--output", "-o", metavar="table|json|yaml", help="Tables, JSON, or YAML.")
]


def _output(output: str, json_output: bool) -> Output:
    """-o, with the older --json meaning -o json."""
    return Output.JSON if json_output else parse_output(output)


def _write(value: Any, output: Output) -> None:
    if output is Output.YAML:
        write_yaml(value)
        sys.stdout.flush()
    else:
        _write_json(value)


PreferNoSelect = Annotated[
    str | None,
    typer.Option(
        "--prefer-no-select",
        help="ignore or penalize, as the workers ran (else $FLEETPLACE_PREFER_NO_SELECT): not recorded in decisions.",
    ),
]


Jobs = Annotated[
    int, typer.Option("--jobs", "-j", help="Processes checking stretches of history (0: one per CPU).", min=0)
]


def _jobs(jobs: int) -> int:
    """0 means one process per CPU this process may run on."""
    if jobs:
        return jobs
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _engine(settings: Settings, override: str | None) -> EngineOptions:
    value = override or settings.prefer_no_select
    if value not in ("ignore", "penalize"):
        raise _fail(f"--prefer-no-select: expected ignore or penalize, got {value!r}")
    return EngineOptions(prefer_no_select="penalize" if value == "penalize" else "ignore")


# `fleetplace audit`: nothing contradicts a decision, but some could not be rebuilt because
# compaction removed their inputs (docs/audit.md#compacted-inputs)
INPUTS_COMPACTED_EXIT = 3


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _time(option: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        t = _TIME.validate_python(text)
    except ValidationError:
        raise _fail(f"{option}: not an RFC 3339 time: {text!r}") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _placement_key(option: str, text: str | None) -> str | None:
    if text is not None and (text.count("/") != 1 or text.startswith("/") or text.endswith("/")):
        raise _fail(f"{option}: expected NS/NAME, got {text!r}")
    return text


def _write_json(value: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress bar on stderr; yields `update(stage, done, total)`."""
    if not enabled:
        yield lambda stage, done, total: None
        return
    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total)

        yield update


def _load(settings: Settings, update: Callable[[str, int, int], None]) -> History:
    topics = Topics(settings.topic_prefix)
    try:
        return asyncio.run(
            read_history(
                settings.kafka,
                topics,
                limits=DecodeLimits.from_settings(settings),
                progress=lambda done, total: update("reading", done, total),
            )
        )
    except (HistoryError, BusError) as e:
        raise _fail(str(e)) from None


# ---- audit ----------------------------------------------------------------------------------


def _print_report(report: AuditReport) -> None:
    console = table_console()
    table = Table(
        "placement", "checked", "reproduced", "mismatched", "inputs compacted", title="fleetplace audit"
    )
    for key, tally in sorted(report.per_placement.items()):
        bad = tally.checked - tally.reproduced - tally.compacted
        table.add_row(
            key,
            str(tally.checked),
            str(tally.reproduced),
            f"[red]{bad}[/red]" if bad else "0",
            f"[yellow]{tally.compacted}[/yellow]" if tally.compacted else "0",
        )
    table.add_section()
    bad = len(report.mismatches)
    table.add_row(
        "[b]all[/b]",
        str(report.checked),
        str(report.reproduced),
        f"[red]{bad}[/red]" if bad else "0",
        f"[yellow]{len(report.compacted)}[/yellow]" if report.compacted else "0",
    )
    console.print(table)
    shared = f", {report.shared} reproduced by an alike placement's run" if report.shared else ""
    console.print(f"{report.records} records, {report.batches} batches{shared}")
    for m in report.mismatches:
        console.print(
            f"[red]✘[/red] {m.placement} seq {m.seq} ({m.evaluated_at}, decisions/{m.partition}@{m.offset}): {m.reason}"
        )
    for c in report.compacted:
        console.print(
            f"[yellow]?[/yellow] {c.placement} seq {c.seq} ({c.evaluated_at}, decisions/{c.partition}@{c.offset}): "
            f"{c.REASON} ({', '.join(c.inputs)})"
        )
    for p in report.seq_problems:
        console.print(f"[red]✘[/red] {p.placement} seq {p.seq}: {p.problem}")
    for i in report.invalid:
        console.print(
            f"[red]✘[/red] decisions/{i.partition}@{i.offset} ({i.key}): not a DecisionDiff: {i.error}"
        )
    for w in report.warnings:
        console.print(f"[yellow]![/yellow] {w}")
    queues = report.queues
    if queues.checked or queues.unreadable:
        bad = queues.checked - queues.reproduced
        console.print(
            f"app-placements: {queues.checked} checked, {queues.reproduced} reproduced"
            + (f", [red]{bad} mismatched[/red]" if bad else "")
        )
    for q in queues.mismatches:
        console.print(f"[red]✘[/red] application {q.application} ({q.evaluated_at}, {q.record}): {q.reason}")
    for u in queues.unreadable:
        console.print(f"[yellow]![/yellow] not verified: {u}")
    _print_rollouts(console, report.rollouts)
    if not report.ok:
        console.print("[red]audit failed[/red]")
    elif report.compacted:
        console.print(
            f"[yellow]every decision reproduces but {len(report.compacted)} whose inputs were compacted[/yellow]"
        )
    else:
        console.print("[green]every decision reproduces[/green]")


def _print_rollouts(console: Console, report: RolloutAuditReport) -> None:
    """The rollout diffs' section: per rollout, then what does not reproduce."""
    if not report.checked and not report.invalid and not report.seq_problems:
        return
    table = Table("rollout", "checked", "reproduced", "mismatched", title="rollout diffs")
    for key, (checked, reproduced) in sorted(report.per_rollout.items()):
        bad = checked - reproduced
        table.add_row(key, str(checked), str(reproduced), f"[red]{bad}[/red]" if bad else "0")
    table.add_section()
    bad = report.checked - report.reproduced
    table.add_row(
        "[b]all[/b]", str(report.checked), str(report.reproduced), f"[red]{bad}[/red]" if bad else "0"
    )
    console.print(table)
    for m in report.mismatches:
        r = m.record
        console.print(f"[red]✘[/red] rollout {r.key} seq {r.seq} ({r.evaluated_at}, {r.where}): {m.reason}")
    for p in report.seq_problems:
        console.print(f"[red]✘[/red] rollout {p.rollout} seq {p.seq}: {p.problem}")
    for i in report.invalid:
        console.print(f"[red]✘[/red] {i.to_json()['record']} ({i.key}): not a rollout diff: {i.error}")
    for w in report.warnings:
        console.print(f"[yellow]![/yellow] {w}")


def _placement_of(slice_: Mapping[str, Any]) -> str | None:
    """The placement a SIG-MC slice belongs to: its whole name in the `fleetplace.dev/placement`
    annotation when the label had to be shortened (docs/names.md), else the placement label."""
    meta = slice_.get("metadata") or {}
    whole = (meta.get("annotations") or {}).get(PLACEMENT_ANNOTATION)
    return str(whole) if whole else (meta.get("labels") or {}).get(PLACEMENT_LABEL)


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_command(
        placement: Annotated[str | None, typer.Option("--placement", help="Only NS/NAME.")] = None,
        since: Annotated[
            str | None,
            typer.Option("--since", help="Only decisions evaluated at or after this RFC 3339 time."),
        ] = None,
        output: OutputFormat = "table",
        json_output: Json = False,
        prefer_no_select: PreferNoSelect = None,
        jobs: Jobs = 0,
        bootstrap: Bootstrap = None,
        prefix: Prefix = None,
    ) -> None:
        """Re-derive every published decision and rollout diff from the topics; exit 1 if any does not
        reproduce, 3 if all do except some whose inputs were compacted away."""
        out = _output(output, json_output)
        key = _placement_key("--placement", placement)
        since_t = _time("--since", since)
        settings = _settings(bootstrap, prefix)
        engine = _engine(settings, prefer_no_select)
        with _progress(enabled=True) as update:
            try:
                _, report = audit_topics(
                    settings.kafka,
                    Topics(settings.topic_prefix),
                    placement=key,
                    since=since_t,
                    limits=DecodeLimits.from_settings(settings),
                    engine=engine,
                    jobs=_jobs(jobs),
                    reading=lambda done, total: update("reading", done, total),
                    progress=lambda done, total: update("verifying", done, total),
                )
            except (HistoryError, BusError) as e:
                raise _fail(str(e)) from None
        if out is Output.TABLE:
            _print_report(report)
        else:
            _write(report.to_json(), out)
        if not report.ok:
            raise typer.Exit(1)
        if report.compacted:
            raise typer.Exit(INPUTS_COMPACTED_EXIT)

    @app.command("explain")
    def explain_command(
        placement: Annotated[str, typer.Argument(help="NS/NAME of the placement.")],
        at: Annotated[
            str | None, typer.Option("--at", help="RFC 3339 time (default: the latest decision).")
        ] = None,
        output: OutputFormat = "table",
        json_output: Json = False,
        prefer_no_select: PreferNoSelect = None,
        bootstrap: Bootstrap = None,
        prefix: Prefix = None,
    ) -> None:
        """The decision in force at a time, the record that made it, and why each cluster was (not) picked."""
        out = _output(output, json_output)
        key = _placement_key("NS/NAME", placement)
        assert key is not None
        at_t = _time("--at", at)
        settings = _settings(bootstrap, prefix)
        engine = _engine(settings, prefer_no_select)
        with _progress(enabled=out is Output.TABLE) as update:
            history = _load(settings, update)
        try:
            explanation = explain_decision(history, key, at_t, DecodeLimits.from_settings(settings), engine)
        except NoDecision as e:
            raise _fail(str(e), 1) from None
        if out is Output.TABLE:
            _print_explanation(explanation)
        else:
            _write(explanation.to_json(), out)

    @app.command("what-if")
    def what_if_command(
        placement_file: Annotated[
            Path | None,
            typer.Option("--placement-file", help="The modified Placement(s), YAML or JSON."),
        ] = None,
        engine_only: Annotated[
            bool, typer.Option("--engine-only", help="Recompute history with this fleetplace instead.")
        ] = False,
        since: Annotated[
            str | None, typer.Option("--since", help="Report from this RFC 3339 time on.")
        ] = None,
        output: OutputFormat = "table",
        json_output: Json = False,
        prefer_no_select: PreferNoSelect = None,
        jobs: Jobs = 0,
        bootstrap: Bootstrap = None,
        prefix: Prefix = None,
    ) -> None:
        """Replay history with a changed Placement (or engine) and show which decisions would have differed, and when."""
        out = _output(output, json_output)
        if (placement_file is None) == (not engine_only):
            raise _fail("give --placement-file FILE or --engine-only (one of them)")
        since_t = _time("--since", since)
        modified: list[Placement] = []
        if placement_file is not None:
            modified = _placements_from(placement_file)
        settings = _settings(bootstrap, prefix)
        limits = DecodeLimits.from_settings(settings)
        engine = _engine(settings, prefer_no_select)
        with _progress(enabled=out is Output.TABLE) as update:
            history = _load(settings, update)
        if engine_only:
            report = audit(history, since=since_t, limits=limits, engine=engine, jobs=_jobs(jobs))
            results = what_if_engine(report)
        else:
            results = [
                what_if_placement(history, p, since=since_t, limits=limits, engine=engine).to_json()
                for p in modified
            ]
        if out is Output.TABLE:
            _print_what_if(results)
        else:
            _write(results, out)

    export_app = typer.Typer(help="Export current state in other formats.", no_args_is_help=True)
    app.add_typer(export_app, name="export")

    @export_app.command("placementdecisions")
    def export_placementdecisions(
        placement: Annotated[str | None, typer.Option("--placement", help="Only NS/NAME.")] = None,
        output: Annotated[str, typer.Option("--output", "-o", help="yaml or json.")] = "yaml",
        format_: Annotated[
            str,
            typer.Option(
                "--format",
                metavar="ocm|sig-mc",
                help="ocm: OCM PlacementDecisions; sig-mc: SIG-Multicluster PlacementDecision slices "
                "(multicluster.x-k8s.io/v1alpha1) with every decision's reason.",
            ),
        ] = "ocm",
        bootstrap: Bootstrap = None,
        prefix: Prefix = None,
    ) -> None:
        """The current decisions as OCM PlacementDecision objects (pages of 100, OCM's names and
        labels), or as SIG-Multicluster PlacementDecision slices, for `kubectl apply`.

        Exit 1 when --placement names a placement with nothing to export: no decision, or with
        --format sig-mc no slices (the scheduler writes them with FLEETPLACE_SIGMC_DECISIONS=true)."""
        key = _placement_key("--placement", placement)
        if output not in ("yaml", "json"):
            raise _fail(f"--output: expected yaml or json, got {output!r}")
        if format_ not in ("ocm", "sig-mc"):
            raise _fail(f"--format: expected ocm or sig-mc, got {format_!r}")
        settings = _settings(bootstrap, prefix)
        if format_ == "sig-mc":
            try:
                items = asyncio.run(
                    current_sigmc_slices(
                        settings.kafka, Topics(settings.topic_prefix), DecodeLimits.from_settings(settings)
                    )
                )
            except BusError as e:
                raise _fail(str(e)) from None
            if key is not None:
                ns, _, name = key.partition("/")
                items = [
                    s for s in items if s["metadata"].get("namespace") == ns and _placement_of(s) == name
                ]
                if not items:
                    raise _fail(
                        f"placement {key!r} has no SIG-MC slices on "
                        f"{Topics(settings.topic_prefix).sigmc_placement_decisions}: the scheduler "
                        "writes them with FLEETPLACE_SIGMC_DECISIONS=true (started with it, it "
                        "writes every placement's), and none for a placement without a decision",
                        1,
                    )
            _write_objects(items, output)
            return
        try:
            current, _source = asyncio.run(
                current_decisions(
                    settings.kafka, Topics(settings.topic_prefix), DecodeLimits.from_settings(settings)
                )
            )
        except BusError as e:
            raise _fail(str(e)) from None
        if key is not None:
            current = {k: v for k, v in current.items() if k == key}
            if not current:
                raise _fail(f"placement {key!r} has no decision", 1)
        _write_objects(kubernetes_objects(current), output)


def _write_objects(objects: list[dict[str, Any]], output: str) -> None:
    """A JSON `List`, or one YAML document per object (what `kubectl apply -f -` takes)."""
    if output == "json":
        _write_json({"apiVersion": "v1", "kind": "List", "items": objects})
    else:
        write_yaml_documents(objects)


def _placements_from(path: Path) -> list[Placement]:
    try:
        text = path.read_text()
    except OSError as e:
        raise _fail(f"{path}: {e}") from None
    out: list[Placement] = []
    try:
        for where, doc in documents_of(text, str(path)):
            obj = parse_object(doc, where)
            if not isinstance(obj, Placement):
                raise _fail(f"{where}: expected a Placement, got {type(obj).__name__}")
            out.append(obj)
    except ObjectError as e:
        raise _fail(str(e)) from None
    if not out:
        raise _fail(f"{path}: no Placement in the file")
    return out


def _print_explanation(e: Explanation) -> None:
    console = table_console()
    r = e.record
    trigger = r.trigger
    console.rule(f"{r.key} seq {r.seq}")
    console.print(
        f"record decisions/{r.partition}@{r.offset} by {r.source or '?'}, evaluated {r.evaluated_at}, "
        f"trigger {trigger.get('kind')}:{trigger.get('key')}"
    )
    if r.deleted:
        console.print("the placement was deleted: no clusters")
    else:
        decisions = r.value.get("decisions") or []
        console.print(f"selected {len(decisions)}: {', '.join(decisions) or '—'}")
    console.print(
        "[green]reproduces from the topics[/green]"
        if e.reproduced
        else f"[red]does not reproduce: {', '.join(e.differs)} differ[/red] (run `fleetplace audit`)"
    )
    if e.result is None:
        return
    for c in e.result["conditions"]:
        console.print(f"  {c['type']}={c['status']} {c['reason']}: {c['message']}")
    table = Table("cluster", "selected", "total", "prioritizers (score × weight) / filtered by")
    for cluster, ex in e.result["explain"].items():
        if "filteredBy" in ex:
            table.add_row(cluster, "", "", f"[dim]{ex['filteredBy']}: {ex['reason']}[/dim]")
        else:
            parts = ", ".join(f"{k} {v['score']}×{v['weight']}" for k, v in ex["prioritizers"].items())
            table.add_row(cluster, "✔" if ex["selected"] else "", str(ex["total"]), parts)
    console.print(table)


def _print_what_if(results: list[dict[str, Any]] | list[PlacementWhatIf]) -> None:
    console = table_console()
    for item in results:
        data = item.to_json() if isinstance(item, PlacementWhatIf) else item
        console.rule(f"{data['placement']}: {data['differed']} of {data['evaluations']} evaluations differ")
        if not data["changes"] or all(c.get("same", False) for c in data["changes"]):
            console.print("no decision would have differed")
            continue
        table = Table("from", "recorded seq", "recorded", "what-if")
        for c in data["changes"]:
            recorded = "(none)" if c["recorded"] is None else ", ".join(c["recorded"]) or "—"
            what_if = "(none)" if c["whatIf"] is None else ", ".join(c["whatIf"]) or "—"
            same = c.get("same", False)
            table.add_row(
                c["at"], str(c["recordedSeq"]), recorded, what_if if same else f"[yellow]{what_if}[/yellow]"
            )
        console.print(table)
