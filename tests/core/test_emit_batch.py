"""``SpoutCollector.emit_batch``: several tuples as one tuple tree, through a LocalCluster with one and two workers."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import Bolt, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import wait_until


class BatchSpout(Spout):
    """Emits ``batches`` (``(values list, msg_id)``) on its first call; records acks, fails, pending counts, errors."""

    def __init__(self, batches: list[tuple[list[list[Any]], Any]], results: dict[str, Any],
                 stream: str = "default") -> None:
        self.batches = batches
        self.results = results
        self.stream = stream

    def __deepcopy__(self, memo: dict[int, Any]) -> BatchSpout:
        return BatchSpout(self.batches, self.results, self.stream)

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.done = False

    def next_tuple(self) -> None:
        if self.done:
            return
        self.done = True
        for batch, msg_id in self.batches:
            try:
                sent = self.collector.emit_batch(batch, msg_id, self.stream)
            except ValueError as err:
                self.results.setdefault("errors", []).append(str(err))
                continue
            self.results.setdefault("sent", []).append(sent)
            self.results.setdefault("pending", []).append(self.collector.get_pending_count())

    def ack(self, msg_id: Any) -> None:
        self.results.setdefault("acked", []).append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.results.setdefault("failed", []).append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class FailMarkedBolt(Bolt):
    """Acks every input except ``-1``, which it fails, and ``-2``, which it never acks; records what it executed."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results

    def __deepcopy__(self, memo: dict[int, Any]) -> FailMarkedBolt:
        return FailMarkedBolt(self.results)

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.results.setdefault("executed", []).append(tup.values[0])
        if tup.values[0] == -1:
            self.collector.fail(tup)
        elif tup.values[0] != -2:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def run(batches: list[tuple[list[list[Any]], Any]], conf: dict[str, Any], wait_for: str, count: int,
        stream: str = "default", grouping: str = "shuffle") -> dict[str, Any]:
    results: dict[str, Any] = {}
    builder = TopologyBuilder()
    builder.set_spout("batches", BatchSpout(batches, results, stream))
    sink = builder.set_bolt("sink", FailMarkedBolt(results), 3)
    if grouping == "all":  # every tuple to each of the 3 tasks (the path for several targets per tuple)
        sink.all_grouping("batches")
    else:  # one target per tuple
        sink.shuffle_grouping("batches")
    with LocalCluster() as cluster:
        tid = cluster.submit_topology("emit-batch", conf, builder.create_topology())
        wait_until(lambda: len(results.get(wait_for, [])) >= count, 30, what=f"{count} {wait_for}")
        results["stats"] = [ex.stats for w in cluster.workers(tid) for ex in w.runtime.executors
                            if ex.component_id == "batches"]
        cluster.kill_topology("emit-batch", wait_secs=0)
    return results


@pytest.mark.parametrize("workers", [1, 2])
def test_a_batch_is_one_tree_acked_once_after_every_tuple(workers: int) -> None:
    """Each batch is one pending tuple and one ack, after every one of its tuples (on any task) was executed."""
    a = [[i] for i in range(50)]
    b = [[i] for i in range(100, 130)]
    results = run([(a, "a"), (b, "b")], {"topology.workers": workers}, "acked", 2)
    assert sorted(results["acked"]) == ["a", "b"]
    assert "failed" not in results
    assert sorted(results["executed"]) == list(range(50)) + list(range(100, 130))
    assert results["sent"] == [50, 30]
    assert results["pending"] == [1, 2]
    (stats,) = results["stats"]
    assert (stats.emitted, stats.acked, stats.failed) == (80, 80, 0)  # tuples, not trees


def test_a_batch_to_several_targets_per_tuple_is_acked_after_every_copy() -> None:
    a = [[i] for i in range(20)]
    results = run([(a, "a"), ([[-2]], "never")], {"topology.message.timeout.secs": 3}, "failed", 1,
                  grouping="all")
    assert results["acked"] == ["a"] and results["failed"] == ["never"]
    assert sorted(results["executed"]) == [-2] * 3 + sorted(list(range(20)) * 3)
    assert results["sent"] == [60, 3]


def test_one_failed_tuple_fails_its_batch_and_only_its_batch() -> None:
    bad = [[i] for i in range(20)] + [[-1]] + [[i] for i in range(20, 40)]
    good = [[i] for i in range(100, 110)]
    results = run([(bad, "bad"), (good, "good")], {}, "executed", 51)
    wait_until(lambda: "failed" in results and "acked" in results, 30, what="the batches' outcomes")
    assert results["failed"] == ["bad"]
    assert results["acked"] == ["good"]


def test_a_batch_with_a_tuple_never_acked_times_out_and_is_not_acked() -> None:
    held = [[i] for i in range(10)] + [[-2]]
    results = run([(held, "held"), ([[7]], "other")], {"topology.message.timeout.secs": 1}, "failed", 1)
    assert results["failed"] == ["held"]
    assert results["acked"] == ["other"]
    (stats,) = results["stats"]
    assert (stats.acked, stats.timed_out) == (1, 11)


def test_empty_untracked_and_ackerless_batches() -> None:
    """An empty batch with a message id is acked at once; without one, or without ackers, nothing is tracked."""
    results = run([([], "empty"), ([[1], [2]], None), ([[3]], "x")], {"topology.acker.executors": 0}, "executed", 3)
    wait_until(lambda: len(results.get("acked", [])) == 2, 30, what="two acks")
    assert sorted(results["acked"]) == ["empty", "x"]
    assert results["pending"] == [0, 0, 0]
    tracked = run([([], "empty")], {}, "acked", 1)
    assert tracked["acked"] == ["empty"] and tracked["sent"] == [0]


def test_an_undeclared_stream_is_refused_by_name() -> None:
    results: dict[str, Any] = {}
    builder = TopologyBuilder()
    builder.set_spout("batches", BatchSpout([([[1]], "m")], results, stream="nope"))
    builder.set_bolt("sink", FailMarkedBolt(results)).shuffle_grouping("batches")
    with LocalCluster() as cluster:
        cluster.submit_topology("emit-batch-bad", {}, builder.create_topology())
        wait_until(lambda: "errors" in results, 30, what="the error")
    assert "unknown stream 'nope'" in results["errors"][0]
    assert "executed" not in results
