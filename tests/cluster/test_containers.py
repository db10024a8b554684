"""docker-compose.yml and its Dockerfile: structure always; `docker compose config` where the client has compose."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import click
import yaml

from storm_py.cli.main import cli
from storm_py.config import read_storm_config
from tests.cluster.harness import REPO

COMPOSE = REPO / "docker-compose.yml"


def compose() -> dict:
    """docker-compose.yml as compose reads it with none of its variables set (each ``${VAR:-default}`` its default)."""
    text = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", COMPOSE.read_text(encoding="utf-8"))
    assert "${" not in text  # every variable has a default
    return yaml.safe_load(text)


def test_compose_runs_zookeeper_nimbus_and_two_supervisors_on_the_built_image() -> None:
    services = compose()["services"]
    assert {"zookeeper", "nimbus", "supervisor1", "supervisor2"} <= set(services)
    assert services["zookeeper"]["image"].startswith("zookeeper:")
    for name in ("nimbus", "supervisor1", "supervisor2"):
        svc = services[name]
        assert svc["build"]["context"] == "." and (REPO / "Dockerfile").is_file()
        assert svc["build"]["args"] == {"BUILD_BASE": "python:3.11", "BASE": "python:3.11-slim"}
        host_dir, _, target = svc["volumes"][0].partition(":")
        assert target.startswith("/conf")
        assert (REPO / host_dir / "storm.yaml").is_file()
    assert services["nimbus"]["command"][services["nimbus"]["command"].index("nimbus") + 1:][:2] == [
        "--config", "/secrets/storm.yaml"]  # conf/docker/storm.yaml plus the secrets generated at first start
    assert services["secrets"]["entrypoint"][-2:] == ["/conf/storm.yaml", "/secrets/storm.yaml"]
    for name in ("nimbus", "supervisor1", "supervisor2", "ui"):
        assert services[name]["depends_on"]["secrets"]["condition"] == "service_completed_successfully"
        assert all(p.startswith("127.0.0.1:") for p in services[name].get("ports", []))  # host loopback only
    hosts = {services[s]["command"][-1] for s in ("supervisor1", "supervisor2")}
    assert hosts == {"storm.local.hostname=supervisor1", "storm.local.hostname=supervisor2"}


def test_every_container_command_is_a_valid_storm_py_invocation() -> None:
    for name, svc in compose()["services"].items():
        if "command" not in svc:
            continue
        # parse (never run) the arguments the container passes to the storm-py entry point
        args = list(svc["command"])
        if args[0] == "--log-level":
            args = args[2:]
        sub_name, *rest = args
        ctx = click.Context(cli, info_name="storm-py")
        sub = cli.get_command(ctx, sub_name)
        assert sub is not None, (name, sub_name)
        sub.make_context(sub_name, rest, parent=ctx)


def test_the_mounted_configuration_is_valid_and_points_at_the_services() -> None:
    conf = read_storm_config(REPO / "conf" / "docker" / "storm.yaml")
    services = compose()["services"]
    assert conf["storm.zookeeper.servers"] == ["zookeeper"] and "zookeeper" in services
    assert conf["nimbus.seeds"] == ["nimbus"] and conf["nimbus.host"] == "nimbus"
    assert f"127.0.0.1:{conf['nimbus.thrift.port']}:{conf['nimbus.thrift.port']}" in services["nimbus"]["ports"]


def test_the_operator_configuration_is_all_comments_and_names_real_keys() -> None:
    text = (REPO / "conf" / "storm.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text) is None  # nothing active: running in the repository changes no default
    keys = set(re.findall(r"^# ([a-z][a-z0-9_.]+):", text, flags=re.MULTILINE))
    assert {"storm.zookeeper.servers", "nimbus.seeds", "nimbus.auth.token", "supervisor.slots.ports"} <= keys


def _dockerfile_copies() -> list[tuple[list[str], str]]:
    """The build stage's ``COPY src... dest`` instructions (sources relative to the build context)."""
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    build_stage = text.split("\nFROM ", 2)[1]
    return [(args[:-1], args[-1]) for args in
            (line.split()[1:] for line in build_stage.splitlines() if line.startswith("COPY "))
            if not args[0].startswith("--")]


def test_the_dockerfile_build_context_makes_a_wheel_whose_entry_point_runs(tmp_path) -> None:
    """Replays the Dockerfile's build stage without a Docker engine: copy exactly what it COPYs, build the
    wheel as its ``pip wheel`` does, and run the ``ENTRYPOINT`` command from that wheel alone."""
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^ARG BUILD_BASE=python:3\.11$", text, flags=re.MULTILINE)
    assert re.search(r"^ARG BASE=python:3\.11-slim$", text, flags=re.MULTILINE)
    assert re.search(r"^RUN pip wheel .*--wheel-dir /wheels \.$", text, flags=re.MULTILINE)
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (.+)$", text, flags=re.MULTILINE).group(1))
    context = tmp_path / "context"
    context.mkdir()
    for sources, dest in _dockerfile_copies():
        for src in sources:
            origin = REPO / src
            target = context / dest / src if dest.endswith("/") else context / dest
            if origin.is_dir():
                shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target)
    wheels = tmp_path / "wheels"
    # pure Python, for speed: tests/cluster/test_release_wheel.py replays the stage's compiled build exactly
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), "."], cwd=context, check=True, capture_output=True, timeout=300,
                   env={**os.environ, "STORM_PY_COMPILE": "0"})
    (wheel,) = wheels.glob("storm_py-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        entry_points = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "storm_py/py.typed" in names and "storm_py/config/defaults.yaml" in names
    scripts = dict(re.findall(r"^([\w-]+) = (\S+)$", entry_points, flags=re.MULTILINE))
    assert entrypoint == ["tini", "--", next(iter(scripts))] and entrypoint[-1] in scripts  # tini: PID 1
    module, func = scripts[entrypoint[-1]].split(":")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    # the image's default command (CMD) and `docker run storm-py version`, from the wheel's code only
    run = f"import sys; sys.path.insert(0, {str(site)!r}); import {module} as m; " \
          f"assert m.__file__.startswith({str(site)!r}); sys.argv[0] = 'storm-py'; m.{func}()"
    for args in (["version"], ["--help"]):
        proc = subprocess.run([sys.executable, "-c", run, *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Usage: storm-py")
    exposed = re.search(r"^EXPOSE (.+)$", text, flags=re.MULTILINE).group(1).split()
    conf = read_storm_config(REPO / "conf" / "docker" / "storm.yaml")
    ports = conf["supervisor.slots.ports"]
    assert f"{min(ports)}-{max(ports)}" in exposed and str(conf["nimbus.thrift.port"]) in exposed
    assert str(conf["ui.port"]) in exposed


def _compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_config_accepts_the_file() -> None:
    command = _compose_command()
    assert command is not None, "no docker compose client: ./scripts/bootstrap.sh --with-services installs one"
    proc = subprocess.run([*command, "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True,
                          cwd=REPO, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
