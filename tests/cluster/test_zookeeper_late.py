"""A daemon started before its ZooKeeper waits for it, saying so at each attempt, and goes on once it answers; with
no time left it fails with the error naming the servers (not a crash loop of restarts)."""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from storm_py.config import defaults
from storm_py.dev.zookeeper import ZooKeeperProcess, free_port
from storm_py.errors import StateError
from storm_py.node.session import open_storage

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]


def conf_for(port: int) -> dict[str, object]:
    return {**defaults(), "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": port,
            "storm.zookeeper.connection.timeout": 1000}


def test_a_zookeeper_that_comes_up_late_is_waited_for(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    data = Path(tempfile.mkdtemp(prefix="storm-py-late-zk-"))
    server = ZooKeeperProcess(data, port)  # (not tied to the starting thread, which ends at once; stopped below)
    retried = threading.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "trying again" in record.getMessage():
                retried.set()

    watch = Watch()
    logging.getLogger("storm_py.node.session").addHandler(watch)
    starter = threading.Thread(target=lambda: retried.wait(60) and server.start(), daemon=True)
    starter.start()
    try:
        with caplog.at_level(logging.WARNING, logger="storm_py.node.session"):
            storage = open_storage(conf_for(port), wait_secs=90)
        try:
            storage.create("/late", b"x")
            assert storage.exists("/late")
        finally:
            storage.close()
        said = [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()]
        assert said and f"127.0.0.1:{port}" in said[0] and "storm.zookeeper.start.wait.secs" in said[0]
    finally:
        logging.getLogger("storm_py.node.session").removeHandler(watch)
        starter.join(60)
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


def test_with_no_time_to_wait_a_missing_zookeeper_is_one_clear_error() -> None:
    port = free_port()
    with pytest.raises(StateError, match=rf"could not connect to ZooKeeper within 1s: no answer from 127.0.0.1:{port}"):
        open_storage(conf_for(port), wait_secs=0)
