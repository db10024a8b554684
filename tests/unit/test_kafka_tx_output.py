"""The transactional KafkaBolt's output core: one transaction per committed checkpoint, and what it does with the
broker's answers (a producer scripted here, as the broker would answer): a commit without an answer is committed
again, never aborted and written again; a commit the broker refuses is aborted and the checkpoint written again."""

from __future__ import annotations

from typing import Any

from storm_py.clock import SimulatedClock
from storm_py.kafka.client import CommitPending, KafkaClientError
from storm_py.kafka.tx_producer import TransactionalOutput
from storm_py.stateful.state.key_value import KeyValueState


class ScriptedProducer:
    """A transactional producer whose commits answer as ``answers`` says (``None``: confirmed); ``log`` is what
    reached the broker: ``("records", marker, [values])`` per committed transaction."""

    def __init__(self, answers: list[KafkaClientError | None]) -> None:
        self.answers = answers
        self.calls: list[str] = []
        self.open: list[bytes | None] = []
        self.marker_value: int | None = None
        self.committed_marker: int | None = None
        self.log: list[tuple[int, list[bytes | None]]] = []
        self.in_doubt = False  # a commit the broker made, its answer lost

    def begin(self) -> None:
        assert not self.open and not self.in_doubt, "a transaction begun while another is open"
        self.calls.append("begin")

    def produce(self, topic: str, key: bytes | None, value: bytes | None, delivered: Any) -> None:
        self.open.append(value)
        delivered(None, topic, 0, 0)

    def flush(self, timeout: float) -> int:
        return 0

    def send_marker(self, marker: tuple[str, int, int], timeout: float) -> None:
        self.marker_value = marker[2]

    def complete_commit(self, timeout: float) -> None:
        self.calls.append("commit")
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, CommitPending):
            if not self.in_doubt:  # the broker makes the commit; its answer does not come back in time
                self.in_doubt = True
                self._made()
            raise answer
        if answer is not None:
            raise answer
        if not self.in_doubt:
            self._made()
        self.in_doubt = False

    def _made(self) -> None:
        assert self.marker_value is not None
        self.log.append((self.marker_value, list(self.open)))
        self.committed_marker = self.marker_value
        self.open = []

    def abort(self, timeout: float) -> None:
        self.calls.append("abort")
        assert not self.in_doubt, "aborted a transaction the broker had committed"
        self.open = []

    def marker(self, topic: str, partition: int, timeout: float) -> int | None:
        return self.committed_marker

    def reset_marker(self, topic: str, partition: int, value: int) -> None:
        self.committed_marker = value


def output(producer: ScriptedProducer, clock: SimulatedClock, reports: list[str]) -> TransactionalOutput:
    out = TransactionalOutput(producer, "out", reports.append, clock)  # type: ignore[arg-type]
    out.restore(KeyValueState())
    return out


def checkpoint(out: TransactionalOutput, txid: int, *values: bytes) -> None:
    for v in values:
        out.add(("out", None, v))
    out.seal(txid)
    out.commit(txid)


def test_a_commit_without_an_answer_is_committed_again_not_aborted_and_written_again():
    clock, reports = SimulatedClock(), []
    producer = ScriptedProducer([CommitPending("no answer"), CommitPending("no answer yet")])
    out = output(producer, clock, reports)
    checkpoint(out, 1, b"a", b"b")
    assert out.committing == 1 and "not confirmed" in reports[-1]
    checkpoint(out, 2, b"c")  # held behind the backoff: nothing new begins while the commit is in doubt
    for _ in range(3):
        clock.advance(10)
        out.write_due()
    assert producer.log == [(2, [b"a", b"b"]), (3, [b"c"])]
    assert "abort" not in producer.calls and out.committing is None
    assert out.written == 2 and out.committed_transactions == 2


def test_a_commit_the_broker_refuses_is_aborted_and_the_checkpoint_written_again():
    clock, reports = SimulatedClock(), []
    producer = ScriptedProducer([KafkaClientError("refused")])
    out = output(producer, clock, reports)
    checkpoint(out, 1, b"a")
    assert producer.calls == ["begin", "commit", "abort"] and "aborted" in reports[-1]
    clock.advance(10)
    out.write_due()
    assert producer.log == [(2, [b"a"])] and out.written == 1 and out.aborted_transactions == 1
