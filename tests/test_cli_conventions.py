"""The conventions every command follows: `-o json|yaml|table`, `-b`, `-f`, `-h`, `--version`,
help in command-line words, tables that do not wrap on a pipe, and what `watch` shows."""

from __future__ import annotations

import asyncio
import re

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.services.commands.output import normalize_prefix
from fleetplace.services.commands.worker import (
    describe_app_placement,
    describe_dead_letter,
    describe_decision,
)
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import CATALOGUE, Topics, ensure_topics
from fleetplace.shared.settings import Settings

COMMANDS = [
    ["simulate"],
    ["publish"],
    ["taint"],
    ["watch"],
    ["audit"],
    ["explain"],
    ["what-if"],
    ["topics", "list"],
    ["topics", "create"],
    ["export", "placementdecisions"],
    ["worker", "scheduler"],
]
KAFKA_COMMANDS = [c for c in COMMANDS if c != ["simulate"]]


def help_of(command: list[str]) -> str:
    result = CliRunner().invoke(app, [*command, "-h"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_speaks_command_line_not_python(command: list[str]) -> None:
    text = help_of(command)
    assert not re.search(r"<(bool|str|int|list\[str\]|path)>", text), text
    assert not re.search(r"\{[a-z_]+\}", text), text


@pytest.mark.parametrize("command", KAFKA_COMMANDS, ids=" ".join)
def test_every_kafka_command_takes_b(command: list[str]) -> None:
    assert re.search(r"--bootstrap\s+-b", help_of(command))


@pytest.mark.parametrize(
    "command",
    [["simulate"], ["watch"], ["audit"], ["explain"], ["what-if"], ["topics", "list"]],
    ids=" ".join,
)
def test_every_command_that_prints_objects_takes_o_json_yaml_table(command: list[str]) -> None:
    # the three formats are the option's listed values, not words found elsewhere in the help
    metavar = re.search(r"--output\s+-o\s+(\S+)", help_of(command))
    assert metavar, help_of(command)
    assert {"json", "yaml", "table"} <= set(metavar.group(1).split("|")), metavar.group(1)


# Each worker's options and the settings they stand for (shared/settings.py)
WORKER_SETTINGS = {
    "scheduler": {"--clock": "clock", "--http-port": "http_port", "--group": "scheduler_group_id"},
    "queues": {"--http-port": "http_port", "--group": "queue_placer_group_id"},
    "rollout": {"--clock": "clock", "--http-port": "http_port", "--group": "rollout_group_id"},
}


@pytest.mark.parametrize("worker", sorted(WORKER_SETTINGS))
def test_worker_options_name_the_variable_and_default_of_their_setting(worker: str) -> None:
    words = " ".join(help_of(["worker", worker]).replace("│", " ").split())  # help lines wrap
    prefix = Settings.model_config.get("env_prefix", "")
    for option, field in WORKER_SETTINGS[worker].items():
        described = words.split(f" {option} ", 1)[1].split(" --", 1)[0]
        assert f"[env var: {prefix}{field.upper()}]" in described, described
        assert f"[default: {Settings.model_fields[field].default}]" in described, described


def test_top_level_h_and_version() -> None:
    assert "Usage: fleetplace" in CliRunner().invoke(app, ["-h"]).stdout
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert re.fullmatch(r"fleetplace \S+\n", result.stdout)


def test_a_prefix_without_a_separator_gets_a_dot() -> None:
    assert normalize_prefix("foo") == "foo."
    assert [normalize_prefix(p) for p in ("foo.", "foo-", "", None)] == ["foo.", "foo-", "", None]
    result = CliRunner().invoke(app, ["publish", "-", "--dry-run", "--prefix", "foo"], input=CLUSTER)
    assert result.stdout.startswith("foo.clusters\tc1\t")


CLUSTER = "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata: {name: c1}\n"


@pytest.mark.integration
def test_topics_list_does_not_wrap_names_on_a_pipe(broker: str) -> None:
    prefix = "a-rather-long-topic-prefix-for-a-narrow-terminal."
    result = CliRunner().invoke(app, ["topics", "list", "-b", broker, "--prefix", prefix], terminal_width=40)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("│ " + prefix)]
    assert len(rows) == len(CATALOGUE)  # one line per topic: no name folded over two
    assert any(f"{prefix}placement-decisions " in row for row in rows)


# ---- watch --------------------------------------------------------------------------------------

DIFF = {
    "schemaVersion": 1,
    "placement": "ns1/web",
    "seq": 1,
    "evaluatedAt": "2026-03-01T12:00:00Z",
    "trigger": {"kind": "placement", "key": "ns1/web"},
    "added": ["c1"],
    "decisions": ["c1"],
}
MISCONFIGURED = {
    **DIFF,
    "seq": 2,
    "added": [],
    "removed": ["c1"],
    "decisions": [],
    "status": {
        "numberOfSelectedClusters": 0,
        "conditions": [
            {
                "type": "PlacementMisconfigured",
                "status": "True",
                "reason": "Misconfigured",
                "message": "bad CEL",
            }
        ],
    },
}
DELETED = {**DIFF, "seq": 3, "added": [], "decisions": [], "deleted": True, "status": {}}


def test_watch_lines_show_misconfigured_and_deleted_placements_as_such() -> None:
    assert describe_decision(DIFF).endswith("[placement:ns1/web] +c1  -> c1")
    assert describe_decision(MISCONFIGURED).endswith("-> (misconfigured: bad CEL)")
    assert describe_decision(DELETED).endswith("-> (deleted)")
    assert describe_decision({**DIFF, "decisions": [], "added": []}).endswith("-> (none)")


def test_watch_lines_for_queue_placements_and_dead_letters() -> None:
    placed = {"applicationID": "a1", "queue": "root.default", "rule": "provided", "evaluatedAt": "t"}
    assert describe_app_placement(placed) == "t a1 -> root.default [provided]"
    rejected = {
        "applicationID": "a2",
        "rejected": True,
        "reason": "no-rule-matched",
        "detail": "no rule",
        "evaluatedAt": "t",
    }
    assert describe_app_placement(rejected) == "t a2 rejected: no-rule-matched: no rule"
    dead = {
        "topic": "p.placements",
        "partition": 0,
        "offset": 7,
        "key": "ns1/w",
        "error": "weight: should be in [-10, 10]",
    }
    assert describe_dead_letter(dead) == "p.placements/0@7 key=ns1/w: weight: should be in [-10, 10]"


async def _send(broker: str, records: list[OutgoingRecord]) -> None:
    producer = make_producer(broker)
    await start_client(producer)
    try:
        await send_all(producer, records)
    finally:
        await producer.stop()


@pytest.mark.integration
def test_watch_prints_yaml_json_and_lines_and_follows_deadletter(broker: str, topic_prefix: str) -> None:
    topics = Topics(topic_prefix)
    asyncio.run(ensure_topics(broker, topics))
    dead = {
        "topic": topics.placements,
        "partition": 0,
        "offset": 3,
        "key": "ns1/w",
        "error": "weight: should be in [-10, 10]",
        "value_b64": None,
    }
    asyncio.run(
        _send(
            broker,
            [
                *(
                    OutgoingRecord(topics.decisions, "ns1/web", encode_json(d))
                    for d in (DIFF, MISCONFIGURED, DELETED)
                ),
                OutgoingRecord(topics.deadletter, "ns1/w", encode_json(dead)),
            ],
        )
    )
    common = ["watch", "--no-follow", "-b", broker, "--prefix", topic_prefix]
    as_yaml = CliRunner().invoke(app, [*common, "-o", "yaml"])
    assert as_yaml.exit_code == 0, as_yaml.output
    assert [d["seq"] for d in yaml.safe_load_all(as_yaml.stdout)] == [1, 2, 3]
    as_json = CliRunner().invoke(app, [*common, "-o", "json"])
    assert [orjson.loads(line)["seq"] for line in as_json.stdout.splitlines()] == [1, 2, 3]
    lines = CliRunner().invoke(app, common).stdout.splitlines()
    assert [line.rsplit("-> ", 1)[1] for line in lines] == ["c1", "(misconfigured: bad CEL)", "(deleted)"]
    dead_lines = CliRunner().invoke(app, [*common, "--topic", "deadletter"]).stdout.splitlines()
    assert dead_lines == [f"{topics.placements}/0@3 key=ns1/w: weight: should be in [-10, 10]"]
    refused = CliRunner().invoke(app, [*common, "-o", "xml"])
    assert refused.exit_code == 2
