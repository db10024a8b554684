"""This module owns a spout executor's pending map: tracked tuples waiting for their tree to complete.

Pure: the caller passes ``now``; nothing here reads a clock.  Like Storm's spout executor, the map has two
buckets rotated every ``topology.message.timeout.secs``: a tuple still pending after two rotations is expired,
so it times out between one and two timeouts after it was emitted.  A ``reset_timeout`` moves a tuple back to
the newer bucket.
"""

from __future__ import annotations

from typing import Any

from mypy_extensions import mypyc_attr


@mypyc_attr(acyclic=True)
class Stamp:
    """An emit time that every tree emitted by the spout calls of one step of the spout executor shares, set
    when the last call returns (see ``SpoutExecutor.emit_stamp``).

    Compiled, it is acyclic, outside the garbage collector, so a pending entry holding it and a message id of
    an atomic type leaves the collector's walks at its first collection (a list would keep it in them until the
    tree completes: under a stateful bolt, a checkpoint interval of trees).
    """

    __slots__ = ("at",)

    def __init__(self, at: float) -> None:
        self.at = at


@mypyc_attr(acyclic=True)
class PendingEntry:
    """One pending tuple tree: the spout task that emitted it, its message id, its emit time and its size in
    spout tuples (1, or the size of a batch emitted as one tree).

    Compiled, it is acyclic, outside the garbage collector from the start (a message id cannot refer back to the
    entry that holds it): under a stateful bolt a checkpoint interval of trees stays open, and a tuple per tree
    counted toward every collection's threshold (about one collection of 100,000 entries a second at checkpoints
    every second) and was walked once before it left the collector's lists.  The task and the size are machine
    ints, not int objects.
    """

    __slots__ = ("msg_id", "size", "stamp", "task")

    def __init__(self, task: int, msg_id: Any, stamp: Stamp, size: int) -> None:
        self.task = task
        self.msg_id = msg_id
        self.stamp = stamp
        self.size = size


class PendingMap:
    """Pending spout tuples by root id, in two buckets rotated every ``timeout`` seconds (None: never)."""

    __slots__ = ("_new", "_old", "next_rotate", "timeout")

    def __init__(self, timeout: float | None, now: float) -> None:
        self._new: dict[int, PendingEntry] = {}
        self._old: dict[int, PendingEntry] = {}
        self.timeout = timeout
        #: when :meth:`rotate` next expires the older bucket
        self.next_rotate = now + timeout if timeout is not None else float("inf")

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def __contains__(self, root: int) -> bool:
        return root in self._new or root in self._old

    def buckets(self) -> tuple[dict[int, PendingEntry], dict[int, PendingEntry]]:
        """The newer and the older bucket, for a caller's per-tuple loop (valid until the next :meth:`rotate`).

        :meth:`add` is ``newer[root] = entry`` and :meth:`complete` pops from ``newer``, then ``older``; a
        spout executor writes these out inline on its per-tuple path, where a method call per tuple costs
        about 0.8 % of a word count's instructions (``bench/two_workers.py --instructions``).
        """
        return self._new, self._old

    def add(self, root: int, task: int, msg_id: Any, now: float, tuples: int = 1) -> None:
        """Track the tuple tree ``root`` of ``tuples`` spout tuples emitted by ``task`` with ``msg_id`` at ``now``."""
        self._new[root] = PendingEntry(task, msg_id, Stamp(now), tuples)

    def complete(self, root: int) -> PendingEntry | None:
        """Stop tracking ``root`` (acked or failed); None when it is unknown (timed out already, or never added)."""
        entry = self._new.pop(root, None)
        if entry is None:
            entry = self._old.pop(root, None)
        return entry

    def reset(self, root: int) -> bool:
        """Restart the timeout of ``root`` (Storm's ``resetTimeout``); False when it is not pending."""
        entry = self._old.pop(root, None)
        if entry is not None:
            self._new[root] = entry
            return True
        return root in self._new

    def rotate(self, now: float) -> dict[int, PendingEntry]:
        """When due (``now >= next_rotate``), rotate the buckets; return the expired tuples by root id."""
        if now < self.next_rotate or self.timeout is None:
            return {}
        self.next_rotate = now + self.timeout
        expired = self._old
        self._old = self._new
        self._new = {}
        return expired
