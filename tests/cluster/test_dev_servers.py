"""The dev servers as a newcomer starts them: from any folder, with relative paths, and a failure that shows the
server's own last lines."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from storm_py.cli.main import cli
from storm_py.clock import wait_until
from storm_py.dev.kafka import BROKER_ENV, KafkaBrokerProcess, KafkaUnavailableError
from storm_py.dev.redis import SERVER_ENV, RedisServerProcess, RedisUnavailableError, pings
from storm_py.dev.zookeeper import ZooKeeperProcess, ZooKeeperUnavailableError, free_port
from tests.cluster.harness import storm_py_command


def _failing_server(tmp_path: Path, line: str) -> str:
    """A stand-in server that says ``line`` on stderr and exits 1, as a server refusing its arguments does."""
    script = tmp_path / "server.sh"
    script.write_text(f'#!/bin/sh\necho starting\necho "{line}" >&2\nexit 1\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_redis_started_with_a_relative_dir_serves_from_any_folder(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    server = RedisServerProcess(Path("dev-redis"), die_with_parent=True)
    try:
        server.start()
        assert pings(server.host, server.port)
        assert (tmp_path / "dev-redis" / "redis.log").stat().st_size > 0  # its own log, where it was asked
    finally:
        server.stop()


def test_dev_redis_as_the_readme_runs_it_prints_its_address(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([*storm_py_command(), "dev-redis", "--port", str(port)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == f"redis: 127.0.0.1:{port}\n", proc.stderr.read() if proc.stderr else ""
        assert pings("127.0.0.1", port)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert (tmp_path / "dev-redis" / "redis.log").is_file()


def test_a_redis_that_exits_shows_its_own_last_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_ENV, _failing_server(tmp_path, "Can't open the log file: No such file or directory"))
    server = RedisServerProcess(tmp_path / "redis")
    with pytest.raises(RedisUnavailableError) as err:
        server.start(timeout=10)
    assert "redis-server exited with code 1" in err.value.message
    assert err.value.message.endswith("starting\nCan't open the log file: No such file or directory")
    assert not server.running
    # the command says the same, in one error
    result = CliRunner().invoke(cli, ["dev-redis", "--dir", str(tmp_path / "cli")])
    assert result.exit_code == 1
    assert "Can't open the log file: No such file or directory" in result.output


def test_a_kafka_broker_that_exits_shows_its_own_last_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BROKER_ENV, _failing_server(tmp_path, "Error: Address in use (os error 98)"))
    broker = KafkaBrokerProcess()  # no log file: the output is kept for the error only
    with pytest.raises(KafkaUnavailableError, match=r"exited with code 1:\nstarting\nError: Address in use"):
        broker.start(timeout=10)
    assert not broker.running


def test_a_zookeeper_that_exits_shows_its_own_last_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORM_ZK_CLASSPATH", str(tmp_path / "missing.jar"))
    monkeypatch.chdir(tmp_path)
    zk = ZooKeeperProcess(Path("zk"), free_port(), die_with_parent=True)
    with pytest.raises(ZooKeeperUnavailableError) as err:
        zk.start(timeout=30)
    assert f"(log: {tmp_path / 'zk' / 'zookeeper.log'})" in err.value.message
    assert "ZooKeeperServerMain" in err.value.message  # Java's own words: it could not load the main class
    assert f"dataDir={tmp_path / 'zk' / 'data'}" in (tmp_path / "zk" / "zoo.cfg").read_text(encoding="utf-8")


def test_a_zookeeper_started_with_a_relative_dir_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    zk = ZooKeeperProcess(Path("zk"), free_port(), die_with_parent=True)
    try:
        zk.start()
        wait_until(lambda: any((tmp_path / "zk" / "data").iterdir()), 10, what="ZooKeeper's data in zk/data")
    finally:
        zk.stop()
    assert not (tmp_path / "zk" / "zk").exists()


def test_a_port_already_served_is_refused_before_a_second_server_starts(tmp_path: Path) -> None:
    first = RedisServerProcess(tmp_path / "first", die_with_parent=True)
    first.start()
    try:
        second = RedisServerProcess(tmp_path / "second", first.port)
        with pytest.raises(RedisUnavailableError, match=f"127.0.0.1:{first.port}: something listens there already"):
            second.start(timeout=10)
        assert not second.running and not (tmp_path / "second").exists()
        # the command says so before it prints an address
        result = CliRunner().invoke(cli, ["dev-redis", "--port", str(first.port), "--dir", str(tmp_path / "cli")])
        assert result.exit_code == 1 and "redis:" not in result.output
        assert "something listens there already" in result.output
    finally:
        first.stop()
