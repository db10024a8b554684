"""A rich spout taken in Trident batches: tuples one ``next_tuple`` emits beyond a batch open the next batch."""

from __future__ import annotations

from typing import Any

from storm_py.transactional.attempt import TransactionAttempt
from storm_py.trident.rich import RichSpoutBatch


class Burst:
    """Emits three tuples on its first ``next_tuple`` (as DRPCSpout does with fetched requests), then none."""

    def __init__(self) -> None:
        self.bursts = [[["a", 1], ["b", 2], ["c", 3]]]
        self.acked: list[Any] = []

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        for values in self.bursts.pop(0) if self.bursts else []:
            self.collector.emit(values, values[1])

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["args", "n"])


class Rows:
    def __init__(self) -> None:
        self.rows: list[list[Any]] = []

    def emit(self, values: list[Any]) -> None:
        self.rows.append(values)


def test_tuples_beyond_a_batch_open_the_next_batches_in_order() -> None:
    spout = Burst()
    batches = RichSpoutBatch(spout, max_batch_size=1)
    batches.open({}, None)  # type: ignore[arg-type]
    got = []
    for txid in (1, 2, 3, 4):
        rows = Rows()
        batches.emit_batch(TransactionAttempt(txid, 7), None, rows)  # type: ignore[arg-type]
        got.append(rows.rows)
    assert got == [[["a", 1]], [["b", 2]], [["c", 3]], []]
    batches.cleanup_before(4)
    assert spout.acked == [1, 2, 3]
