"""`storm-py dev-kafka`: starts the broker on loopback, creates the topics asked for, prints its address, stops
(with the broker) on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from storm_py.clock import wait_until
from storm_py.dev.kafka import accepts
from storm_py.kafka.client import KafkaConsumerClient
from tests.cluster.harness import storm_py_command


def test_dev_kafka_prints_its_address_and_stops_on_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "dev-kafka.out"
    with out.open("wb") as f:
        proc = subprocess.Popen([*storm_py_command(), "dev-kafka", "--topic", "words:3"], stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "kafka: " in out.read_text(), 30, interval=0.05, what="the address line")
        address = out.read_text().split("kafka: ", 1)[1].split()[0]
        host, port = address.rsplit(":", 1)
        assert host == "127.0.0.1"
        client = KafkaConsumerClient(address, "probe")
        try:
            assert [p.partition for p in client.topic_partitions(10.0)["words"]] == [0, 1, 2]
        finally:
            client.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not accepts(host, int(port)), "the broker stopped with the command"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
