"""The counting protocol (CoordinatedBolt): when a task has its whole batch, and how failures travel."""

from __future__ import annotations

from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import SimulatedClock
from storm_py.errors import FailedException
from storm_py.transactional import BaseBatchBolt, TransactionAttempt
from storm_py.transactional.batch import BatchBoltExecutor
from storm_py.transactional.coordinated import CoordinatedBolt
from storm_py.transactional.streams import COMMIT_STREAM, COORD_STREAM
from tests.transactional.components import CountingBatchBolt
from tests.transactional.helpers import BoltCapture, make_context

ME = 10
TASKS = {"up": [1, 2], "bolt": [ME, 11], "coord": [99]}
A = TransactionAttempt(1, 42)


def tup(values, component="up", stream="default", task=1):
    return Tuple(list(values), Fields([f"f{i}" for i in range(len(values))]), component, stream, task, None)


def report(counts, task=1, batch=A):
    return tup([batch, counts], "up", COORD_STREAM, task)


def make_bolt(delegate=None, committer=False, clock=None, conf=None):
    bolt = CoordinatedBolt(
        delegate or BatchBoltExecutor(CountingBatchBolt()),
        {"up": False},
        ("coord", COMMIT_STREAM) if committer else None,
    )
    capture = BoltCapture()
    capture.targets["default"] = [20]
    bolt.prepare(dict(conf or {}), make_context(None, "bolt", ME, TASKS, clock=clock), capture)
    return bolt, capture


def test_finishes_after_all_reports_and_tuples_then_reports_downstream():
    bolt, cap = make_bolt()
    bolt.execute(tup([A, "x"]))
    bolt.execute(tup([A, "y"], task=2))
    bolt.execute(report({ME: 1, 11: 3}, task=1))
    assert "default" not in cap.log, "one source task has not reported yet"
    assert cap.log["ack"] == [[A, "x"], [A, "y"]]
    bolt.execute(report({ME: 1}, task=2))
    kinds = [k for k, _ in cap.events]
    assert kinds[-4:] == ["default", COORD_STREAM, "ack", "ack"]  # finish, report, then release the reports
    assert cap.log["default"] == [[A, 2]]
    assert cap.log[COORD_STREAM] == [[A, {20: 1}]]
    assert cap.anchors[-1] == (COORD_STREAM, [[A, {ME: 1, 11: 3}], [A, {ME: 1}]])
    assert bolt.tracked == {}


def test_a_task_that_received_nothing_finishes_with_an_empty_batch():
    bolt, cap = make_bolt()
    bolt.execute(report({11: 2}, task=1))
    bolt.execute(report({}, task=2))
    assert cap.log["default"] == [[A, 0]]
    assert cap.log[COORD_STREAM] == [[A, {20: 1}]]


def test_a_report_overtaking_its_tuples_is_waited_on():
    bolt, cap = make_bolt()
    bolt.execute(report({ME: 1}, task=1))
    bolt.execute(report({}, task=2))
    assert "default" not in cap.log
    bolt.execute(tup([A, "late"]))
    assert cap.log["default"] == [[A, 1]]
    assert cap.anchors[-1][1] == [[A, {ME: 1}], [A, {}]]
    assert cap.log["ack"][-1] == [A, "late"]


class Picky(BaseBatchBolt):
    def prepare(self, conf, context, collector, id):
        self.collector = collector

    def execute(self, t):
        if t.get_value(1) == "bad":
            raise FailedException("bad")

    def finish_batch(self):
        raise FailedException("cannot finish")


def test_a_failed_tuple_fails_the_held_reports():
    bolt, cap = make_bolt(BatchBoltExecutor(Picky()))
    bolt.execute(report({ME: 2}, task=1))
    bolt.execute(tup([A, "bad"]))
    assert cap.log["fail"] == [[A, {ME: 2}], [A, "bad"]]
    bolt.execute(tup([A, "ok"]))  # the batch failed: its stragglers and later reports fail at once
    bolt.execute(report({}, task=2))
    assert cap.log["fail"][2:] == [[A, "ok"], [A, {}]]
    assert "default" not in cap.log


