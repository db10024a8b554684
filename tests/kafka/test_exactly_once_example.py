"""examples/kafka_exactly_once_counts.py against the dev broker and a real Redis: the committed counts equal the
words written, and a second run over more sentences goes on from the first run's counts and offsets."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from examples import kafka_exactly_once_counts as example
from examples import kafka_word_count as word_count
from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.dev.redis import RedisServerProcess
from storm_py.dev.zookeeper import free_port
from tests.kafka.conftest import Broker

REPO = Path(__file__).resolve().parents[2]


def test_kafka_exactly_once_counts_example(broker: Broker, redis_server: RedisServerProcess) -> None:
    topic = broker.topic(2, "sentences")
    conf = example.topology_conf(broker.bootstrap, topic, redis_server.host, redis_server.port)
    conf["topology.state.checkpoint.interval.ms"] = 100
    expected: Counter[str] = Counter()
    for rounds in (3, 2):  # the second run reads only what was written after the first
        expected.update(example.produce_sentences(broker.bootstrap, topic, rounds))
        with LocalCluster() as cluster:
            cluster.submit_topology("kafka-eo-example", conf, example.build(conf))
            wait_until(lambda: example.committed_counts(conf) == expected, 90, interval=0.2,
                       what=f"the counts after {sum(expected.values())} words")
            cluster.kill_topology("kafka-eo-example", wait_secs=0)


def _run_example(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, str(REPO / "examples" / "kafka_exactly_once_counts.py"), *args],
                          capture_output=True, text=True, timeout=120, check=False, cwd=REPO, env=env)


def test_sentences_it_did_not_write_end_the_example_with_one_line_not_a_traceback(
        broker: Broker, redis_server: RedisServerProcess) -> None:
    """Another program's sentences in the example's topic (as when two examples shared one) make the counts
    differ from what the run expects: it says so in one line naming the topic, and exits with status 1."""
    topic = broker.topic(2, "shared")
    word_count.produce_sentences(broker.bootstrap, topic, 2)  # written by another example
    run = _run_example("--bootstrap", broker.bootstrap, "--redis", f"{redis_server.host}:{redis_server.port}",
                       "--topic", topic, "--produce", "1", "--timeout", "8")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("kafka_exactly_once_counts: Redis holds ") and f"topic {topic!r} holds sentences" in line


def test_an_unreachable_redis_broker_or_topic_is_one_line(broker: Broker, redis_server: RedisServerProcess) -> None:
    redis = f"{redis_server.host}:{redis_server.port}"
    for args, needle in (
        (["--redis", f"127.0.0.1:{free_port()}"], "in Redis"),
        (["--redis", redis, "--bootstrap", f"127.0.0.1:{free_port()}"], "listing topics on"),
        (["--redis", redis, "--bootstrap", broker.bootstrap, "--topic", "no-such-topic"],
         "topic 'no-such-topic' does not exist"),
    ):
        run = _run_example(*args, "--timeout", "5")
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        (line,) = run.stderr.strip().splitlines()
        assert needle in line, line

