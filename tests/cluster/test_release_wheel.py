"""What users install: the Dockerfile's build stage, replayed in a fresh virtualenv with build isolation and no
extras, compiles the hot modules quietly, and its wheel installed in another fresh virtualenv runs them compiled.

One wheel serves both tests (a compiled build takes a minute or more): the build stage's ``pip wheel`` is the
same PEP 517 build, with build isolation and no extras, that ``pip install .`` and ``pip wheel .`` run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from storm_py import build
from tests.cluster.harness import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

SUFFIX = EXTENSION_SUFFIXES[0]


@dataclass(frozen=True)
class StageBuild:
    command: list[str]  # the build stage's RUN command as run here
    wheel_dir: Path
    wheel: Path
    log: str  # pip's verbose output: the build backend's messages


def _clean_env() -> dict[str, str]:
    """This process's environment without what would steer the build or the imports (the suite's own tree)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PIP_NO_BUILD_ISOLATION", "PIP_CONSTRAINT", "VIRTUAL_ENV")
            and not k.startswith("STORM_PY_")}


def _fresh_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, timeout=120)
    return path / "bin"


def _build_stage() -> tuple[list[tuple[list[str], str]], dict[str, str], list[str]]:
    """The Dockerfile's build stage: its ``COPY src... dest`` instructions, its ``ENV`` and its ``pip wheel``."""
    stage = (REPO / "Dockerfile").read_text(encoding="utf-8").split("\nFROM ", 2)[1]
    lines = stage.splitlines()
    copies = [(args[:-1], args[-1]) for args in (line.split()[1:] for line in lines if line.startswith("COPY "))
              if not args[0].startswith("--")]
    env = dict(item.split("=", 1) for line in lines if line.startswith("ENV ") for item in shlex.split(line)[1:])
    (run,) = [line[len("RUN "):] for line in lines if line.startswith("RUN pip wheel ")]
    return copies, env, shlex.split(run)


@pytest.fixture(scope="module")
def stage_build(tmp_path_factory: pytest.TempPathFactory) -> StageBuild:
    """The build stage replayed without a Docker engine: exactly what it COPYs, then its ``pip wheel`` command with
    the fresh virtualenv's pip (and ``-v``, to read the build's messages), ``/wheels`` in a temporary directory.
    The stage sets ``STORM_PY_COMPILE=1``, which fails where a plain ``pip install .`` would fall back; what is
    compiled and how is the same."""
    root = tmp_path_factory.mktemp("stage")
    copies, stage_env, command = _build_stage()
    context = root / "src"
    context.mkdir()
    for sources, dest in copies:
        for src in sources:
            target = context / dest / src if dest.endswith("/") else context / dest
            if (REPO / src).is_dir():
                shutil.copytree(REPO / src, target, ignore=shutil.ignore_patterns("__pycache__", f"*{SUFFIX}"))
            else:
                shutil.copy2(REPO / src, target)
    wheel_dir = root / "wheels"
    bin_dir = _fresh_venv(root / "venv")
    assert command[:2] == ["pip", "wheel"] and "--wheel-dir" in command
    command[command.index("--wheel-dir") + 1] = str(wheel_dir)
    command = [str(bin_dir / "pip"), *command[1:2], "-v", *command[2:]]
    proc = subprocess.run(command, cwd=context, env={**_clean_env(), **stage_env}, capture_output=True, text=True,
                          timeout=1100,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    (wheel,) = wheel_dir.glob("storm_py-*.whl")
    return StageBuild(command, wheel_dir, wheel, proc.stdout + proc.stderr)


def test_the_docker_build_stage_compiles_every_hot_module_quietly(stage_build: StageBuild) -> None:
    _, stage_env, dockerfile_command = _build_stage()
    assert dockerfile_command == ["pip", "wheel", "--no-cache-dir", "--wheel-dir", "/wheels", "."]
    assert stage_env == {"STORM_PY_COMPILE": "1"}  # an image that cannot be compiled is not built
    assert "--no-build-isolation" not in stage_build.command
    log = stage_build.log
    assert f"storm_py build: compiling {len(build.HOT_MODULES)} hot modules with mypyc" in log, log[-5000:]
    assert "NOT compiled" not in log
    # setuptools' warnings (a data folder taken for a package, deprecations) are for us to fix, not for users
    assert not re.search(r"Warning\b|!!\n", log), [line for line in log.splitlines() if "Warning" in line][:5]
    with zipfile.ZipFile(stage_build.wheel) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("storm_py/compiled.json"))
    assert sorted(manifest) == sorted(build.HOT_MODULES)
    assert f"storm_py/{build.NOTE}" not in names
    for module in build.HOT_MODULES:
        assert f"{module.replace('.', '/')}{SUFFIX}" in names, module
    assert {"storm_py/ui/static/index.html", "storm_py/config/defaults.yaml", "storm_py/py.typed"} <= names


def test_the_wheel_installed_without_extras_runs_the_hot_modules_compiled(stage_build: StageBuild,
                                                                          tmp_path: Path) -> None:
    bin_dir = _fresh_venv(tmp_path / "venv")
    env = _clean_env()
    # the build stage's wheel directory holds every requirement's wheel too, as the runtime image installs them
    subprocess.run([str(bin_dir / "pip"), "install", "-q", "--no-index", "--find-links", str(stage_build.wheel_dir),
                    "storm_py"], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    probe = (
        "import importlib, json, sys\n"
        "from storm_py import build\n"
        "files = {}\n"
        "for m in build.HOT_MODULES:\n"
        "    try:\n"
        "        files[m] = importlib.import_module(m).__file__\n"
        "    except ImportError as exc:  # Kafka's package needs the kafka extra; its modules' files, then\n"
        "        assert exc.name == 'confluent_kafka', exc\n"
        "        py = build.source_path(m)\n"
        "        files[m] = [str(p) for p in py.parent.glob(py.stem + '.*') if p.suffix != '.py']\n"
        "print(json.dumps(files))\n"
    )
    proc = subprocess.run([str(bin_dir / "python"), "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    site = str(tmp_path / "venv")
    for module, file in json.loads(proc.stdout).items():
        (path,) = [file] if isinstance(file, str) else file
        assert path.startswith(site) and path.endswith(SUFFIX), (module, path)
    version = subprocess.run([str(bin_dir / "storm-py"), "version"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120, check=False)
    assert version.returncode == 0, version.stderr
    first, *rest = version.stdout.splitlines()
    assert f"compiled (mypyc): all {len(build.HOT_MODULES)} hot modules" in first
    assert rest == [f"  compiled: {m}" for m in build.HOT_MODULES]
