"""Shell bolts and spouts in LocalCluster: pystorm, a Node.js bolt and a bare-protocol bolt, both serializers, and
the faults (a process that exits, hangs, prints text, emits on an undeclared stream) with nothing lost.

The components' scripts live in ``resources/`` beside this module, the shell components' working directory.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from storm_py import Bolt, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.metrics import CountMetric
from storm_py.multilang import ShellBolt, ShellSpout

RESOURCES = Path(__file__).parent / "resources"
sys.path.insert(0, str(RESOURCES))
from sentences import SENTENCES  # noqa: E402
from slow_log import TAIL  # noqa: E402

pytest.importorskip("pystorm")

#: what the in-process components of one test share with it (components are copied per task)
SHARED: dict[str, dict[str, Any]] = {}
_tokens = itertools.count()


def shared(**init: Any) -> str:
    token = f"t{next(_tokens)}"
    SHARED[token] = dict(init)
    return token


def expected_counts(n: int) -> Counter[str]:
    return Counter(w for i in range(n) for w in SENTENCES[i % len(SENTENCES)].split())


class SentenceSpout(Spout):
    """Emits sentence i under message id i for i < n, replays what fails, records what is acked."""

    def __init__(self, token: str, n: int) -> None:
        self.token = token
        self.n = n

    def open(self, conf, context, collector):
        self.collector = collector
        self.next_id = 0
        self.replay: list[int] = []
        self.state = SHARED[self.token]

    def next_tuple(self):
        if self.replay:
            i = self.replay.pop()
        elif self.next_id < self.n:
            i = self.next_id
            self.next_id += 1
        else:
            return
        self.collector.emit([self.state.get("value", SENTENCES[i % len(SENTENCES)])], i)

    def ack(self, msg_id):
        self.state["acked"].add(msg_id)

    def fail(self, msg_id):
        self.state["failed"] += 1
        self.replay.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(["sentence"])


class WordCounter(Bolt):
    """Counts words (or, for ``[word, count]`` inputs, keeps the highest count seen) into the shared state."""

    def __init__(self, token: str) -> None:
        self.token = token

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = SHARED[self.token]["counts"]

    def execute(self, tup):
        if len(tup.values) == 2:
            word, count = tup.values
            self.counts[word] = max(self.counts[word], count)
        else:
            self.counts[tup.values[0]] += 1
        self.collector.ack(tup)


class Split(ShellBolt):
    def __init__(self, *command: str) -> None:
        super().__init__(*command)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class Count(ShellBolt):
    def __init__(self, serializer: str) -> None:
        super().__init__("python3", "count_bolt.py", serializer)

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "count"])


class Sentences(ShellSpout):
    def __init__(self, n: int, serializer: str) -> None:
        super().__init__("python3", "sentence_spout.py", str(n), serializer)

    def declare_output_fields(self, declarer):
        declarer.declare(["sentence"])


def summary_of(cluster: LocalCluster, name: str, component: str) -> dict[str, Any]:
    summary = cluster.get_topology_summary(name)
    return next(c for c in summary["spouts"] + summary["bolts"] if c.get("spoutId", c.get("boltId")) == component)


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_pystorm_spout_and_bolts_count_words_exactly(serializer: str, caplog: pytest.LogCaptureFixture) -> None:
    n = 60
    token = shared(counts=Counter())
    caplog.set_level(logging.INFO, logger="storm_py.multilang")
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences(n, serializer))
    builder.set_bolt("split", Split("python3", "split_bolt.py", serializer), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", Count(serializer), 2).fields_grouping("split", ["word"])
    builder.set_bolt("record", WordCounter(token)).shuffle_grouping("count")
    conf = {"topology.multilang.serializer": serializer, "topology.workers": 2}
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", conf, builder.create_topology())
        counts = SHARED[token]["counts"]
        wait_until(lambda: counts == expected_counts(n), 60, what="exact word counts")
        wait_until(lambda: f"all {n} sentences acked" in caplog.text, 30, what="the spout's last ack")
        spout = summary_of(cluster, "wc", "sentences")
        assert spout["failed"] == 0
        assert not spout.get("lastError")


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js components run where node is installed")
def test_node_split_bolt_counts_words_exactly_with_max_pending_one() -> None:
    n = 40
    token = shared(counts=Counter(), acked=set(), failed=0)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(token, n))
    builder.set_bolt("split", Split("node", "split_sentence.js"), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCounter(token)).shuffle_grouping("split")
    with LocalCluster() as cluster:
        cluster.submit_topology("node-wc", {"topology.shellbolt.max.pending": 1}, builder.create_topology())
        state = SHARED[token]
        wait_until(lambda: len(state["acked"]) == n, 60, what="every sentence acked")
        assert state["counts"] == expected_counts(n)
        assert state["failed"] == 0


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_max_pending_bounds_the_writes_not_what_a_batching_process_holds(serializer: str) -> None:
    """As in Storm, max pending is the queue of writes: a process that answers only once it has read five inputs
    gets them with max pending 1 (bounding what it holds unanswered instead would leave it waiting forever)."""
    n = 20
    token = shared(counts=Counter(), acked=set(), failed=0)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(token, n))
    builder.set_bolt("split", Split("python3", "group_split_bolt.py", serializer)).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCounter(token)).shuffle_grouping("split")
    conf = {"topology.shellbolt.max.pending": 1, "topology.multilang.serializer": serializer}
    with LocalCluster() as cluster:
        cluster.submit_topology("group-wc", conf, builder.create_topology())
        state = SHARED[token]
        wait_until(lambda: len(state["acked"]) == n, 60, what="every sentence acked")
        assert state["counts"] == expected_counts(n)
        assert state["failed"] == 0


class ProtocolSpout(ShellSpout):
    def __init__(self, serializer: str) -> None:
        super().__init__("python3", "protocol_spout.py", serializer)

    def declare_output_fields(self, declarer):
        declarer.declare(["value"])


class Chatty(ShellBolt):
    def __init__(self, record: str) -> None:
        super().__init__("python3", "chatty_bolt.py", record)

    def prepare(self, conf, context, collector):
        self.seen = context.register_metric("seen", CountMetric(), 60)
        SHARED[conf["test.token"]]["metric"] = self.seen
        super().prepare(conf, context, collector)

    def declare_output_fields(self, declarer):
        declarer.declare(["value"])


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_protocol_ids_task_ids_log_error_metrics_and_handshake(
    serializer: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = shared()
    record = tmp_path / "handshake.json"
    caplog.set_level(logging.DEBUG, logger="storm_py.multilang")
    builder = TopologyBuilder()
    builder.set_spout("ids", ProtocolSpout(serializer))
    # the bare-protocol bolt speaks JSON only: its component conf overrides the topology's serializer
    builder.set_bolt("chatty", Chatty(str(record))).shuffle_grouping("ids").add_configurations(
        {"topology.multilang.serializer": "json", "topology.subprocess.timeout.secs": 2.5})
    builder.set_bolt("sink", WordCounter(shared(counts=Counter()))).shuffle_grouping("chatty")
    conf = {"topology.multilang.serializer": serializer, "test.token": token}
    with LocalCluster() as cluster:
        cluster.submit_topology("proto", conf, builder.create_topology())
        wait_until(lambda: "spout activated" in caplog.text, 30, what="activate sent to the spout")
        ids = [0, 7, "zero", 1.5, [1, "a"], {"k": [2]}, True]
        for i in ids:
            line = f"acked {json.dumps(i, sort_keys=True)}"
            wait_until(lambda line=line: line in caplog.text, 30, what=line)
        assert "failed" not in caplog.text
        hello = json.loads(record.read_text())
        context = hello["handshake"]["context"]
        chatty_task = context["taskid"]
        assert context["componentid"] == "chatty"
        assert context["task->component"][str(chatty_task)] == "chatty"
        assert context["streams"] == ["default"]
        assert context["stream->outputfields"] == {"default": ["value"]}
        assert context["source->stream->grouping"] == {"ids": {"default": {"type": "shuffle"}}}
        assert context["source->stream->fields"] == {"ids": {"default": ["value"]}}
        assert context["stream->target->grouping"] == {"default": {"sink": {"type": "shuffle"}}}
        assert hello["handshake"]["conf"]["test.token"] == token
        assert hello["pid_file"] is True
        assert Path(hello["cwd"]) == RESOURCES
        tasks_line = f"task ids [{chatty_task}]"
        assert tasks_line in caplog.text  # the spout's need_task_ids answer: the chatty task
        sink_task = next(t for t, c in context["task->component"].items() if c == "sink")
        wait_until(lambda: f"chatty task ids [{sink_task}]" in caplog.text, 30, what="the bolt's task ids")
        warnings = [r for r in caplog.records if r.name == "storm_py.multilang.chatty" and r.levelno == logging.WARNING]
        assert any("chatty got" in r.getMessage() for r in warnings)
        assert SHARED[token]["metric"].get_value_and_reset() >= len(ids)
        chatty = summary_of(cluster, "proto", "chatty")
        assert "chatty complains about" in chatty["lastError"]
        assert "'chatty'" in chatty["lastError"]
        # idle longer than its 2.5 s timeout: heartbeats (every second) keep the process alive
        wait_until(lambda: caplog.text.count("chatty heartbeat from task -1") >= 5, 30, what="five heartbeats")
        assert "answered nothing" not in caplog.text
        cluster.deactivate("proto")
        wait_until(lambda: "spout deactivated" in caplog.text, 30, what="deactivate sent to the spout")


class Missing(ShellBolt):
    def __init__(self) -> None:
        super().__init__("no-such-command-here", "x.py")


def test_a_command_that_cannot_start_is_reported_naming_the_component() -> None:
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(shared(acked=set(), failed=0), 1))
    builder.set_bolt("missing", Missing()).shuffle_grouping("sentences")
    with LocalCluster() as cluster:
        cluster.submit_topology("missing", {}, builder.create_topology())

        def error() -> str:
            return summary_of(cluster, "missing", "missing").get("lastError") or ""

        wait_until(lambda: "cannot start" in error(), 30, what="the error of the missing command")
        assert "shell bolt 'missing'" in error()
        assert "no-such-command-here" in error()


class Faulty(ShellBolt):
    def __init__(self, mode: str, marker: str, serializer: str = "json") -> None:
        super().__init__("python3", "faulty_bolt.py", mode, "5", marker, serializer)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


@pytest.mark.parametrize(("mode", "reported"), [
    ("exit", "exit code 3"),
    ("hang", "answered nothing for"),
    ("garbage", "not the multilang protocol: 'hello, this is not the protocol'"),
    ("undeclared", "'nowhere'"),
])
def test_faulty_bolt_is_reported_restarted_and_nothing_is_lost(mode: str, reported: str, tmp_path: Path) -> None:
    n = 30
    token = shared(counts=Counter(), acked=set(), failed=0)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(token, n))
    builder.set_bolt("faulty", Faulty(mode, str(tmp_path / "armed"))).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCounter(token)).shuffle_grouping("faulty")
    conf: dict[str, Any] = {"topology.message.timeout.secs": 60}
    if mode == "hang":
        conf["topology.subprocess.timeout.secs"] = 2
    with LocalCluster() as cluster:
        cluster.submit_topology("faults", conf, builder.create_topology())
        state = SHARED[token]
        wait_until(lambda: len(state["acked"]) == n, 60, what="every sentence acked")
        assert state["failed"] >= 1  # what the lost process held was failed and replayed
        counts = state["counts"]
        assert all(counts[w] >= c for w, c in expected_counts(n).items())
        error = summary_of(cluster, "faults", "faulty")["lastError"]
        assert "shell bolt 'faulty'" in error
        assert reported in error


@pytest.mark.parametrize(("mode", "serializer", "reported"), [
    ("stderr", "json", "wrote a stderr line longer than 65536 bytes (topology.multilang.max.stderr.line.bytes): "
                       "'no newline ever aaaa"),
    ("unended", "json", "a message longer than 1048576 bytes (topology.multilang.max.message.bytes): '{aaaa"),
    ("bigbin", "msgpack", "a message longer than 1048576 bytes (topology.multilang.max.message.bytes)"),
])
def test_a_process_attacking_its_worker_is_a_fault_of_its_component_and_every_tuple_is_acked(
    mode: str, serializer: str, reported: str, tmp_path: Path
) -> None:
    """64 MiB on stderr without a newline, ``{`` and 64 MiB without an ``end`` line, a msgpack bin declared 2 GiB
    long: each is reported as the component's error at its bound, the process is replaced, nothing is lost."""
    n = 30
    token = shared(counts=Counter(), acked=set(), failed=0)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(token, n))
    builder.set_bolt("hostile", Faulty(mode, str(tmp_path / "armed"), serializer)).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCounter(token)).shuffle_grouping("hostile")
    conf: dict[str, Any] = {"topology.message.timeout.secs": 60, "topology.multilang.serializer": serializer,
                            "topology.multilang.max.message.bytes": 1 << 20,
                            "topology.multilang.max.stderr.line.bytes": 1 << 16}
    with LocalCluster() as cluster:
        cluster.submit_topology("hostile", conf, builder.create_topology())
        state = SHARED[token]
        wait_until(lambda: len(state["acked"]) == n, 60, what="every sentence acked")
        assert state["failed"] >= 1  # what the lost process held was failed and replayed
        assert all(state["counts"][w] >= c for w, c in expected_counts(n).items())
        error = summary_of(cluster, "hostile", "hostile")["lastError"]
        assert "shell bolt 'hostile'" in error
        assert reported in error


