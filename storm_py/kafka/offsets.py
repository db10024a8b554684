"""The pure per-partition offset manager of the Kafka spout and its retry policy: inputs and ``now`` in, decisions out.

:class:`PartitionOffsets` is storm-kafka-client's ``OffsetManager`` plus its retry schedule for one partition:

* ``committed`` is the next offset to consume that is safely committed; only the *contiguous acked prefix*
  above it may be committed (:meth:`PartitionOffsets.commit_offset`).  A partition's records are emitted for
  the first time in offset order, so the manager keeps no set of acked offsets: everything below
  ``emitted_to`` that is no longer pending is done.  Offsets that were never emitted because the broker no
  longer has them (compaction, retention, an out-of-range reset) are gaps: a gap below a done offset counts as
  done (STORM-2546); gaps are counted in :attr:`PartitionOffsets.skipped`.
* a failed offset is scheduled for a retry after an exponential backoff (:class:`RetryPolicy`); once it has
  failed more than ``max_retries`` times :meth:`PartitionOffsets.on_fail` answers ``"dead"``: the caller sends
  it to the dead-letter stream and acks it, so the commit moves on (STORM-2544, STORM-2077).
* :meth:`PartitionOffsets.pollable` is the per-partition ``max_uncommitted_offsets`` gate on *new* records.
  Retries are re-emitted from memory and never wait for the gate, so a partition at its limit can never stall
  behind a failed offset (STORM-2343, STORM-2549).
* records may go out in *trees* of several offsets of the partition (``records_per_tree``), kept as one entry
  until the tree is acked (:meth:`PartitionOffsets.on_tree_emit`, :meth:`PartitionOffsets.on_tree_ack`); a failed
  tree puts each of its offsets up for a retry at once, as a record of its own, without counting a failure
  against any of them (which one failed is not known), and halves the partition's tree size; every acked tree
  doubles it back, up to the limit (:meth:`PartitionOffsets.on_tree_fail`).
* after a commit, fetched records below the committed offset are not emitted again
  (:meth:`PartitionOffsets.should_emit`, STORM-2666); acks and fails of offsets the manager does not know
  (below the commit, or from before a reassignment) are ignored and counted (STORM-2104).

Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from typing import Any, Final, Literal

#: what ``pending.pop`` answers for an offset it does not hold
_UNTRACKED: Final = object()

FailDecision = Literal["retry", "dead", "ignored"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff: retry ``n`` (1-based) waits ``initial · multiplier^(n-1)`` seconds, capped at ``max_delay``.

    ``max_retries`` None retries forever; otherwise the ``max_retries + 1``-th failure is final.
    """

    initial_delay: float = 0.0
    multiplier: float = 2.0
    max_delay: float = 10.0
    max_retries: int | None = None

    def delay(self, fails: int) -> float:
        """Seconds to wait before retrying an offset that has failed ``fails`` times (``fails >= 1``)."""
        if fails <= 1:
            return min(self.initial_delay, self.max_delay)
        base = self.initial_delay if self.initial_delay > 0 else 0.002
        try:
            wait = base * self.multiplier ** (fails - 1)
        except OverflowError:
            return self.max_delay
        return min(wait, self.max_delay)

    def exhausted(self, fails: int) -> bool:
        """Whether an offset that failed ``fails`` times may not be retried again."""
        return self.max_retries is not None and fails > self.max_retries


