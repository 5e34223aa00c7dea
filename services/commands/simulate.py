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
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

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
from fleetplace.services.commands.simulate_inputs import InputError, parse_time, read_paths
from fleetplace.services.commands.simulate_scenarios import (
    Scenario,
    SigmcRefs,
    expect_mismatches,
    load_scenarios,
    run_scenario,
)
from fleetplace.services.commands.simulate_sequence import run_sequence
from fleetplace.shared.api.objects import Validation
from fleetplace.shared.placement.options import EngineOptions

SIGMC_OUTPUT = "sig-mc"


def _table(line: dict[str, Any]) -> None:
    from rich.table import Table

    console = table_console()
    title = f"{line['placement']}" + (f"  ({line['name']})" if line.get("name") else "")
    console.rule(title)
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
            continue
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
`expectMismatch`); 2 on bad input. Results go to stdout, errors to stderr only: a scenario or file
that fails prints nothing on stdout, and with --output sig-mc any failure means no List at all."""


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
                for source in read_paths(wanted):
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
                # stdout carries results only, whatever the output: the error is said once, here
                failed = True
                typer.echo(f"error: {e}", err=True)
                continue
            expect = sc.expect if isinstance(sc, Scenario) else None
            for line in lines:
                if isinstance(sc, Scenario) and expect is not None:
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
        if sigmc is not None and not failed:
            # all or nothing: a List short of the placements that failed, piped into
            # `kubectl apply` without pipefail, would hide the failure
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
