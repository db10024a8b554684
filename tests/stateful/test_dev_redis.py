"""`storm-py dev-redis`: starts redis-server on loopback, prints its address, stops (with the server) on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from storm_py.clock import wait_until
from storm_py.dev.redis import pings
from tests.cluster.harness import storm_py_command


def test_dev_redis_prints_its_address_and_stops_on_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "dev-redis.out"
    with out.open("wb") as f:
        proc = subprocess.Popen([*storm_py_command(), "dev-redis", "--dir", str(tmp_path / "data")], stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "redis: " in out.read_text(), 30, interval=0.05, what="the address line")
        host, port = out.read_text().split("redis: ", 1)[1].split()[0].rsplit(":", 1)
        assert host == "127.0.0.1"
        assert pings(host, int(port))
        assert (tmp_path / "data" / "redis.log").exists()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not pings(host, int(port)), "the server stopped with the command"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
