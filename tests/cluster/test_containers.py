"""docker-compose.yml and its Dockerfile: structure always; `docker compose config` where the client has compose."""

from __future__ import annotations

import re
import shutil
import subprocess

import click
import pytest
import yaml

from storm_py.cli.main import cli
from storm_py.config import read_storm_config
from tests.cluster.harness import REPO

COMPOSE = REPO / "docker-compose.yml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def test_compose_runs_zookeeper_nimbus_and_two_supervisors_on_the_built_image() -> None:
    services = compose()["services"]
    assert {"zookeeper", "nimbus", "supervisor1", "supervisor2"} <= set(services)
    assert services["zookeeper"]["image"].startswith("zookeeper:")
    for name in ("nimbus", "supervisor1", "supervisor2"):
        svc = services[name]
        assert svc["build"] == "." and (REPO / "Dockerfile").is_file()
        host_dir, _, target = svc["volumes"][0].partition(":")
        assert target.startswith("/conf")
        assert (REPO / host_dir / "storm.yaml").is_file()
    assert services["nimbus"]["command"][services["nimbus"]["command"].index("nimbus") + 1:][:2] == [
        "--config", "/conf/storm.yaml"]
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
    assert f"{conf['nimbus.thrift.port']}:{conf['nimbus.thrift.port']}" in services["nimbus"]["ports"]


def test_the_operator_configuration_is_all_comments_and_names_real_keys() -> None:
    text = (REPO / "conf" / "storm.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text) is None  # nothing active: running in the repository changes no default
    keys = set(re.findall(r"^# ([a-z][a-z0-9_.]+):", text, flags=re.MULTILINE))
    assert {"storm.zookeeper.servers", "nimbus.seeds", "nimbus.auth.token", "supervisor.slots.ports"} <= keys


def test_the_dockerfile_installs_the_package_and_runs_the_cli() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11", text, flags=re.MULTILINE)
    assert 'ENTRYPOINT ["storm-py"]' in text
    for path in ("pyproject.toml", "setup.cfg", "README.md", "storm_py"):
        assert path in text and (REPO / path).exists()


def _compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_config_accepts_the_file() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no docker compose client on this machine (the structural tests above still ran)")
    proc = subprocess.run([*command, "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True,
                          cwd=REPO, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
