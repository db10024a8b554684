"""This module owns Storm's XOR acker: the pure ledger, the ``__acker`` bolt around it and the executor running it.

The ledger keeps a value per spout-tuple root, each entry stamped with the rotation it was last put in: Storm's
3-bucket rotating map as one dict, so that a row costs one lookup instead of up to three.

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

from mypy_extensions import mypyc_attr

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


@mypyc_attr(acyclic=True)
class _Entry:
    """One root's state: XOR value, first-seen time, spout task (-1 until the init), failed, and the rotation it
    was last put in (its bucket in Storm's rotating map).

    Typed fields rather than a list: compiled, the XOR, the comparisons and the time stay machine values (ids
    are below 2**62, mypyc's unboxed int range) instead of a new int object per row.  It refers to nothing
    that could refer back, so compiled it is acyclic, outside the garbage collector: an acker holding a
    checkpoint interval of open trees (under a stateful bolt) is not walked by every collection.
    """

    __slots__ = ("born", "failed", "gen", "task", "val")

    def __init__(self, born: float, gen: int) -> None:
        self.val: int = 0
        self.born = born
        self.task: int = -1
        self.failed = False
        self.gen = gen


class AckLedger:
    """The pure XOR ledger: feed rows with ``now`` (seconds), get each spout task's result rows back.

    An entry put at rotation ``g`` (created, or put again by a fail or a reset) expires at rotation
    ``g + NUM_BUCKETS``, as in Storm's rotating map of ``NUM_BUCKETS`` buckets.  :meth:`rotate` finds the expired
    entries by a pass over all of them (a rotation comes every ``topology.message.timeout.secs``; compiled, a pass
    over 100,000 pending trees takes about 1.5 ms, 10 ms when all of them expire), where every row would otherwise
    look a root up in up to three buckets.
    """

    __slots__ = ("_entries", "_gen")

    def __init__(self) -> None:
        self._entries: dict[Id, _Entry] = {}
        self._gen = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, root: int) -> bool:
        return root in self._entries

    def rotate(self) -> int:
        """Drop the entries put ``NUM_BUCKETS`` rotations ago (silently, as Storm does); how many expired."""
        self._gen += 1
        cutoff = self._gen - NUM_BUCKETS
        entries = self._entries
        expired = [root for root, e in entries.items() if e.gen <= cutoff]
        for root in expired:
            del entries[root]
        return len(expired)

    def process(self, rows: Iterable[tuple[int, ...]], now: float, out: Decisions) -> None:
        """Apply rows; append ``(code, root, delta_ms)`` to ``out[spout_task]`` for every decided root (``out`` a
        ``defaultdict(list)``: the executor's out-buffer)."""
        entries = self._entries
        gen = self._gen
        for row in rows:
            code = row[0]
            root: Id = row[1]
            e = entries.get(root)
            if e is None:
                e = _Entry(now, gen)
                entries[root] = e
            reset = False
            if code == ACK:
                e.val ^= row[2]
            elif code == INIT:
                e.val ^= row[2]
                e.task = row[3]
            elif code == FAIL:
                e.failed = True
                e.gen = gen  # put again: its expiry starts over (Storm's acker puts a failed entry back)
            elif code == RESET:
                reset = True
                e.gen = gen
            else:
                continue
            task = e.task
            if task >= 0:
                if e.val == 0:
                    del entries[root]
                    out[task].append((ACKED, root, int((now - e.born) * 1000)))
                elif e.failed:
                    del entries[root]
                    out[task].append((FAILED, root, int((now - e.born) * 1000)))
                elif reset:
                    out[task].append((RESET_TIMEOUT, root, int((now - e.born) * 1000)))


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
