"""Files for the `queues` commands: read one (or stdin), load a config, fail with exit 2.

Errors name the file (and, for a config, every problem with its field path) on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import typer

from fleetplace.shared.queueing import ConfigError, QueueingConfig, parse_config

STDIN = "-"


@dataclass(frozen=True)
class Source:
    label: str
    text: str


def fail(lines: Iterable[str]) -> NoReturn:
    for line in lines:
        typer.echo(line, err=True)
    raise typer.Exit(code=2)


def read_source(path: str) -> Source:
    if path == STDIN:
        return Source("<stdin>", sys.stdin.read())
    try:
        return Source(path, Path(path).read_bytes().decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError) as e:
        fail([f"error: cannot read {path}: {e}"])


def load_config(path: Path) -> QueueingConfig:
    source = read_source(str(path))
    try:
        return parse_config(source.text)
    except ConfigError as e:
        count = len(e.problems)
        head = (
            f"error: {source.label}: invalid queue configuration ({count} problem{'s' if count != 1 else ''})"
        )
        fail([head, *(f"{source.label}: {problem}" for problem in e.problems)])
