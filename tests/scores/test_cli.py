"""`fleetplace scores preview` and `fleetplace scores status`, run as a user runs them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import AddOnPlacementScore
from fleetplace.shared.bus.topics import Topics
from tests.scores.harness import Outputs, QueryServer, running, settings_for
from tests.scoring.builders import source_doc

FLEETPLACE = str(Path(sys.executable).with_name("fleetplace"))


async def _run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        FLEETPLACE,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _write(tmp_path: Path, *docs: dict[str, object]) -> str:
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


async def test_preview_prints_the_addonplacementscores_the_worker_would_publish(tmp_path: Path) -> None:
    async with QueryServer() as prom:
        prom.values = {"east": 48, "west": 16, "gone": "+Inf"}
        path = _write(tmp_path, source_doc(url="http://127.0.0.1:1"))  # --prometheus wins
        code, out, err = await _run("scores", "preview", path, "--prometheus", prom.url, "-o", "json")
        assert code == 0, err
        objects = [parse_object(orjson.loads(line)) for line in out.splitlines()]
        assert all(isinstance(o, AddOnPlacementScore) for o in objects)
        got = {o.metadata.namespace: o.status.scores[0].value for o in objects}  # type: ignore[union-attr]
        assert got == {"east": 50, "west": -50}
        assert "1 inf" in err

        # what it prints is what `publish` takes
        code, out, err = await _run("publish", "--dry-run", "-", stdin=out.encode())
        assert code == 0, err
        assert "east/resource-usage" in out and "west/resource-usage" in out

        code, out, _ = await _run("scores", "preview", path, "--prometheus", prom.url)
        assert code == 0 and "scores/cpu-free: 2 clusters scored; skipped: 1 inf" in out
        assert "east" in out and "50" in out


async def test_preview_says_why_an_evaluation_gives_nothing_and_exits_1(tmp_path: Path) -> None:
    async with QueryServer() as prom:
        url = prom.url  # nothing listens there afterwards
    code, out, err = await _run("scores", "preview", _write(tmp_path, source_doc(url=url)))
    assert code == 1 and out == ""
    assert "ScoreSource 'scores/cpu-free': unreachable:" in err


async def test_preview_names_the_file_document_and_field_of_a_bad_source(tmp_path: Path) -> None:
    path = _write(tmp_path, source_doc(), source_doc("bad", normalize={"fleet": True, "min": 1}))
    code, out, err = await _run("scores", "preview", path)
    assert code == 2 and out == ""
    assert f"{path}#1: ScoreSource 'scores/bad': spec.normalize" in err


@pytest.mark.integration
async def test_status_shows_each_source_last_success_last_error_and_clusters(
    broker: str, topics: Topics
) -> None:
    key = "scores/cpu-free"
    async with QueryServer() as prom, Outputs(broker, topics) as out:
        prom.values = {"c1": 1, "c2": 2}
        async with running(settings_for(broker, topics.prefix)):
            await out.publish_source(source_doc(url=prom.url, interval="1s"))
            await out.wait_for(lambda: len(out.statuses(key)) >= 1, "an evaluation")
            prom.answer = (400, b'{"status":"error","errorType":"bad_data","error":"parse error"}')
            await out.wait_for(lambda: not out.statuses(key)[-1]["healthy"], "a failure")
        # a source no worker has evaluated
        await out.publish_source(source_doc("idle", url=prom.url))
        common = ("--bootstrap", broker, "--prefix", topics.prefix)
        code, text, err = await _run("scores", "status", *common, "-o", "json")
        assert code == 0, err
        rows = {row["source"]: row for row in map(orjson.loads, text.splitlines())}
        assert rows["scores/idle"]["evaluatedAt"] is None
        failing = rows[key]
        assert (failing["healthy"], failing["clustersScored"]) == (False, 2)
        assert failing["lastError"]["reason"] == "query" and failing["lastSuccessAt"] is not None

        code, text, _ = await _run("scores", "status", *common)
        assert code == 0
        assert "failing" in text and "query: Prometheus: bad_data: parse error" in text
        assert "not evaluated yet" in text

        code, _, err = await _run("scores", "status", "scores/nope", *common)
        assert code == 1 and "no score source 'scores/nope'" in err


@pytest.mark.parametrize(
    ("variable", "value", "needle"),
    [
        ("FLEETPLACE_PROMETHEUS_ENDPOINTS", "{main: x}", "FLEETPLACE_PROMETHEUS_ENDPOINTS: "),
        (
            "FLEETPLACE_PROMETHEUS_ENDPOINTS",
            '{"main": "http://prometheus:9090", "backup": "x"}',
            "FLEETPLACE_PROMETHEUS_ENDPOINTS: endpoint 'backup' is not an http:// or https:// URL",
        ),
        ("FLEETPLACE_HTTP_PORT", "abc", "FLEETPLACE_HTTP_PORT: "),
    ],
)
def test_preview_names_an_invalid_setting_as_every_command_does(
    tmp_path: Path, variable: str, value: str, needle: str
) -> None:
    path = _write(tmp_path, source_doc(url="http://127.0.0.1:1"))
    done = subprocess.run(
        [FLEETPLACE, "scores", "preview", path],
        env={**os.environ, variable: value},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: invalid settings in the environment: "), done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
