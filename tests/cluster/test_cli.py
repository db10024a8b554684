"""The command line without a cluster: every command's help, and one-line errors for bad input."""

from __future__ import annotations

import subprocess

import pytest
from click.testing import CliRunner

from storm_py.cli.main import cli
from storm_py.dev.zookeeper import free_port
from tests.cluster.harness import storm_py_command

COMMANDS = ["nimbus", "supervisor", "ui", "submit", "kill", "activate", "deactivate", "rebalance", "list", "logs",
            "dev-zookeeper", "dev-cluster", "worker"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_takes_config_options(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "--config" in result.output and "-c, --conf KEY=VALUE" in result.output


def test_storm_flags_are_where_storm_has_them() -> None:
    runner = CliRunner()
    assert "-w, --wait" in runner.invoke(cli, ["kill", "--help"]).output
    help_text = runner.invoke(cli, ["rebalance", "--help"]).output
    assert "-w, --wait" in help_text and "-n, --num-workers" in help_text and "-e, --executors" in help_text
    assert "-f, --follow" in runner.invoke(cli, ["logs", "--help"]).output
    dev = runner.invoke(cli, ["dev-cluster", "--help"]).output
    assert "--supervisors" in dev and "--workdir" in dev


def unreachable() -> list[str]:
    return ["-c", f"nimbus.seeds=['127.0.0.1:{free_port()}']", "-c", "storm.nimbus.retry.times=0"]


@pytest.mark.parametrize(
    "args",
    [["list"], ["kill", "t"], ["activate", "t"], ["deactivate", "t"], ["rebalance", "t", "-n", "2"]],
)
def test_an_unreachable_nimbus_is_a_one_line_error(args: list[str]) -> None:
    result = CliRunner().invoke(cli, [*args, *unreachable()])
    assert result.exit_code == 1
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "cannot reach nimbus" in lines[0]


def test_submit_checks_its_arguments_before_calling_nimbus(tmp_path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["submit", str(tmp_path), "no-colon", *unreachable()])
    assert result.exit_code == 1 and "is not of the form MODULE:FUNCTION" in result.output
    result = runner.invoke(cli, ["submit", str(tmp_path / "missing.whl"), "m:f", *unreachable()])
    assert result.exit_code == 1 and "does not exist" in result.output


def test_bad_overrides_are_usage_errors() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["list", "-c", "novalue"])
    assert result.exit_code == 2 and "key=value" in result.output
    result = runner.invoke(cli, ["rebalance", "t", "-e", "split"])
    assert result.exit_code == 2 and "COMPONENT=N" in result.output
    result = runner.invoke(cli, ["list", "--config", "/nonexistent/storm.yaml"])
    assert result.exit_code == 2 and "cannot read config file" in result.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["kill"], 2, "Missing argument 'NAME'"),
        (["list", "-c", "topology.workers=x"], 2, "'topology.workers' must be an integer"),
        (["no-such-command"], 2, "No such command"),
        (["list", *unreachable()], 1, "cannot reach nimbus"),
    ],
)
def test_the_installed_command_fails_with_one_line(args: list[str], code: int, message: str) -> None:
    proc = subprocess.run([*storm_py_command(), *args], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == code
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("Error: ") and message in proc.stderr


def test_a_dev_service_that_cannot_start_is_a_one_line_error(tmp_path) -> None:
    (tmp_path / "file").write_text("not a directory")
    proc = subprocess.run([*storm_py_command(), "dev-zookeeper", "--dir", str(tmp_path / "file" / "zk"), "--port", "0"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "ZooKeeper could not start" in proc.stderr and "file" in proc.stderr
