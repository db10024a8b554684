"""The stateful bolt executor's and the checkpoint forwarder's decisions (Storm's StatefulBoltExecutorTest and
CheckpointTupleForwarderTest expectations), with a recording collector instead of a cluster."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import BaseStatefulBolt, BasicBolt, Bolt, FailedException, KeyValueState
from storm_py.api.context import TopologyContext
from storm_py.stateful.at_least_once.bolt_wrappers import (
    HANDLE,
    STALE,
    WAIT,
    BasicCheckpointForwarder,
    CheckpointBarrier,
    CheckpointTupleForwarder,
    StatefulBoltExecutor,
)
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID, CHECKPOINT_STREAM_ID
from storm_py.testing import test_tuple


class Recorder:
    """A bolt collector that records what it is asked to do."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []

    def emit(self, values, anchors=None, stream="default"):
        self.log.append(("emit", (stream, list(values))))
        return []

    def emit_direct(self, task_id, values, anchors=None, stream="default"):
        self.log.append(("emit_direct", (stream, list(values))))

    def ack(self, tup):
        self.log.append(("ack", tup.values))

    def fail(self, tup):
        self.log.append(("fail", tup.values))

    def reset_timeout(self, tup):
        pass

    def report_error(self, exc):
        self.log.append(("error", str(exc)))

    def take(self) -> list[tuple[str, Any]]:
        log, self.log = self.log, []
        return log


def context(component: str = "count", task: int = 5, sources: dict[str, list[int]] | None = None) -> TopologyContext:
    tasks = {CHECKPOINT_COMPONENT_ID: [1], component: [task], **(sources or {})}
    return TopologyContext(
        topology_id="t-1", topology_name="t", task_id=task, component_id=component,
        task_to_component={t: c for c, ts in tasks.items() for t in ts}, component_tasks=tasks,
        component_streams={}, worker_tasks=[task],
    )


def checkpoint(txid: int, action: str, source: str = CHECKPOINT_COMPONENT_ID, task: int = 1):
    return test_tuple([txid, action], component=source, stream=CHECKPOINT_STREAM_ID, fields=["txid", "action"],
                      task=task)


def word(w: str):
    return test_tuple([w], component="split", fields=["word"])


