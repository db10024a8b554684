"""examples/kafka_word_count.py against the dev broker: the last count per word in the output topic is exact
(no failures are injected, so at-least-once delivers each sentence once)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from examples import kafka_word_count as example
from storm_py import LocalCluster
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.dev.redis import RedisServerProcess
from storm_py.dev.zookeeper import free_port
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


def _readme_commands(section: str) -> list[list[str]]:
    """The commands of the ``sh`` block of the manual's page titled ``section``, split into words (comments and
    ``&`` dropped)."""
    text = next(page.read_text(encoding="utf-8") for page in sorted((REPO / "docs").rglob("*.md"))
                if page.read_text(encoding="utf-8").startswith(f"# {section}\n"))
    block = re.search(r"^```sh\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    assert block, section
    lines = (line.split("#")[0].strip().rstrip("&").strip() for line in block.group(1).splitlines())
    return [shlex.split(line) for line in lines if line]


def test_the_readmes_kafka_walk_through_runs_both_examples_against_one_broker(redis_server: RedisServerProcess) -> None:
    """The README's commands, top to bottom: `storm-py dev-kafka` with the topics it names, the word count printing
    the counts it wrote (read back with assign(), no consumer group), `--read` printing them again, then the
    exactly-once example against the same broker (its own topic: the word count's sentences are not counted), and
    the broker gone soon after Ctrl-C."""
    (dev_kafka, produce, read), managed = _readme_commands("Kafka"), _readme_commands("Managed state")
    assert dev_kafka[:4] == ["storm-py", "dev-kafka", "--port", "9092"]
    exactly_once = next(c for c in managed if c[1:2] == ["examples/kafka_exactly_once_counts.py"])
    broker = subprocess.Popen([*storm_py_command(), *dev_kafka[1:2], *dev_kafka[4:]], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)

    def python(command: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        args = [{"127.0.0.1:9092": bootstrap, "127.0.0.1:6379": f"{redis_server.host}:{redis_server.port}"}.get(a, a)
                for a in command[1:]]
        assert command[0] == "python"
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=180, check=False,
                              cwd=REPO, env=_env(), **kw)

    try:
        line = broker.stdout.readline().strip() if broker.stdout else ""
        assert line.startswith("kafka: "), line
        bootstrap = line.split(" ", 1)[1]
        ttl = produce.index("--ttl") + 1
        run = python([*produce[:ttl], "3", *produce[ttl + 1:]])
        assert run.returncode == 0, run.stderr
        rounds = int(produce[produce.index("--produce") + 1])
        assert f"produced {rounds * len(example.SENTENCES)} sentences" in run.stdout
        assert re.search(r"word counts in topic 'word-counts' \(\d+ words", run.stdout), run.stdout
        truth = Counter(w for s in example.SENTENCES for w in s.split())
        expected = {w: n * rounds for w, n in truth.items()}

        def printed() -> dict[str, int]:
            out = python(read).stdout
            return {m.group(1): int(m.group(2)) for m in re.finditer(r"^  (\S+)\s+(\d+)$", out, flags=re.M)}

        wait_until(lambda: printed() == expected, 60, interval=0.5, what="--read to print every word's count")
        counted = python(exactly_once)
        assert counted.returncode == 0 and "Traceback" not in counted.stderr, counted.stderr
        rounds = int(exactly_once[exactly_once.index("--produce") + 1])
        assert dict(re.findall(r"^(\S+)\t(\d+)$", counted.stdout, flags=re.M)) == {
            w: str(n * rounds) for w, n in truth.items()}, counted.stdout
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


def test_an_unreachable_broker_or_a_missing_topic_is_one_line_not_a_traceback(broker: Broker) -> None:
    for bootstrap, needle in ((f"127.0.0.1:{free_port()}", "listing topics on"),
                              (broker.bootstrap, "topic 'word-counts' does not exist")):
        run = subprocess.run([sys.executable, str(REPO / "examples" / "kafka_word_count.py"), "--bootstrap",
                              bootstrap, "--ttl", "1"], capture_output=True, text=True, timeout=120, check=False,
                             cwd=REPO, env=_env())
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        (line,) = run.stderr.strip().splitlines()
        assert line.startswith("kafka_word_count: ") and needle in line, line