class PartitionOffsets:
    """The offsets of one partition: emitted, acked, scheduled for retry, committed.

    Args:
        committed: the committed offset this task starts from (the next offset to consume).
        max_uncommitted: how many emitted-but-uncommitted offsets the partition may have before it stops
            taking new records.
        retry: the retry policy.
        records_per_tree: the most offsets one tree of new records may hold (1: each record is its own).
    """

    def __init__(self, committed: int, max_uncommitted: int, retry: RetryPolicy, records_per_tree: int = 1) -> None:
        self.committed = committed
        self.max_uncommitted = max_uncommitted
        self.retry = retry
        self.records_per_tree = records_per_tree
        #: how many new records the next tree may hold (halved by a failed tree, doubled by an acked one)
        self.tree_size = records_per_tree
        #: emitted, neither acked nor given up (in flight or waiting for a retry) -> the caller's payload
        #: (the spout keeps the record there, to re-emit or dead-letter it)
        self.pending: dict[int, Any] = {}
        #: emitted as one tree, neither acked nor failed yet: the tree's first offset -> its offsets and payloads
        #: (a failed tree's records move to :attr:`pending`, each on its own)
        self.trees: dict[int, tuple[list[int], list[Any]]] = {}
        #: above every offset emitted so far (and never below ``committed``): an offset below it that is not
        #: pending was acked, or is a gap; one at or above it is new
        self.emitted_to = committed
        #: ``[start, end)`` ranges of the gaps at or above the commit, in offset order, and how many offsets
        #: they hold (rare: compaction, retention)
        self._gaps: deque[tuple[int, int]] = deque()
        self._gap_total = 0
        #: failures so far of pending offsets
        self.fails: dict[int, int] = {}
        #: offset -> due time of the failed offsets waiting for a retry
        self.scheduled: dict[int, float] = {}
        self._heap: list[tuple[float, int]] = []
        #: the next offset expected from the broker (the fetch position as this manager saw it)
        self.fetched_to = committed
        #: offsets the broker skipped (compacted or deleted), counted when they were jumped
        self.skipped = 0
        #: acks/fails of offsets this manager does not track (below the commit, never emitted)
        self.ignored = 0
        #: pending offsets dropped without being processed (an out-of-range reset moved below them)
        self.lost = 0

    # ------------------------------------------------------------------------------------------ fetching
    def should_emit(self, offset: int) -> bool:
        """Whether a freshly fetched record at ``offset`` is new (not committed, not emitted yet)."""
        return offset >= self.emitted_to

    def on_fetched(self, offset: int) -> int:
        """A record at ``offset`` came from the broker; returns how many offsets before it were skipped."""
        gap = 0
        if offset > self.fetched_to:
            gap = offset - self.fetched_to
            self.skipped += gap
            self._gaps.append((self.fetched_to, offset))
            self._gap_total += gap
        if offset >= self.fetched_to:
            self.fetched_to = offset + 1
        return gap

    def rebase(self, offset: int) -> int:
        """The broker reset this partition to ``offset`` below the commit (log truncated or recreated).

        Everything tracked is dropped; returns the pending offsets lost (also added to :attr:`lost`).
        """
        dropped = len(self.pending) + sum(len(offsets) for offsets, _ in self.trees.values())
        self.lost += dropped
        self.committed = offset
        self.fetched_to = offset
        self.emitted_to = offset
        self.pending.clear()
        self.trees.clear()
        self._gaps.clear()
        self._gap_total = 0
        self.fails.clear()
        self.scheduled.clear()
        self._heap.clear()
        return dropped

    def pollable(self) -> bool:
        """Whether the partition may take new records (``max_uncommitted_offsets`` gate)."""
        return self.uncommitted < self.max_uncommitted

    @property
    def uncommitted(self) -> int:
        """Emitted offsets at or above the commit (pending or acked)."""
        high = self.emitted_to
        n = high - self.committed - self._gap_total
        for start, end in reversed(self._gaps):  # the gaps not below emitted_to: among records still waiting
            if end <= high:
                break
            n += end - max(start, high)
        return max(0, n)

    # ---------------------------------------------------------------------------------------- lifecycle
    def on_emit(self, offset: int, payload: Any = None) -> None:
        """``offset`` was emitted (first time, with its ``payload``; or a retry, which keeps it)."""
        if offset not in self.pending:
            self.pending[offset] = payload
            self.emitted_through(offset)
        self.scheduled.pop(offset, None)  # a retry: its heap entry is discarded lazily

    def emitted_through(self, offset: int) -> None:
        """New records up to ``offset`` went out (or are going out in a tree still being filled, which
        :meth:`on_tree_emit` records once it is complete; until then a record fetched twice is not new)."""
        if offset >= self.emitted_to:
            self.emitted_to = offset + 1

    def on_ack(self, offset: int) -> bool:
        """``offset`` was fully processed; False when it is not tracked (ignored and counted)."""
        if self.pending.pop(offset, _UNTRACKED) is _UNTRACKED:  # one lookup (a record may be None)
            self.ignored += 1
            return False
        if self.fails:
            self.fails.pop(offset, None)
            self.scheduled.pop(offset, None)
        return True

    def on_fail(self, offset: int, now: float) -> FailDecision:
        """``offset`` failed: ``"retry"`` (scheduled), ``"dead"`` (retries exhausted: dead-letter it, then
        :meth:`on_ack` it) or ``"ignored"`` (not tracked)."""
        if offset not in self.pending or offset in self.scheduled:
            self.ignored += 1
            return "ignored"
        fails = self.fails.get(offset, 0) + 1
        self.fails[offset] = fails
        if self.retry.exhausted(fails):
            return "dead"
        due = now + self.retry.delay(fails)
        self.scheduled[offset] = due
        heapq.heappush(self._heap, (due, offset))
        return "retry"

    def on_tree_emit(self, offsets: list[int], payloads: list[Any]) -> None:
        """New records at ``offsets`` (ascending), with their ``payloads``, went out as one tree."""
        self.trees[offsets[0]] = (offsets, payloads)
        self.emitted_through(offsets[-1])

    def has_pending(self) -> bool:
        """Whether any emitted offset waits for its ack (alone or in a tree)."""
        return bool(self.pending) or bool(self.trees)

    def on_tree_ack(self, offsets: list[int]) -> int:
        """The tree of ``offsets`` was fully processed: each is acked; returns how many were tracked."""
        self.tree_size = min(self.records_per_tree, self.tree_size * 2)
        if self.trees.pop(offsets[0], None) is not None:
            return len(offsets)
        # split since (a commit moved past part of it after a reset): its offsets still tracked are pending
        return sum(self.on_ack(offset) for offset in offsets)

    def on_tree_fail(self, offsets: list[int], now: float) -> int:
        """The tree of ``offsets`` failed or timed out: each offset still tracked is due for a retry at ``now``, as
        a record of its own, with no failure counted; returns how many."""
        self._split(offsets[0])
        n = 0
        for offset in offsets:
            if offset not in self.pending or offset in self.scheduled:
                self.ignored += 1
                continue
            self.scheduled[offset] = now
            heapq.heappush(self._heap, (now, offset))
            n += 1
        self.tree_size = max(1, self.tree_size // 2)
        return n

    def _split(self, first: int, below: int = -1) -> int:
        """The tree starting at ``first`` becomes pending records of their own, except those below ``below``,
        which are dropped; returns how many were dropped."""
        entry = self.trees.pop(first, None)
        if entry is None:
            return 0
        dropped = 0
        offsets, payloads = entry
        for offset, payload in zip(offsets, payloads, strict=True):
            if offset < below:
                dropped += 1
            else:
                self.pending[offset] = payload
        return dropped

    def due_retries(self, now: float, limit: int | None = None) -> list[int]:
        """The scheduled offsets whose retry is due, earliest first (at most ``limit``); they stay scheduled
        until :meth:`on_emit` is called for them."""
        heap = self._heap
        out: list[int] = []
        kept: list[tuple[float, int]] = []
        while heap and heap[0][0] <= now and (limit is None or len(out) < limit):
            due, offset = heapq.heappop(heap)
            if self.scheduled.get(offset) != due:
                continue  # stale entry: re-emitted, acked or rescheduled since
            out.append(offset)
            kept.append((due, offset))
        for entry in kept:
            heapq.heappush(heap, entry)
        return sorted(out)

    def next_retry_at(self) -> float | None:
        """When the earliest scheduled retry is due (None: nothing scheduled)."""
        while self._heap and self.scheduled.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    # ------------------------------------------------------------------------------------------- commits
    def commit_offset(self) -> int | None:
        """The offset to commit now (the end of the contiguous acked prefix), or None when nothing new.

        Below the first pending offset (alone or in a tree), everything emitted is done; an offset there that was
        never emitted is a gap the broker skipped, done as well (the first pending offset, or the end of what was
        emitted, lies above it).
        """
        top = self.emitted_to
        if self.pending:
            top = min(top, min(self.pending))  # noqa: PLW3301 (unpacking every pending offset would copy them)
        if self.trees:
            top = min(top, min(self.trees))  # noqa: PLW3301
        return top if top > self.committed else None

    def committed_to(self, offset: int) -> None:
        """``offset`` is now committed: forget what lies below it."""
        if offset <= self.committed:
            return
        self.committed = offset
        lost = 0
        for first in [f for f in self.trees if f < offset]:  # only after a forced reset, as below
            lost += self._split(first, below=offset)
        below = [o for o in self.pending if o < offset]
        for o in below:  # only possible after a forced reset: they are no longer ours to process
            del self.pending[o]
            self.fails.pop(o, None)
            self.scheduled.pop(o, None)
        self.lost += lost + len(below)
        gaps = self._gaps
        while gaps and gaps[0][0] < offset:
            start, end = gaps.popleft()
            if end > offset:  # partly below the commit
                gaps.appendleft((offset, end))
                end = offset
            self._gap_total -= end - start
        if self.emitted_to < offset:
            self.emitted_to = offset
        if self.fetched_to < offset:
            self.fetched_to = offset

    def position_behind(self, position: int | None) -> bool:
        """Whether the consumer's fetch position is below the commit (it must seek forward, STORM-2666)."""
        return position is not None and position < self.committed


# ------------------------------------------------------------------------------------------ start positions
#: logical start positions, resolved against the partition's offsets by the caller
StartPosition = int | Literal["BEGINNING", "END"]
BEGINNING: Literal["BEGINNING"] = "BEGINNING"
END: Literal["END"] = "END"


def first_poll_position(strategy: str, committed: int | None, committed_by: str | None,
                        topology_id: str) -> StartPosition:
    """Where a newly owned partition starts (storm-kafka-client's table for ``FirstPollOffsetStrategy``).

    ``committed``: the group's committed offset (None: no commit); ``committed_by``: the topology id in that
    commit's metadata (None when the commit carries none, e.g. another application wrote it).  EARLIEST and
    LATEST honour only a commit of *this* topology; the UNCOMMITTED_ strategies honour any commit.
    """
    ours = committed is not None and committed_by == topology_id
    if strategy == "EARLIEST":
        return committed if ours and committed is not None else BEGINNING
    if strategy == "LATEST":
        return committed if ours and committed is not None else END
    if committed is not None:
        return committed
    return END if strategy == "UNCOMMITTED_LATEST" else BEGINNING


@dataclass(frozen=True, slots=True)
class ZkStart:
    """Where a partition starts in the ZooKeeper offsets mode, and why; ``skipped`` offsets were jumped."""

    offset: int
    reason: str
    skipped: int = 0


def zk_start_offset(stored_offset: int | None, stored_topology: str | None, topology_id: str,
                    ignore_zk_offsets: bool, start_offset: int, max_offset_behind: int | None) -> ZkStart:
    """storm-kafka's ``PartitionManager`` start: the znode's offset, unless there is none, or
    ``ignore_zk_offsets`` is set and the znode was written by another topology id (a *new submission*; a
    restarted worker of the same topology keeps its offset); then a stored offset more than
    ``max_offset_behind`` behind ``start_offset`` (the offset of ``start_offset_time``) jumps there.
    """
    if stored_offset is None:
        return ZkStart(start_offset, "no offset stored")
    if ignore_zk_offsets and stored_topology != topology_id:
        return ZkStart(start_offset, f"ignore_zk_offsets and the offset was stored by {stored_topology!r}")
    if max_offset_behind is not None and start_offset - stored_offset > max_offset_behind:
        return ZkStart(start_offset, f"the stored offset {stored_offset} is more than max_offset_behind="
                       f"{max_offset_behind} behind {start_offset}", skipped=start_offset - stored_offset)
    return ZkStart(stored_offset, "stored offset")
