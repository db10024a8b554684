"""examples/kafka_word_count.py against the dev broker: the last count per word in the output topic is exact
(no failures are injected, so at-least-once delivers each sentence once)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from examples import kafka_word_count as example
from storm_py import LocalCluster
from storm_py.clock import SYSTEM_CLOCK, wait_until
from tests.cluster.harness import storm_py_command
from tests.kafka.conftest import Broker

REPO = Path(__file__).resolve().parents[2]


def test_kafka_word_count_example(broker: Broker) -> None:
    source, sink = broker.topic(2, "sentences"), broker.topic(1, "counts")
    rounds = 4
    example.produce_sentences(broker.bootstrap, source, rounds)
    truth = Counter(w for s in example.SENTENCES for w in s.split())
    expected = {w.encode(): str(n * rounds).encode() for w, n in truth.items()}
    total_updates = sum(truth.values()) * rounds
    conf = {"kafka.bootstrap": broker.bootstrap, "kafka.input.topic": source, "kafka.output.topic": sink}
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-wc", conf, example.build(conf))
        rows = []

        def done() -> bool:
            rows[:] = broker.read_all(sink, 1, total_updates, timeout=1.0)
            return len(rows) >= total_updates

        wait_until(done, 90, interval=0.5, what=f"{total_updates} count updates in the output topic")
        cluster.kill_topology("kafka-wc", wait_secs=0)
    last: dict[bytes | None, bytes] = {}
    for key, value in rows:
        if key is not None and (key not in last or int(value) > int(last[key])):
            last[key] = value
    assert last == expected


def test_dev_kafka_and_the_example_print_the_counts_and_stop_promptly() -> None:
    """The README's Kafka commands: `storm-py dev-kafka` with topics, the example printing the counts it wrote
    (read back with assign(), no consumer group), `--read` printing them again, and the broker gone soon after
    Ctrl-C."""
    broker = subprocess.Popen([*storm_py_command(), "dev-kafka", "--topic", "sentences:2", "--topic", "word-counts:1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = broker.stdout.readline().strip() if broker.stdout else ""
        assert line.startswith("kafka: "), line
        bootstrap = line.split(" ", 1)[1]
        run = subprocess.run([sys.executable, str(REPO / "examples" / "kafka_word_count.py"), "--bootstrap", bootstrap,
                              "--produce", "2", "--ttl", "3"], capture_output=True, text=True, timeout=120,
                             check=False, cwd=REPO, env=_env())
        assert run.returncode == 0, run.stderr
        assert "produced 10 sentences" in run.stdout
        assert re.search(r"word counts in topic 'word-counts' \(\d+ words", run.stdout), run.stdout
        truth = Counter(w for s in example.SENTENCES for w in s.split())
        expected = {w: n * 2 for w, n in truth.items()}

        def printed() -> dict[str, int]:
            out = subprocess.run([sys.executable, str(REPO / "examples" / "kafka_word_count.py"), "--bootstrap",
                                  bootstrap, "--read"], capture_output=True, text=True, timeout=60, check=True,
                                 cwd=REPO, env=_env()).stdout
            return {m.group(1): int(m.group(2)) for m in re.finditer(r"^  (\S+)\s+(\d+)$", out, flags=re.M)}

        wait_until(lambda: printed() == expected, 60, interval=0.5, what="--read to print every word's count")
        broker.send_signal(signal.SIGINT)
        start = SYSTEM_CLOCK.now()
        wait_until(lambda: broker.poll() is not None, 10, interval=0.05, what="dev-kafka to exit")
        assert SYSTEM_CLOCK.now() - start < 3.0 and broker.returncode == 0
    finally:
        if broker.poll() is None:
            os.killpg(broker.pid, signal.SIGKILL)
        broker.communicate(timeout=10)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
