"""A daemon asked to stop (SIGTERM) while its ZooKeeper is gone stops within seconds: the round in progress gives
up waiting for the connection, instead of holding the shutdown for the connection timeout and more."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.dev.zookeeper import ZooKeeperProcess, free_port
from tests.cluster.harness import thread_stacks

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]


@pytest.mark.parametrize("kind", ["nimbus", "supervisor"])
def test_sigterm_with_zookeeper_gone_stops_the_daemon_within_seconds(kind: str, tmp_path: Path) -> None:
    data = Path(tempfile.mkdtemp(prefix="storm-py-stop-zk-"))
    server = ZooKeeperProcess(data, free_port(), die_with_parent=True)
    server.start()
    nimbus_port = free_port()
    conf = {
        "storm.zookeeper.servers": ["127.0.0.1"],
        "storm.zookeeper.port": server.port,
        # a long connection timeout: without the interruption, the stop would wait for it (twice)
        "storm.zookeeper.connection.timeout": 30000,
        "nimbus.seeds": [f"127.0.0.1:{nimbus_port}"],
        "nimbus.thrift.port": nimbus_port,
        "nimbus.auth.token": "stop-test-token",
        "supervisor.slots.ports": [free_port()],
        "logviewer.port": free_port(),
        "storm.local.dir": str(tmp_path / "local"),
        "storm.log.dir": str(tmp_path / "logs"),
        "nimbus.monitor.freq.secs": 1,
        "supervisor.monitor.frequency.secs": 1,
    }
    conf_file = tmp_path / "storm.yaml"
    conf_file.write_text(yaml.safe_dump(conf))
    log = tmp_path / f"{kind}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "storm_py", "--log-level", "INFO", kind, "--config",
                                 str(conf_file)], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
    try:
        started = "serving" if kind == "nimbus" else "supervisor"
        wait_until(lambda: "connected to ZooKeeper" in log.read_text() and started in log.read_text(), 60.0,
                   interval=0.1, what=f"{kind} to start")  # fmt: skip
        server.stop()
        # the daemon sees the connection go (a round now waits for it)
        wait_until(lambda: "SUSPENDED" in log.read_text() or "onnection" in log.read_text().split(started, 1)[1],
                   30.0, interval=0.1, what=f"{kind} to notice ZooKeeper gone")  # fmt: skip
        asked = SYSTEM_CLOCK.now()
        before = len(log.read_text())  # a round may fail for want of ZooKeeper before the stop: not this test's
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            code = proc.wait(10.0)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{kind} still running 10 s after SIGTERM with ZooKeeper gone:\n{log.read_text()[-3000:]}"
                        f"\nits threads:\n{thread_stacks(proc.pid)}")
        took = SYSTEM_CLOCK.now() - asked
        assert code == 0, log.read_text()[-3000:]
        assert took < 10.0
        after = log.read_text()[before:]
        assert f"WARNING storm_py.node.loop: {kind} round failed" not in after, "a round cut by the stop is no failure"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