def test_value_the_serializer_cannot_carry_fails_that_tuple() -> None:
    token = shared(counts=Counter(), acked=set(), failed=0, value={"a set"})
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(token, 1))
    builder.set_bolt("split", Split("python3", "split_bolt.py")).shuffle_grouping("sentences")
    with LocalCluster() as cluster:
        cluster.submit_topology("unencodable", {}, builder.create_topology())
        state = SHARED[token]
        wait_until(lambda: state["failed"] >= 1, 30, what="the tuple failed")
        error = summary_of(cluster, "unencodable", "split")["lastError"]
        assert "shell bolt 'split'" in error
        assert "cannot send a tuple" in error


class FaultySentences(ShellSpout):
    def __init__(self, mode: str, marker: str) -> None:
        super().__init__("python3", "faulty_spout.py", mode, "20", "5", marker)

    def declare_output_fields(self, declarer):
        declarer.declare(["sentence"])


@pytest.mark.parametrize(("mode", "reported"), [("exit", "exit code 4"), ("hang", "left 'next' unanswered")])
def test_faulty_spout_is_reported_and_restarted(
    mode: str, reported: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = shared(counts=Counter())
    caplog.set_level(logging.INFO, logger="storm_py.multilang")
    builder = TopologyBuilder()
    builder.set_spout("sentences", FaultySentences(mode, str(tmp_path / "armed")))
    builder.set_bolt("count", WordCounter(token)).shuffle_grouping("sentences")
    with LocalCluster() as cluster:
        conf = {"topology.subprocess.timeout.secs": 2} if mode == "hang" else {}
        cluster.submit_topology("spout-faults", conf, builder.create_topology())
        wait_until(lambda: "all 20 sentences acked" in caplog.text, 60, what="the new process's sentences acked")
        error = summary_of(cluster, "spout-faults", "sentences")["lastError"]
        assert "shell spout 'sentences'" in error
        assert reported in error


class _Seen(logging.Handler):
    """Which of some texts the records' messages ended with (the messages themselves may be megabytes)."""

    def __init__(self, *endings: str) -> None:
        super().__init__(logging.INFO)
        self.endings = endings
        self.seen: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.seen.update(e for e in self.endings if message.endswith(e))


def test_a_long_message_written_slowly_keeps_its_process_alive(tmp_path: Path) -> None:
    """Bytes arriving are a sign of life: a spout and a bolt each write a 1.5 MB log message over about 3 s with
    topology.subprocess.timeout.secs at 2; the messages arrive, and neither process is killed."""
    seen = _Seen(TAIL, "all 20 sentences acked")
    logger = logging.getLogger("storm_py.multilang")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(seen)
    token = shared(counts=Counter())
    builder = TopologyBuilder()
    builder.set_spout("sentences", FaultySentences("slowlong", str(tmp_path / "spout-armed")))
    builder.set_bolt("slow", Faulty("slowlong", str(tmp_path / "bolt-armed"))).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCounter(token)).shuffle_grouping("slow")
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("slow", {"topology.subprocess.timeout.secs": 2}, builder.create_topology())
            wait_until(lambda: seen.seen["all 20 sentences acked"] and seen.seen[TAIL] >= 2, 60,
                       what="both long messages and every sentence acked")
            for component in ("sentences", "slow"):
                assert not summary_of(cluster, "slow", component).get("lastError"), component
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)


def test_simulated_time_waits_for_the_process_and_heartbeats_keep_it_alive() -> None:
    token = shared(counts=Counter(), acked=set(), failed=0)
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(token, 20))
    # heartbeats answered 0.3 s (real) late: without waiting for them, the clock would run past the 3 s timeout
    builder.set_bolt("split", Split("python3", "slow_heartbeat_bolt.py", "0.3")).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCounter(token)).shuffle_grouping("split")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("simulated", {"topology.subprocess.timeout.secs": 3}, builder.create_topology())
        cluster.advance_cluster_time(1)  # each step waits until the cluster, the shell bolt's process included, idles
        state = SHARED[token]
        assert len(state["acked"]) == 20
        assert state["counts"] == expected_counts(20)
        cluster.advance_cluster_time(6)  # six heartbeats, each answered before the clock moves on
        assert not summary_of(cluster, "simulated", "split").get("lastError")
