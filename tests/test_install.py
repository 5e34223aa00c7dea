"""`pip install .` as the Dockerfile does it, into a fresh environment: the demo runs from the
installed package alone, the subscriber SDK imports, and `fleetplace` is the only top-level
import package the distribution adds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.demo_verdict import expected_verdict

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
# what compose/Dockerfile copies before `pip install .`
SOURCES = ("pyproject.toml", "README.md", "shared", "services", "fleetplace")


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with fleetplace installed (not editable) from a copy of the sources; the test
    environment's packages are visible to it as plain paths (no editable finder), so nothing is
    downloaded."""
    base = tmp_path_factory.mktemp("install")
    source = base / "src"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir() and not path.is_symlink():
            shutil.copytree(path, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name, follow_symlinks=False)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # after the venv's own site-packages on sys.path: the installed fleetplace wins
    (site / "test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "FLEETPLACE_", "PYTHON"))}
    env |= {"FLEETPLACE_PURE_PYTHON": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1"}
    _run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(source)],
        cwd=base,
        env=env,
        timeout=300,
    )
    shutil.rmtree(source)  # the installed package must not lean on the sources
    return venv


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "FLEETPLACE_", "PYTHON"))}
    external = os.environ.get("FLEETPLACE_TEST_BOOTSTRAP")
    if external:
        env["KAFKA_BOOTSTRAP_SERVERS"] = external
    return env


def test_the_installed_distribution_has_one_top_level_package_and_the_subscriber_sdk(installed: Path) -> None:
    script = (
        "import importlib.metadata as m, fleetplace, fleetplace.subscriber as s\n"
        "print(fleetplace.__file__)\n"
        "print(s.DecisionSubscriber.__name__, s.SubscriberPosition.__name__)\n"
        "files = m.distribution('fleetplace').files or []\n"
        "print(sorted({f.parts[0] for f in files if f.suffix == '.py' and not f.parts[0].startswith('..')}))\n"
    )
    out = _run([str(installed / "bin" / "python"), "-c", script], installed, _env(), 60).stdout.splitlines()
    assert out[0].startswith(str(installed))  # the installed copy, not the repository
    assert out[1] == "DecisionSubscriber SubscriberPosition"
    assert out[2] == "['fleetplace']"


def test_the_installed_demo_plays_from_package_data(installed: Path) -> None:
    done = _run([str(installed / "bin" / "fleetplace"), "demo"], installed, _env(), 120)
    assert expected_verdict(hub=False) in done.stdout  # an installed copy has no control plane
    # what `demo --explore` places into queues ships with it too
    script = (
        "from fleetplace.services.commands.demo_queues import APPS_FILE, QUEUES_FILE\n"
        "print(APPS_FILE.is_file(), QUEUES_FILE.is_file())\n"
    )
    out = _run([str(installed / "bin" / "python"), "-c", script], installed, _env(), 60).stdout
    assert out.split() == ["True", "True"]


def test_the_docs_fleet_is_the_demo_fleet() -> None:
    from fleetplace.services.commands.demo import FLEET_FILE

    docs = ROOT / "docs" / "examples" / "fleet.yaml"
    assert docs.resolve() == FLEET_FILE.resolve()  # one copy: the docs link to the packaged file


def test_the_docs_queue_examples_are_the_ones_the_demo_places() -> None:
    from fleetplace.services.commands.demo_queues import APPS_FILE, QUEUES_FILE

    examples = ROOT / "docs" / "examples"
    assert (examples / "queues.yaml").resolve() == QUEUES_FILE.resolve()
    assert (examples / "apps.jsonl").resolve() == APPS_FILE.resolve()


def test_the_installed_explorer_renders_its_templates_from_package_data(installed: Path) -> None:
    script = (
        "from fleetplace.services.explorer.pages import not_found\nprint(not_found('no placement <a/b>'))\n"
    )
    out = _run([str(installed / "bin" / "python"), "-c", script], installed, _env(), 60).stdout
    assert "<h1>Not found</h1>" in out and "no placement &lt;a/b&gt;" in out