def test_failed_exception_in_finish_batch_fails_the_batch():
    bolt, cap = make_bolt(BatchBoltExecutor(Picky()))
    bolt.execute(report({}, task=1))
    bolt.execute(report({}, task=2))
    assert cap.log["fail"] == [[A, {}], [A, {}]]
    assert COORD_STREAM not in cap.log
    assert bolt.tracked[A].failed


def test_committer_acks_reports_at_once_and_finishes_on_the_commit_tuple():
    bolt, cap = make_bolt(committer=True)
    bolt.execute(tup([A, "x"]))
    bolt.execute(report({ME: 1}, task=1))
    bolt.execute(report({}, task=2))
    assert cap.log["ack"] == [[A, "x"], [A, {ME: 1}], [A, {}]]
    assert "default" not in cap.log
    commit = tup([A], "coord", COMMIT_STREAM, 99)
    bolt.execute(commit)
    assert cap.log["default"] == [[A, 1]]
    assert cap.anchors[-1] == (COORD_STREAM, [[A]])
    assert cap.log["ack"][-1] == [A]


def test_emitter_reports_per_target_task_anchored_to_the_batch_tuple():
    class Emitter:
        def prepare(self, conf, context, collector):
            self.collector = collector

        def execute(self, t):
            for word in ("a", "b", "c"):
                self.collector.emit([t.values[0], word])
            self.collector.emit_direct(7, [t.values[0], "d"])
            self.collector.ack(t)

        def declare_output_fields(self, declarer):
            declarer.declare(["tx", "word"])

    bolt = CoordinatedBolt(Emitter())
    cap = BoltCapture()
    cap.targets["default"] = [20, 21]
    bolt.prepare({}, make_context(None, "spout", 3, {"spout": [3]}), cap)
    batch = tup([A, 1, None], "coord", "transactional/batch", 99)
    bolt.execute(batch)
    assert cap.log[COORD_STREAM] == [[A, {20: 3, 21: 3, 7: 1}]]
    assert cap.anchors[-1] == (COORD_STREAM, [[A, 1, None]])
    assert [k for k, _ in cap.events][-2:] == [COORD_STREAM, "ack"]


def test_untouched_batches_expire_after_twice_the_message_timeout():
    clock = SimulatedClock()
    delegate = BatchBoltExecutor(CountingBatchBolt())
    bolt, cap = make_bolt(delegate, clock=clock, conf={"topology.message.timeout.secs": 5})
    bolt.execute(tup([A, "x"]))
    bolt.execute(report({ME: 1}, task=1))
    assert delegate.open_batches() == [A]
    clock.advance(11)
    other = TransactionAttempt(2, 1)
    bolt.execute(tup([other, "y"]))
    assert A not in bolt.tracked and delegate.open_batches() == [other]
    assert cap.log["fail"] == [[A, {ME: 1}]]


def test_a_committer_fails_the_reports_that_follow_a_failed_tuple():
    bolt, cap = make_bolt(BatchBoltExecutor(Picky()), committer=True)
    bolt.execute(tup([A, "bad"]))
    bolt.execute(report({ME: 1}, task=1))
    bolt.execute(report({}, task=2))
    assert cap.log["fail"] == [[A, "bad"], [A, {ME: 1}], [A, {}]]
    assert "ack" not in cap.log


def test_an_emit_without_the_batch_id_first_is_warned_about(caplog):
    class Forgetful(BaseBatchBolt):
        def prepare(self, conf, context, collector, id):
            self.collector = collector

        def execute(self, t):
            self.collector.emit(["no id here", 1])

    bolt, _ = make_bolt(BatchBoltExecutor(Forgetful()))
    with caplog.at_level("WARNING", logger="storm_py.transactional.coordinated"):
        bolt.execute(tup([A, "x"]))
        bolt.execute(tup([A, "y"]))
    assert len([r for r in caplog.records if "not an open batch id" in r.getMessage()]) == 1
