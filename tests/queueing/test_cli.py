"""`fleetplace queues place`: files in, one JSON line per application out, exit codes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from fleetplace.services.cli import app as fleetplace

SEED = Path(__file__).parent / "data" / "queues-seed-doc.json"

CONFIG_YAML = """\
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: default
    placementrules:
      - name: provided
      - name: user
        create: true
        filter: {type: allow, groups: ["dev*"]}
"""


def application(app_id: str, user: str, **fields: Any) -> dict[str, Any]:
    return {
        "applicationID": app_id,
        "partition": "default",
        "user": user,
        "groups": [user],
        "tags": {},
        "queue": "",
        **fields,
    }


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(orjson.dumps(r).decode() + "\n" for r in records)


def run(*args: str, stdin: str | None = None) -> tuple[int, list[Any], str]:
    result = CliRunner().invoke(fleetplace, ["queues", "place", *args], input=stdin)
    lines = [orjson.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return result.exit_code, lines, result.stderr


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "queues.yaml"
    path.write_text(CONFIG_YAML)
    return path


def test_apps_file_gives_one_line_per_application_in_order(config_file: Path, tmp_path: Path) -> None:
    apps = tmp_path / "apps.jsonl"
    apps.write_text(
        jsonl(
            application("a1", "ann", groups=["devs"]),
            application("a2", "bob", groups=["ops"], queue="default"),
            application("a3", "ann", groups=["devs"]),
            application("a4", "ann", partition="gpu"),
        )
    )
    code, lines, _ = run("--config", str(config_file), "--apps", str(apps))
    assert code == 0
    assert lines == [
        {"applicationID": "a1", "queue": "root.ann", "rule": "user", "created": True},
        {"applicationID": "a2", "queue": "root.default", "rule": "provided", "created": False},
        {"applicationID": "a3", "queue": "root.ann", "rule": "user", "created": False},
        {"applicationID": "a4", "rejected": True, "reason": "unknown-partition"},
    ]


def test_stdin_with_a_dash_argument_or_apps_dash(config_file: Path) -> None:
    text = jsonl(application("a1", "ann", groups=["dev"]), application("a1", "bob", groups=["dev"]))
    expected = [
        {"applicationID": "a1", "queue": "root.ann", "rule": "user", "created": True},
        {"applicationID": "a1", "rejected": True, "reason": "duplicate-application"},
    ]
    for args in (["-"], ["--apps", "-"]):
        code, lines, _ = run("--config", str(config_file), *args, stdin=text)
        assert (code, lines) == (0, expected)


def test_single_app_file(config_file: Path, tmp_path: Path) -> None:
    one = tmp_path / "app.json"
    one.write_text(
        orjson.dumps(application("x", "carl", groups=["devops"]), option=orjson.OPT_INDENT_2).decode()
    )
    code, lines, _ = run("--config", str(config_file), "--app", str(one))
    assert (code, lines) == (
        0,
        [{"applicationID": "x", "queue": "root.carl", "rule": "user", "created": True}],
    )


def test_json_config_file_works_too(tmp_path: Path) -> None:
    cfg = tmp_path / "queues.json"
    cfg.write_text(
        '{"partitions": [{"queues": [{"name": "root", "submitacl": "*"}], "placementrules": [{"name": "user", "create": true}]}]}'
    )
    code, lines, _ = run("--config", str(cfg), "-", stdin=jsonl(application("1", "zoe")))
    assert (code, lines[0]["queue"]) == (0, "root.zoe")


def test_config_error_prints_every_problem_with_its_path_and_exits_2(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "partitions:\n  - queues: [{name: root, submitacl: ' * '}]\n    placementrules: [{name: fixed}, {name: user, create: 'true'}]\n"
    )
    code, lines, err = run("--config", str(cfg), "-", stdin=jsonl(application("1", "zoe")))
    assert (code, lines) == (2, [])
    assert f"{cfg}: invalid queue configuration (3 problems)" in err
    for path in (
        "partitions[0].queues[0].submitacl",
        "partitions[0].placementrules[0].value",
        "partitions[0].placementrules[1].create",
    ):
        assert f"{cfg}: {path}: " in err


def test_check_validates_only(config_file: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(fleetplace, ["queues", "place", "--config", str(config_file), "--check"])
    assert result.exit_code == 0
    assert result.stdout.startswith(f"OK: {config_file}: 1 partition(s)")
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitions: [{queues: [{name: root}], placementrules: [{name: recovery}]}]\n")
    code, _, err = run("--config", str(bad), "--check")
    assert code == 2
    assert "partitions[0].placementrules[0].name" in err


def test_bad_application_input_names_file_line_and_field(config_file: Path, tmp_path: Path) -> None:
    apps = tmp_path / "apps.jsonl"
    apps.write_text(
        jsonl(application("ok", "ann")) + "\n" + '{"applicationID": "b", "user": 5}\nnot json\n[1]\n'
    )
    code, lines, err = run("--config", str(config_file), "--apps", str(apps))
    assert (code, lines) == (2, [])
    assert f"{apps}:3: user: must be a string" in err
    assert f"{apps}:4: not valid JSON" in err
    assert f"{apps}:5: expected a JSON object" in err


def test_pretty_printed_app_error_points_at_the_line_of_the_field(config_file: Path, tmp_path: Path) -> None:
    one = tmp_path / "app.json"
    one.write_text('{\n  "applicationID": "a",\n  "user": "ann",\n  "groups": "dev"\n}\n')
    code, _, err = run("--config", str(config_file), "--app", str(one))
    assert code == 2
    assert f"{one}:4: groups: must be a list" in err


def test_unknown_application_field_is_bad_input(config_file: Path) -> None:
    code, _, err = run("--config", str(config_file), "-", stdin='{"applicationID": "a", "grups": []}\n')
    assert code == 2 and "<stdin>:1: grups: unknown key" in err


@pytest.mark.parametrize(
    "args",
    [
        [],  # no config
        ["--config", "missing.yaml", "--check"],  # unreadable
        ["--config", "{config}"],  # no applications
        ["--config", "{config}", "--apps", "-", "-"],  # applications twice
        ["--config", "{config}", "other"],  # positional that is not '-'
        ["--vectors", "{config}", "--check"],  # vectors run alone
    ],
)
def test_usage_errors_exit_2(config_file: Path, args: list[str]) -> None:
    code, _, _ = run(*[a.format(config=config_file) for a in args], stdin="")
    assert code == 2


def test_vectors_run_the_seed_suite_one_line_per_vector_in_the_expect_shape() -> None:
    suite = orjson.loads(SEED.read_bytes())
    code, lines, _ = run("--vectors", str(SEED))
    assert code == 0
    assert lines == [{"name": v["name"], **v["expect"]} for v in suite]


def test_vectors_survive_invalid_apps_and_configs(tmp_path: Path) -> None:
    good = {
        "partitions": [
            {
                "queues": [{"name": "root", "submitacl": "*"}],
                "placementrules": [{"name": "user", "create": True}],
            }
        ]
    }
    suite = [
        {"name": "ok", "config": good, "app": application("1", "ann"), "expect": {"queue": "root.ann"}},
        {"name": "bad app", "config": good, "app": {"applicationID": 5}, "expect": {"rejected": True}},
        {"name": "no app", "config": good, "expect": {"rejected": True}},
        {"name": "no ID", "config": good, "app": {"user": "bo"}, "expect": {"queue": "root.bo"}},
        {
            "name": "bad config",
            "config": {"partitions": [{"queues": None}]},
            "app": application("1", "a"),
            "expect": {"config_error": True},
        },
        {
            "name": "config not a mapping",
            "config": [1],
            "app": application("1", "a"),
            "expect": {"config_error": True},
        },
        "not a vector",
    ]
    path = tmp_path / "suite.json"
    path.write_bytes(orjson.dumps(suite))
    code, lines, _ = run("--vectors", str(path))
    assert code == 0
    assert lines == [
        {"name": "ok", "queue": "root.ann"},
        {"name": "bad app", "rejected": True},
        {"name": "no app", "rejected": True},
        {"name": "no ID", "queue": "root.bo"},
        {"name": "bad config", "config_error": True},
        {"name": "config not a mapping", "config_error": True},
        {"name": None, "rejected": True},
    ]


def test_vectors_file_that_is_not_an_array_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('{"name": "x"}')
    assert run("--vectors", str(path))[0] == 2


def test_each_vector_is_evaluated_alone(tmp_path: Path) -> None:
    cfg = {
        "partitions": [
            {
                "queues": [{"name": "root", "submitacl": "*"}],
                "placementrules": [{"name": "provided", "create": True}],
            }
        ]
    }
    vector = {"name": "v", "config": cfg, "app": application("1", "ann", queue="root.a"), "expect": {}}
    path = tmp_path / "suite.json"
    path.write_bytes(orjson.dumps([vector, vector]))
    _, lines, _ = run("--vectors", str(path))
    assert lines == [{"name": "v", "queue": "root.a"}, {"name": "v", "queue": "root.a"}]


@pytest.mark.skipif(
    shutil.which("fleetplace", path=str(Path(sys.executable).parent)) is None, reason="not installed"
)
def test_installed_console_script_runs_the_command(config_file: Path) -> None:
    exe = shutil.which("fleetplace", path=str(Path(sys.executable).parent))
    assert exe is not None
    done = subprocess.run(
        [exe, "queues", "place", "--config", str(config_file), "-"],
        input=jsonl(application("1", "ann", groups=["dev"])),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert orjson.loads(done.stdout) == {
        "applicationID": "1",
        "queue": "root.ann",
        "rule": "user",
        "created": True,
    }
