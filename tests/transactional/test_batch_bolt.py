"""Batch bolts: Storm's batch-bolt test (one instance per attempt) and the basic-bolt delegate."""

from __future__ import annotations

import pytest

from storm_py import BasicBolt
from storm_py.errors import FailedException, ReportedFailedException
from storm_py.testing import test_tuple
from storm_py.transactional import BaseBatchBolt, TransactionAttempt
from storm_py.transactional.batch import BasicBoltExecutor, BatchBoltExecutor
from tests.transactional.components import CountingBatchBolt
from tests.transactional.helpers import BoltCapture


def test_batch_bolt():
    """Ports transactional_test.clj test-batch-bolt: attempts are independent batches."""
    bolt = BatchBoltExecutor(CountingBatchBolt())
    capture = BoltCapture()
    a1_1, a1_2, a2_1 = TransactionAttempt(1, 1), TransactionAttempt(1, 2), TransactionAttempt(2, 1)
    bolt.prepare({}, None, capture)

    for attempt in (a1_1, a1_1, a1_2, a2_1, a1_1):
        bolt.execute(test_tuple([attempt]))
    bolt.finished_id(a1_1)
    assert capture.take() == {
        "ack": [[a1_1], [a1_1], [a1_2], [a2_1], [a1_1]],
        "default": [[a1_1, 3]],
    }

    bolt.execute(test_tuple([a1_2]))
    bolt.finished_id(a2_1)
    assert capture.take() == {"ack": [[a1_2]], "default": [[a2_1, 1]]}

    bolt.finished_id(a1_2)
    assert capture.take() == {"default": [[a1_2, 2]]}
    assert bolt.open_batches() == []


class FailOnBolt(BaseBatchBolt):
    def prepare(self, conf, context, collector, id):
        self.id = id

    def execute(self, tup):
        if tup.get_value(1) == "bad":
            raise FailedException("bad tuple")


def test_failed_exception_fails_the_tuple_and_timeout_drops_the_instance():
    bolt = BatchBoltExecutor(FailOnBolt())
    capture = BoltCapture()
    bolt.prepare({}, None, capture)
    a = TransactionAttempt(1, 5)
    bolt.execute(test_tuple([a, "ok"]))
    bolt.execute(test_tuple([a, "bad"]))
    assert capture.take() == {"ack": [[a, "ok"]], "fail": [[a, "bad"]]}
    assert bolt.open_batches() == [a]
    bolt.timeout_id(a)
    assert bolt.open_batches() == []


def test_empty_batch_still_finishes():
    bolt = BatchBoltExecutor(CountingBatchBolt())
    capture = BoltCapture()
    bolt.prepare({}, None, capture)
    a = TransactionAttempt(9, 1)
    bolt.finished_id(a)
    assert capture.take() == {"default": [[a, 0]]}


class Splitter(BasicBolt):
    def execute(self, tup, collector):
        if tup.get_value(1) == "fail":
            raise FailedException("no")
        if tup.get_value(1) == "report":
            raise ReportedFailedException("reported")
        for w in tup.get_value(1).split():
            collector.emit([tup.get_value(0), w])


def test_basic_bolt_executor_acks_fails_and_reports():
    capture = BoltCapture()
    ex = BasicBoltExecutor(Splitter())
    ex.prepare({}, None, capture)
    a = TransactionAttempt(1, 1)
    ex.execute(test_tuple([a, "x y"]))
    ex.execute(test_tuple([a, "fail"]))
    ex.execute(test_tuple([a, "report"]))
    log = capture.take()
    assert log["default"] == [[a, "x"], [a, "y"]]
    assert log["ack"] == [[a, "x y"]]
    assert log["fail"] == [[a, "fail"], [a, "report"]]
    assert len(log["error"]) == 1


def test_attempt_equality_hash_and_codec():
    from storm_py.protocol.codec import decode, encode

    a = TransactionAttempt(3, 12345)
    assert a == TransactionAttempt(3, 12345)
    assert a != TransactionAttempt(3, 12346)
    assert a != TransactionAttempt(4, 12345)
    assert hash(a) == hash(TransactionAttempt(3, 12345))
    assert a.get_transaction_id() == 3 and a.get_attempt_id() == 12345
    back = decode(encode([a, {"meta": 1}, None]))
    assert back == [a, {"meta": 1}, None]
    assert isinstance(back[0], TransactionAttempt)
    assert len(encode(a)) < 16
    assert TransactionAttempt.new(5).transaction_id == 5
    with pytest.raises(TypeError):
        _ = a < a  # type: ignore[operator]
