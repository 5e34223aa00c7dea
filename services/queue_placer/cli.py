"""`fleetplace queues place`: YuniKorn queue placement from files, with the worker's engine.

    fleetplace queues place --config queues.yaml --apps apps.jsonl
    fleetplace queues place --config queues.yaml --app app.json
    cat apps.jsonl | fleetplace queues place --config queues.yaml -
    fleetplace queues place --config queues.yaml --check
    fleetplace queues place --vectors suite.json
    fleetplace queues what-if --config new.yaml     (whatif_cli.py)

One JSON line per application, in input order; queues created by earlier applications exist
for later ones. Exit 2 for a config error (every problem, with its path) or bad input (file,
line and field); `--vectors` always exits 0 once the run completed, one line per vector.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic import ValidationError

from fleetplace.services.queue_placer import whatif_cli
from fleetplace.services.queue_placer.files import STDIN, Source, fail, load_config, read_source
from fleetplace.shared.api.queues import field_errors
from fleetplace.shared.queueing import (
    ApplicationSubmission,
    ConfigError,
    PlacementOutcome,
    QueuePlacer,
    parse_config,
)

queues_app = typer.Typer(
    name="queues",
    help="YuniKorn queue placement: which queue each application goes to.",
    no_args_is_help=True,
    add_completion=False,
)


def register(app: typer.Typer) -> None:
    whatif_cli.register(queues_app)
    app.add_typer(queues_app, name="queues")


class InputError(Exception):
    """Bad input; the message names the file, the line and the field."""


def _application(data: Any, where: str) -> ApplicationSubmission:
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object with applicationID, user, groups, tags, queue")
    try:
        return ApplicationSubmission.model_validate(data)
    except ValidationError as e:
        lines = [f"{where}: {path or '(record)'}: {reason}" for path, reason in field_errors(e)]
        raise InputError("\n".join(lines)) from None


def _jsonl(source: Source) -> Iterator[ApplicationSubmission | InputError]:
    for number, line in enumerate(source.text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source.label}:{number}"
        try:
            yield _application(orjson.loads(line), where)
        except orjson.JSONDecodeError as e:
            yield InputError(f"{where}: not valid JSON: {e}")
        except InputError as e:
            yield e


def _single(source: Source) -> Iterator[ApplicationSubmission | InputError]:
    try:
        data = orjson.loads(source.text)
    except orjson.JSONDecodeError as e:
        yield InputError(f"{source.label}: not valid JSON: {e}")
        return
    try:
        yield _application(data, f"{source.label}:1")
    except InputError as e:
        yield InputError(_with_field_lines(str(e), source))


def _with_field_lines(message: str, source: Source) -> str:
    """A pretty-printed application spans lines: point each error at the line of its key."""
    lines = source.text.splitlines()
    out = []
    for entry in message.splitlines():
        prefix = f"{source.label}:1: "
        field = entry[len(prefix) :].split(":", 1)[0].split(".", 1)[0].split("[", 1)[0]
        number = next((i for i, line in enumerate(lines, start=1) if f'"{field}"' in line), 1)
        out.append(f"{source.label}:{number}: {entry[len(prefix) :]}")
    return "\n".join(out)


def _emit(lines: Iterable[bytes]) -> None:
    out = sys.stdout
    batch: list[bytes] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= 1024:
            out.write(b"\n".join(batch).decode() + "\n")
            batch.clear()
    if batch:
        out.write(b"\n".join(batch).decode() + "\n")
    out.flush()


@queues_app.command("place")
def place(
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Partition config (YuniKorn YAML or JSON).", show_default=False),
    ] = None,
    app_file: Annotated[
        Path | None, typer.Option("--app", help="One application as a JSON object.", show_default=False)
    ] = None,
    apps_file: Annotated[
        str | None,
        typer.Option(
            "--apps", help="Applications as JSON Lines, one per line ('-' reads stdin).", show_default=False
        ),
    ] = None,
    stdin: Annotated[
        str | None,
        typer.Argument(help="'-' reads applications as JSON Lines from stdin.", show_default=False),
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Validate the config and exit.")] = False,
    vectors: Annotated[
        Path | None,
        typer.Option(
            "--vectors", help="Run a conformance suite: a JSON array of vectors.", show_default=False
        ),
    ] = None,
) -> None:
    """Place applications into queues with YuniKorn's placement rules; one JSON line each."""
    if vectors is not None:
        if config is not None or app_file is not None or apps_file is not None or stdin is not None or check:
            fail(["error: --vectors runs alone: each vector carries its own config and application"])
        _run_vectors(vectors)
        return
    if config is None:
        fail(["error: --config FILE is required (or --vectors FILE)"])
    if stdin is not None and stdin != STDIN:
        fail([f"error: unexpected argument {stdin!r}: only '-' (read stdin) is accepted"])
    parsed = load_config(config)
    if check:
        summary = ", ".join(f"{name} ({len(spec.rules)} rules)" for name, spec in parsed.partitions.items())
        typer.echo(f"OK: {config}: {len(parsed.partitions)} partition(s){': ' + summary if summary else ''}")
        return
    given = [s for s in (str(app_file) if app_file else None, apps_file, stdin) if s is not None]
    if len(given) != 1:
        fail(["error: give the applications once: --app FILE, --apps FILE.jsonl, or - for stdin"])
    if app_file is not None:
        records = list(_single(read_source(str(app_file))))
    else:
        records = list(_jsonl(read_source(given[0])))
    errors = [r for r in records if isinstance(r, InputError)]
    if errors:
        fail([f"error: {e}" for err in errors for e in str(err).splitlines()])
    placer = QueuePlacer(parsed)
    _emit(placer.place(r).to_bytes() for r in records if isinstance(r, ApplicationSubmission))


# -- conformance vectors -----------------------------------------------------------------------


def _vector_result(vector: Any) -> dict[str, Any]:
    """The actual outcome in the shape of `expect`: queue, rejected, or config_error."""
    if not isinstance(vector, dict):
        return {"name": None, "rejected": True}
    result: dict[str, Any] = {"name": vector.get("name")}
    try:
        config = parse_config(vector.get("config"))
    except ConfigError:
        return {**result, "config_error": True}
    app = vector.get("app")
    if isinstance(app, dict) and "applicationID" not in app:
        app = {**app, "applicationID": "vector"}  # alone in its placer, the ID cannot matter
    try:
        application = _application(app, "app")
    except InputError:
        return {**result, "rejected": True}
    outcome: PlacementOutcome = QueuePlacer(config).place(application)
    return {**result, "rejected": True} if outcome.rejected else {**result, "queue": outcome.queue}


def _run_vectors(path: Path) -> None:
    source = read_source(str(path))
    try:
        suite = orjson.loads(source.text)
    except orjson.JSONDecodeError as e:
        fail([f"error: {source.label}: not valid JSON: {e}"])
    if not isinstance(suite, list):
        fail([f"error: {source.label}: expected a JSON array of vectors"])
    crashed = 0

    def results() -> Iterator[bytes]:
        nonlocal crashed
        for index, vector in enumerate(suite):
            try:
                yield orjson.dumps(_vector_result(vector))
            except Exception as e:  # a bug must not cost the other vectors their results
                crashed += 1
                name = vector.get("name") if isinstance(vector, dict) else None
                typer.echo(
                    f"error: {source.label}: vector {index} ({name}): {type(e).__name__}: {e}", err=True
                )
                yield orjson.dumps({"name": name, "error": f"{type(e).__name__}: {e}"})

    _emit(results())
    if crashed:
        raise typer.Exit(code=1)