class Counter(BaseStatefulBolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.calls: list[Any] = []

    def init_state(self, state):
        self.state = state
        self.calls.append("init_state")

    def execute(self, tup):
        w = tup.values[0]
        self.state.put(w, self.state.get(w, 0) + 1)
        self.collector.emit([w], tup)
        self.collector.ack(tup)

    def pre_prepare(self, txid):
        self.calls.append(("pre_prepare", txid))

    def pre_commit(self, txid):
        self.calls.append(("pre_commit", txid))

    def pre_rollback(self):
        self.calls.append("pre_rollback")


def stateful() -> tuple[StatefulBoltExecutor, Counter, Recorder, KeyValueState]:
    bolt = Counter()
    ex = StatefulBoltExecutor(bolt, [CHECKPOINT_COMPONENT_ID])
    rec = Recorder()
    state = KeyValueState()
    ex.prepare_with_state({}, context(), rec, state)
    return ex, ex.bolt, rec, state  # type: ignore[return-value]


def test_barrier_waits_for_every_input_task_and_ignores_older_transactions():
    barrier = CheckpointBarrier(3)
    assert [barrier.arrive("PREPARE", 1) for _ in range(3)] == [WAIT, WAIT, HANDLE]
    barrier.handled("PREPARE", 1)
    assert [barrier.arrive("COMMIT", 0) for _ in range(3)] == [WAIT, WAIT, STALE]
    barrier.handled("ROLLBACK", 1)  # a rollback of 1 makes 0 the last handled
    assert [barrier.arrive("INITSTATE", 0) for _ in range(3)] == [WAIT, WAIT, HANDLE]


def test_tuples_before_init_state_wait_and_run_after_it():
    ex, bolt, rec, state = stateful()
    ex.execute(word("a"))
    assert rec.take() == [] and len(state) == 0
    ex.execute(checkpoint(-1, "INITSTATE"))
    assert bolt.calls == ["init_state"]
    assert state.get("a") == 1
    # the input's ack is held; the checkpoint goes on downstream and is acked
    assert rec.take() == [("emit", ("default", ["a"])), ("emit", (CHECKPOINT_STREAM_ID, [-1, "INITSTATE"])),
                          ("ack", [-1, "INITSTATE"])]


def test_acks_are_held_until_the_checkpoint_commits():
    ex, bolt, rec, state = stateful()
    ex.execute(checkpoint(-1, "INITSTATE"))
    ex.execute(word("a"))
    ex.execute(checkpoint(0, "PREPARE"))
    ex.execute(word("b"))  # after the prepare: not in checkpoint 0
    rec.take()
    ex.execute(checkpoint(0, "COMMIT"))
    assert rec.take() == [("ack", ["a"]), ("emit", (CHECKPOINT_STREAM_ID, [0, "COMMIT"])), ("ack", [0, "COMMIT"])]
    assert state.committed_txid() == 0
    assert bolt.calls == ["init_state", ("pre_prepare", 0), ("pre_commit", 0)]
    ex.execute(checkpoint(1, "PREPARE"))
    ex.execute(checkpoint(1, "COMMIT"))
    assert ("ack", ["b"]) in rec.take()


def test_rollback_restores_the_committed_state_and_fails_every_held_input():
    ex, bolt, rec, state = stateful()
    ex.execute(checkpoint(-1, "INITSTATE"))
    ex.execute(word("a"))
    ex.execute(checkpoint(0, "PREPARE"))
    ex.execute(checkpoint(0, "COMMIT"))
    ex.execute(word("a"))
    ex.execute(checkpoint(1, "PREPARE"))
    ex.execute(word("b"))
    rec.take()
    ex.execute(checkpoint(1, "ROLLBACK"))
    assert rec.take()[:2] == [("fail", ["a"]), ("fail", ["b"])]
    assert dict(state) == {"a": 1}
    ex.execute(checkpoint(0, "INITSTATE"))  # recovery re-initialises the bolt with the restored state
    assert bolt.calls[-2:] == ["pre_rollback", "init_state"]


def test_prepare_before_init_state_fails_the_checkpoint():
    ex, _, rec, _ = stateful()
    ex.execute(checkpoint(3, "PREPARE"))
    assert rec.take() == [("fail", [3, "PREPARE"])]


def test_a_state_that_raises_fails_the_checkpoint_and_reports_it():
    ex, _, rec, _ = stateful()
    ex.execute(checkpoint(-1, "INITSTATE"))
    rec.take()
    ex.execute(checkpoint(5, "COMMIT"))  # nothing prepared: the state refuses
    log = rec.take()
    assert log[0] == ("fail", [5, "COMMIT"]) and log[1][0] == "error" and "txid 5" in log[1][1]


def test_stateful_bolts_must_anchor_their_emits():
    _, bolt, _, _ = stateful()
    with pytest.raises(ValueError, match="'count' emitted to stream 'default' without anchors"):
        bolt.collector.emit(["x"])


def test_checkpoints_are_handled_once_every_input_task_delivered_them():
    bolt = Counter()
    ex = StatefulBoltExecutor(bolt, ["split"])
    rec = Recorder()
    ex.prepare_with_state({}, context(sources={"split": [2, 3]}), rec, KeyValueState())
    ex.execute(checkpoint(-1, "INITSTATE", source="split", task=2))
    assert rec.take() == [("ack", [-1, "INITSTATE"])] and bolt.calls == []
    ex.execute(checkpoint(-1, "INITSTATE", source="split", task=3))
    assert bolt.calls == ["init_state"]
    assert rec.take() == [("emit", (CHECKPOINT_STREAM_ID, [-1, "INITSTATE"])), ("ack", [-1, "INITSTATE"])]


class Upper(BasicBolt):
    def execute(self, tup, collector):
        if tup.values[0] == "bad":
            raise FailedException("bad")
        collector.emit([tup.values[0].upper()])


class Plain(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


def test_forwarder_passes_checkpoints_on_and_runs_basic_bolts_with_their_acks():
    ex = CheckpointTupleForwarder(Upper(), ["words"])
    rec = Recorder()
    ex.prepare({}, context("upper", 7, {"words": [1]}), rec)
    ex.execute(word("a"))
    ex.execute(word("bad"))
    ex.execute(checkpoint(2, "PREPARE", source="words"))
    assert rec.take() == [("emit", ("default", ["A"])), ("ack", ["a"]), ("fail", ["bad"]),
                          ("emit", (CHECKPOINT_STREAM_ID, [2, "PREPARE"])), ("ack", [2, "PREPARE"])]
    plain = CheckpointTupleForwarder(Plain(), ["words"])
    plain.prepare({}, context("plain", 8, {"words": [1]}), rec)
    plain.execute(word("a"))
    assert rec.take() == [("ack", ["a"])]


class BasicRecorder:
    """A basic bolt's collector: records emits (the runtime anchors them to the input and acks it)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, list[Any]]] = []

    def emit(self, values, stream="default"):
        self.log.append((stream, list(values)))
        return []

    def emit_direct(self, task_id, values, stream="default"):
        self.log.append((stream, list(values)))

    def report_error(self, exc):
        pass


def test_a_basic_bolt_runs_as_a_basic_bolt_and_passes_checkpoints_on_once_every_input_delivered_them():
    ex = CheckpointTupleForwarder(Upper(), ["words"])
    ex.prepare({}, context("upper", 7, {"words": [1, 2]}), Recorder())
    forwarder = ex.basic_bolt
    assert isinstance(forwarder, BasicCheckpointForwarder)  # what the runtime runs on its basic path
    rec = BasicRecorder()
    forwarder.execute(word("a"), rec)
    forwarder.execute(checkpoint(3, "PREPARE", source="words", task=1), rec)
    assert rec.log == [("default", ["A"])]  # the checkpoint waits for the other input task
    forwarder.execute(checkpoint(3, "PREPARE", source="words", task=2), rec)
    forwarder.execute(checkpoint(2, "COMMIT", source="words", task=1), rec)
    forwarder.execute(checkpoint(2, "COMMIT", source="words", task=2), rec)  # older than the last one: dropped
    assert rec.log == [("default", ["A"]), (CHECKPOINT_STREAM_ID, [3, "PREPARE"])]
    with pytest.raises(FailedException):
        forwarder.execute(word("bad"), rec)


def test_stateful_bolts_hold_acks_and_release_them_all_at_commit():
    ex, _bolt, rec, _ = stateful()
    ex.execute(checkpoint(-1, "INITSTATE"))
    rec.take()
    for w in "abc":
        ex.execute(word(w))
    ex.execute(checkpoint(0, "PREPARE"))
    ex.execute(word("d"))
    ex.execute(checkpoint(0, "COMMIT"))
    acks = [v for kind, v in rec.take() if kind == "ack"]
    assert acks == [[0, "PREPARE"], ["a"], ["b"], ["c"], [0, "COMMIT"]]  # "d" waits for the next commit
