"""`fleetplace queues what-if`: a new config against recorded placements; exit 0, 1 or 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from fleetplace.services.cli import app as fleetplace
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.queueing import ApplicationSubmission, QueuePlacer, parse_config
from tests.auditor.test_queue_whatif import APPS, current_partition, renamed_parent
from tests.queue_worker.test_worker import Bus, running, settings_for


def write_config(path: Path, partition: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"partitions": [partition]}))
    return path


def jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def what_if(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(fleetplace, ["queues", "what-if", *args])
    return result.exit_code, result.stdout, result.stderr


def scratch_changes(partition: dict[str, Any], old: dict[str, Any]) -> dict[str, str | None]:
    """The oracle: both configs placing every application from scratch; the ones that differ."""
    before = QueuePlacer(parse_config({"partitions": [old]}))
    after = QueuePlacer(parse_config({"partitions": [partition]}))
    out = {}
    for raw in APPS:
        submission = ApplicationSubmission.model_validate(raw)
        was, now = before.place(submission).queue, after.place(submission).queue
        if was != now:
            out[submission.application_id] = now
    return out


def test_submissions_with_their_current_config_show_what_a_new_config_changes(tmp_path: Path) -> None:
    apps = jsonl(tmp_path / "apps.jsonl", APPS)
    current = write_config(tmp_path / "current.yaml", current_partition())
    new = write_config(tmp_path / "new.yaml", renamed_parent())
    code, out, _ = what_if("--config", str(new), "--apps", str(apps), "--current", str(current), "-o", "json")
    assert code == 1
    report = orjson.loads(out)
    got = {c["applicationID"]: c["after"].get("queue") for c in report["changes"]}
    assert got == scratch_changes(renamed_parent(), current_partition())
    assert report["summary"]["moved"] == len(got)
    assert report["summary"]["unchanged"] == len(APPS) - len(got)


def test_an_unchanged_config_reports_nothing_and_exits_0(tmp_path: Path) -> None:
    apps = jsonl(tmp_path / "apps.jsonl", APPS)
    current = write_config(tmp_path / "current.yaml", current_partition())
    code, out, _ = what_if("--config", str(current), "--apps", str(apps), "--current", str(current))
    assert code == 0
    assert (
        f"{len(APPS)} applications: {len(APPS)} unchanged, 0 moved, 0 newly rejected, 0 newly accepted" in out
    )


def test_a_config_that_does_not_load_exits_2_names_the_problem_and_reads_nothing(tmp_path: Path) -> None:
    broken = current_partition()
    broken["placementrules"][0]["create"] = "yes please"
    new = write_config(tmp_path / "new.yaml", broken)
    # no broker and no --apps: the config is refused before anything is read
    code, out, err = what_if("--config", str(new), "-b", "127.0.0.1:9")
    assert code == 2 and out == ""
    assert f"error: {new}: invalid queue configuration (1 problem)" in err
    assert "partitions[0].placementrules[0].create" in err and "boolean" in err


def test_bad_input_names_the_file_line_and_field_and_evaluates_nothing(tmp_path: Path) -> None:
    apps = tmp_path / "apps.jsonl"
    apps.write_text(orjson.dumps(APPS[0]).decode() + "\n" + '{"applicationID": "x", "user": 7}\n')
    current = write_config(tmp_path / "current.yaml", current_partition())
    code, out, err = what_if("--config", str(current), "--apps", str(apps), "--current", str(current))
    assert code == 2 and out == ""
    assert f"{apps}:2: user:" in err
    code, _, err = what_if("--config", str(current), "--apps", str(apps))
    assert code == 2 and f"{apps}:1:" in err and "--current" in err  # a submission has no recorded answer


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--partition", "gpu"], "does not configure partition 'gpu'"),
        (["--since", "2026-01-01T00:00:00Z", "--last", "3"], "--since or --last"),
        (["--since", "yesterday"], "not an RFC 3339 time"),
    ],
)
def test_conflicting_or_unknown_options_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    apps = jsonl(tmp_path / "apps.jsonl", APPS)
    current = write_config(tmp_path / "current.yaml", current_partition())
    code, _, err = what_if("--config", str(current), "--apps", str(apps), "--current", str(current), *args)
    assert code == 2 and message in err


@pytest.mark.integration
async def test_placements_recorded_by_the_worker_on_a_real_broker(
    broker: str, topics: Topics, tmp_path: Path
) -> None:
    async with Bus(broker, topics) as bus:
        await bus.config(current_partition())
        async with running(settings_for(broker, topics.prefix)):
            for i, submission in enumerate(APPS, start=1):  # one at a time: placing order is known
                await bus.submit(submission)
                await bus.wait_for(lambda i=i: len(bus.placements) == i, f"placement {i}")
        recorded = bus.placements
    # the records as the worker wrote them work offline too (what `watch -o json` prints)
    records = jsonl(tmp_path / "placements.jsonl", recorded)
    new = write_config(tmp_path / "new.yaml", renamed_parent())
    unchanged = write_config(tmp_path / "current.yaml", current_partition())

    def from_bus(config: Path) -> subprocess.CompletedProcess[bytes]:
        command = ["queues", "what-if", "--config", str(config), "-b", broker, "--prefix", topics.prefix]
        return subprocess.run(
            [sys.executable, "-m", "fleetplace.services.cli", *command, "-o", "json"],
            capture_output=True,
            timeout=120,
        )

    changed = from_bus(new)
    assert changed.returncode == 1, changed.stderr.decode()
    report = orjson.loads(changed.stdout)
    expected = scratch_changes(renamed_parent(), current_partition())
    assert {c["applicationID"]: c["after"].get("queue") for c in report["changes"]} == expected
    assert all(c["record"].startswith("app-placements/") for c in report["changes"])

    code, out, _ = what_if("--config", str(new), "--apps", str(records), "-o", "json")
    assert code == 1
    offline = orjson.loads(out)
    assert without_record(offline["changes"]) == without_record(report["changes"])
    assert offline["summary"] == report["summary"]

    same = from_bus(unchanged)
    assert same.returncode == 0, same.stderr.decode()
    assert orjson.loads(same.stdout)["summary"]["unchanged"] == len(APPS)


def without_record(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "record"} for c in changes]
