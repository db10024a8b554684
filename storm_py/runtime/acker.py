"""This module owns Storm's XOR acker: the pure ledger, the ``__acker`` bolt around it and the executor running it.

The ledger keeps a value per spout-tuple root in a 3-bucket rotating map.

Rows on the hot path are plain tuples, not :class:`Tuple` objects:

* to the acker: ``(INIT, root, init_val, spout_task)``, ``(ACK, root, ack_val)``, ``(FAIL, root)``,
  ``(RESET, root)`` — Storm's ``__ack_init``, ``__ack_ack``, ``__ack_fail``, ``__ack_reset_timeout`` streams;
* from the acker to a spout task (direct): ``(ACKED, root, delta_ms)``, ``(FAILED, root, delta_ms)``,
  ``(RESET_TIMEOUT, root, delta_ms)``, the delta in whole milliseconds.

Semantics follow Storm 2.x: acks and fails may arrive before the init (the entry is created and completion waits
for the spout task to be known); acks do not refresh an entry's expiry, fails and resets do; a tick rotates the
buckets and drops the oldest silently (the spout times the tuple out on its own).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Final

from storm_py.api.components import Bolt
from storm_py.api.tuple import Id, Tuple
from storm_py.runtime.executor import Executor, ExecutorHost

INIT: Final = 1
ACK: Final = 2
FAIL: Final = 3
RESET: Final = 4
ACKED: Final = 5
FAILED: Final = 6
RESET_TIMEOUT: Final = 7

STREAM_CODES = {"__ack_init": INIT, "__ack_ack": ACK, "__ack_fail": FAIL, "__ack_reset_timeout": RESET}

NUM_BUCKETS: Final = 3

Emit = Callable[[int, tuple[int, int, int]], None]
#: decided rows per spout task (the executor's out-buffer, a ``defaultdict(list)``)
Decisions = dict[int, list[tuple[int, int, int]]]


class _Entry:
    """One root's state: XOR value, first-seen time, spout task (-1 until the init), failed.

    Typed fields rather than a list: compiled, the XOR, the comparisons and the time stay machine values (ids
    are below 2**62, mypyc's unboxed int range) instead of a new int object per row.
    """

    __slots__ = ("born", "failed", "task", "val")

    def __init__(self, born: float) -> None:
        self.val: int = 0
        self.born = born
        self.task: int = -1
        self.failed = False


class AckLedger:
    """The pure XOR ledger: feed rows with ``now`` (seconds), get each spout task's result rows back."""

    __slots__ = ("_b0", "_b1", "_b2")

    def __init__(self) -> None:
        self._b0: dict[Id, _Entry] = {}
        self._b1: dict[Id, _Entry] = {}
        self._b2: dict[Id, _Entry] = {}

    def __len__(self) -> int:
        return len(self._b0) + len(self._b1) + len(self._b2)

    def __contains__(self, root: int) -> bool:
        return root in self._b0 or root in self._b1 or root in self._b2

    def rotate(self) -> int:
        """Drop the oldest bucket (silently, as Storm does); return how many roots expired."""
        expired = len(self._b2)
        self._b2 = self._b1
        self._b1 = self._b0
        self._b0 = {}
        return expired

    def process(self, rows: Iterable[tuple[int, ...]], now: float, out: Decisions) -> None:
        """Apply rows; append ``(code, root, delta_ms)`` to ``out[spout_task]`` for every decided root (``out`` a
        ``defaultdict(list)``: the executor's out-buffer)."""
        b0 = self._b0
        b1 = self._b1
        b2 = self._b2
        for row in rows:
            code = row[0]
            root: Id = row[1]
            bucket = b0  # where the entry is, so that a decided root leaves it without a search
            e = b0.get(root)
            if e is None:
                bucket = b1
                e = b1.get(root)
                if e is None:
                    bucket = b2
                    e = b2.get(root)
                    if e is None:
                        bucket = b0
                        e = _Entry(now)
                        b0[root] = e
            reset = False
            if code == ACK:
                e.val ^= row[2]
            elif code == INIT:
                e.val ^= row[2]
                e.task = row[3]
            elif code == FAIL:
                e.failed = True
                self._reput(root, e)
                bucket = b0
            elif code == RESET:
                reset = True
                self._reput(root, e)
                bucket = b0
            else:
                continue
            task = e.task
            if task >= 0:
                if e.val == 0:
                    del bucket[root]
                    out[task].append((ACKED, root, int((now - e.born) * 1000)))
                elif e.failed:
                    del bucket[root]
                    out[task].append((FAILED, root, int((now - e.born) * 1000)))
                elif reset:
                    out[task].append((RESET_TIMEOUT, root, int((now - e.born) * 1000)))

    def _reput(self, root: Id, e: _Entry) -> None:
        self._b1.pop(root, None)
        self._b2.pop(root, None)
        self._b0[root] = e


class AckerBolt(Bolt):
    """The ``__acker`` bolt: an :class:`AckLedger` fed by Storm's ack streams, rotated by its tick tuple.

    Its executor (:class:`AckerExecutor`) feeds the ledger batches of rows directly; :meth:`execute` accepts the
    same messages as ordinary tuples on Storm's streams, so the bolt also works when driven tuple by tuple.
    """

    def __init__(self) -> None:
        self.ledger = AckLedger()
        self._emit_direct: Emit | None = None
        self._now: Callable[[], float] = lambda: 0.0

    def bind(self, emit_direct: Emit, now: Callable[[], float]) -> None:
        """Wire the acker to its executor: where decisions go, and the clock."""
        self._emit_direct = emit_direct
        self._now = now

    def process_rows(self, rows: Iterable[tuple[int, ...]], now: float) -> None:
        """Apply a batch of ack rows."""
        assert self._emit_direct is not None, "acker used before bind()"
        out: Decisions = defaultdict(list)
        self.ledger.process(rows, now, out)
        for task, decided in out.items():
            for row in decided:
                self._emit_direct(task, row)

    def execute(self, tup: Tuple) -> None:
        """Apply one tuple on an ack stream, or rotate on a tick tuple."""
        if tup.is_tick():
            self.ledger.rotate()
            return
        code = STREAM_CODES.get(tup.source_stream)
        if code is None:
            return
        self.process_rows([(code, *tup.values)], self._now())


class AckerExecutor(Executor):
    """Runs ``__acker`` tasks: batches of ack rows go straight into each task's ledger."""

    is_acker = True

    def __init__(self, rt: ExecutorHost, component_id: str, task_ids: list[int]) -> None:
        super().__init__(rt, component_id, task_ids)
        self.ackers: dict[int, AckerBolt] = {}

    def prepare(self) -> None:
        for t in self.task_ids:
            acker = AckerBolt()
            acker.bind(self._emit, self.rt.clock.now)
            self.ackers[t] = acker

    def step(self, now: float) -> bool:
        inbox = self.inbox
        did = False
        if inbox:
            did = True
            ackers = self.ackers
            outbuf = self.outbuf
            n = 0
            while inbox:
                task, rows = inbox.popleft()
                n += len(rows)
                ackers[task].ledger.process(rows, now, outbuf)
            self.stats.executed += n
            self.rt.backlog -= n
        if now >= self.next_tick:
            did = True
            self.next_tick = now + (self.tick_freq or 0.0)
            for acker in self.ackers.values():
                acker.ledger.rotate()
        return did

    def _emit(self, task: int, row: tuple[int, int, int]) -> None:
        self.outbuf[task].append(row)
