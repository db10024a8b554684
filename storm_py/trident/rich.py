"""A regular (rich) spout as a Trident spout: Storm's ``RichSpoutBatchExecutor``.

Each batch calls the spout's ``next_tuple`` until it emitted ``max_batch_size`` tuples of its declared
default stream or emitted nothing on a call; tuples one call emits beyond that open the next batch (a DRPC
spout fetches several requests at once, and each request must be a batch of its own).  Such a batch cannot
be re-created: a replayed txid fails the spout tuples of its earlier attempt (``fail(msg_id)``) and takes new
ones, as in Storm; once a txid is committed, the tuples of every earlier batch are acked (``ack(msg_id)``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storm_py.api.components import OutputFieldsDeclarer, own_configuration
from storm_py.api.tuple import DEFAULT_STREAM, Fields
from storm_py.errors import InvalidTopologyException
from storm_py.trident.spout import TridentSpout

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext
    from storm_py.transactional.attempt import TransactionAttempt
    from storm_py.trident.operation import TridentCollector


class _CapturingCollector:
    """The spout collector a wrapped rich spout sees: emits on the default stream are kept for the batch."""

    def __init__(self) -> None:
        self.emitted: list[tuple[list[Any], Any]] = []
        self.errors: list[BaseException] = []

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        if stream == DEFAULT_STREAM:
            self.emitted.append((list(values), msg_id))
        return []

    def emit_batch(self, batch: Sequence[Sequence[Any]], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> int:
        for values in batch:
            self.emit(values, msg_id, stream)
        return len(batch)

    def emit_direct(
        self, task_id: int, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        self.emit(values, msg_id, stream)

    def get_pending_count(self) -> int:
        return 0

    def report_error(self, exc: BaseException) -> None:
        self.errors.append(exc)


class RichSpoutBatch(TridentSpout):
    """Runs a rich spout (``open``/``next_tuple``/``ack``/``fail``) as the source of Trident batches."""

    def __init__(self, spout: Any, max_batch_size: int = 1000) -> None:
        if not callable(getattr(spout, "next_tuple", None)):
            raise InvalidTopologyException(f"{type(spout).__name__} is not a spout (no next_tuple)")
        if max_batch_size < 1:
            raise InvalidTopologyException(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.spout = spout
        self.max_batch_size = max_batch_size
        declarer = OutputFieldsDeclarer()
        spout.declare_output_fields(declarer)
        declared = declarer.streams.get(DEFAULT_STREAM)
        if declared is None:
            raise InvalidTopologyException(f"spout {type(spout).__name__} declares no default stream")
        self.fields = Fields(list(declared[0]))
        self._collector = _CapturingCollector()
        self._ids: dict[int, list[Any]] = {}
        self._overflow: deque[tuple[list[Any], Any]] = deque()

    def get_output_fields(self) -> Fields:
        return self.fields

    def open(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.spout.open(conf, context, self._collector)
        activate = getattr(self.spout, "activate", None)
        if activate is not None:  # a spout is opened on its topology's activation
            activate()

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        return None

    def emit_batch(self, attempt: TransactionAttempt, meta: Any, collector: TridentCollector) -> None:
        txid = attempt.transaction_id
        for msg_id in self._ids.pop(txid, []):
            self.spout.fail(msg_id)
        captured = self._collector
        ids: list[Any] = []
        count = 0
        overflow = self._overflow
        while count < self.max_batch_size:
            if not overflow:
                captured.emitted = []
                self.spout.next_tuple()
                if not captured.emitted:
                    break
                overflow.extend(captured.emitted)
            while overflow and count < self.max_batch_size:
                values, msg_id = overflow.popleft()
                collector.emit(values)
                count += 1
                if msg_id is not None:
                    ids.append(msg_id)
        for exc in captured.errors:
            collector.report_error(exc)
        captured.errors = []
        if ids:
            self._ids[txid] = ids

    def cleanup_before(self, txid: int) -> None:
        for done in [t for t in self._ids if t < txid]:
            for msg_id in self._ids.pop(done):
                self.spout.ack(msg_id)

    def close(self) -> None:
        self.spout.close()

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.spout)
