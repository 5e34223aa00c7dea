"""Every `fleetplace …` command in the README's and the quickstart's code blocks runs as written,
against the embedded broker (each document under a topic prefix of its own, in document order).
Commands that run until stopped (a broker, a worker, `watch` without `--no-follow`) are skipped,
saying so. A command documented with a trailing `# exit N` must exit with N (`queues what-if`
exits 1 when a config changes an answer); every other one with 0."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fleetplace.shared.testing import unique_topic_prefix

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/quickstart.md", "docs/cluster-inventory.md", "docs/queues-what-if.md")
EXIT_STATUS = re.compile(r"#\s*exit (\d+)\s*$")
LONG_RUNNING = {
    "broker": "runs until Ctrl-C",
    "worker": "a worker runs until stopped",
    "demo": "tests/test_demo.py plays it",
    "explorer": "serves until Ctrl-C; tests/explorer drives it",
}


@dataclass(frozen=True)
class DocCommand:
    document: str
    line: int
    args: tuple[str, ...]
    stdin: str | None
    status: int = 0

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"


def _without_options_in_brackets(text: str) -> str:
    """`[--partitions 12]` in a synopsis is optional: the command runs without it."""
    return re.sub(r"\s\[[^\]]*\]", "", text)


def commands_of(document: str) -> list[DocCommand]:
    out: list[DocCommand] = []
    lines = (ROOT / document).read_text().splitlines()
    in_block = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_block = line.strip() in ("```bash", "```sh", "```console") if not in_block else False
            i += 1
            continue
        if in_block and line.startswith("fleetplace "):
            text, stdin = line, None
            heredoc = re.search(r"<<-?'?(\w+)'?\s*$", text)
            if heredoc:
                end = next(j for j in range(i + 1, len(lines)) if lines[j] == heredoc.group(1))
                stdin = "\n".join(lines[i + 1 : end]) + "\n"
                text = text[: heredoc.start()]
                out.append(
                    DocCommand(
                        document,
                        i + 1,
                        tuple(shlex.split(_without_options_in_brackets(text), comments=True)),
                        stdin,
                    )
                )
                i = end + 1
                continue
            status = EXIT_STATUS.search(text)
            out.append(
                DocCommand(
                    document,
                    i + 1,
                    tuple(shlex.split(_without_options_in_brackets(text), comments=True)),
                    None,
                    int(status.group(1)) if status else 0,
                )
            )
        i += 1
    return out


COMMANDS = [c for document in DOCUMENTS for c in commands_of(document)]
PREFIXES = {document: unique_topic_prefix("doc") for document in DOCUMENTS}


def test_the_documents_have_commands_to_run() -> None:
    assert len(COMMANDS) > 15
    assert {c.args[1] for c in COMMANDS} >= {"simulate", "publish", "topics", "taint", "watch", "queues"}


@pytest.mark.parametrize("command", COMMANDS, ids=[c.id for c in COMMANDS])
def test_the_documented_command_runs(command: DocCommand, broker: str) -> None:
    args = command.args
    if args[1] in LONG_RUNNING:
        pytest.skip(f"{' '.join(args)}: {LONG_RUNNING[args[1]]}")
    if args[1] == "watch" and "--no-follow" not in args:
        pytest.skip(f"{' '.join(args)}: follows until Ctrl-C (documented without --no-follow)")
    if "$(" in " ".join(args):
        pytest.skip("uses shell substitution")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "FLEETPLACE_"))}
    env |= {"KAFKA_BOOTSTRAP_SERVERS": broker, "FLEETPLACE_TOPIC_PREFIX": PREFIXES[command.document]}
    done = subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", *args[1:]],
        input=command.stdin,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == command.status, f"{command.id}: {' '.join(args)}\n{done.stdout}\n{done.stderr}"
