"""What every command shares at the terminal: `-o json|yaml|table`, `-f FILE`, progress on stderr.

Results go to stdout, one JSON object per line (`-o json`) or one YAML document each (`-o yaml`);
tables are for people. When stdout is not a terminal there is no width to fill: tables and text
do not wrap, so `| grep` sees whole lines, and no line is longer than its content (a table is as
wide as its widest row, a rule as wide as its title). Progress bars are drawn on stderr only when
it is a terminal: a pipe or a log gets nothing.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

import orjson
import typer
from rich.console import Console
from rich.rule import Rule
from rich.style import Style
from rich.text import Text

from fleetplace.shared.yaml_text import write_yaml_documents

__all__ = [
    "Bootstrap",
    "Files",
    "Output",
    "Prefix",
    "ValidateOption",
    "progress",
    "table_console",
    "write_json",
    "write_yaml",
]


class Output(enum.StrEnum):
    JSON = "json"
    YAML = "yaml"
    TABLE = "table"


Files = Annotated[
    list[str] | None,
    typer.Option(
        "--filename",
        "-f",
        metavar="FILE",
        help="A file, directory or - (stdin) to read; repeatable, as with kubectl.",
        show_default=False,
    ),
]
Bootstrap = Annotated[
    str | None,
    typer.Option(
        "--bootstrap",
        "-b",
        metavar="HOST:PORT",
        help="Kafka bootstrap servers  \\[default: $KAFKA_BOOTSTRAP_SERVERS]",
        show_default=False,
    ),
]
Prefix = Annotated[
    str | None,
    typer.Option(
        "--prefix",
        metavar="PREFIX",
        help="Topic name prefix; `foo` means `foo.` (topics foo.decisions, …)  "
        "[default: $FLEETPLACE_TOPIC_PREFIX or fleetplace.]",
        show_default=False,
    ),
]
ValidateOption = Annotated[
    str | None,
    typer.Option(
        "--validate",
        metavar="strict|warn|ignore",
        help="Unknown fields, unknown apiVersions and duplicated YAML keys are errors (strict, the "
        "default), warnings (warn), or nothing (ignore).",
        show_default=False,
    ),
]


def paragraphs(text: str) -> str:
    """Help text with each paragraph on one line, for the help formatter to wrap to the terminal."""
    import inspect

    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n"))


def normalize_prefix(prefix: str | None) -> str | None:
    """`foo` and `foo.` name the same topics (`foo.decisions`); the empty prefix stays empty."""
    if prefix is None or prefix == "" or prefix.endswith((".", "-", "_")):
        return prefix
    return prefix + "."


def write_json(value: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(value) + b"\n")


def write_yaml(value: Any) -> None:
    """One YAML document per value, each starting with `---`."""
    write_yaml_documents([value])


# wider than any line a command prints: on a pipe nothing wraps
_UNBOUNDED = 1_000_000
# the rule characters either side of a rule's title on a pipe
_RULE_ENDS = 2


class _PipeConsole(Console):
    """A console for a pipe or a file: nothing wraps, and nothing is drawn across the console's
    width, which is no width the output has. Tables are as wide as their content already (they do
    not expand); a rule is drawn as wide as its title."""

    def __init__(self) -> None:
        super().__init__(width=_UNBOUNDED, soft_wrap=True)

    def rule(
        self,
        title: str | Text = "",
        *,
        characters: str = "─",
        style: str | Style = "rule.line",
        align: Literal["left", "center", "right"] = "center",
    ) -> None:
        text = self.render_str(title) if isinstance(title, str) else title
        # the title, a space either side, and the rule's ends
        width = text.cell_len + 2 + 2 * _RULE_ENDS if text.cell_len else 2 * _RULE_ENDS
        self.print(Rule(title, characters=characters, style=style, align=align), width=width)


def table_console() -> Console:
    """The console every command prints tables and reports on: the terminal's, or on a pipe one
    that prints each line as long as its content needs."""
    console = Console()
    return console if console.is_terminal else _PipeConsole()


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A transient progress bar on stderr when it is a terminal; yields `advance(n)`."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda n: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


def parse_output(value: str, allowed: tuple[Output, ...] = tuple(Output)) -> Output:
    try:
        output = Output(value)
    except ValueError:
        output = None
    if output is None or output not in allowed:
        typer.echo(f"error: --output: expected {', '.join(allowed)}, got {value!r}", err=True)
        raise typer.Exit(2)
    return output
