"""A LocalCluster slot's key outlives its worker: after a topology is killed and submitted again, a worker of the
killed one still running (or what it sent while the slot was free) must not reach the new topology's tasks, whose
ids name other components (a spout task once got an acker's row and its executor crashed)."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from storm_py.runtime.transfer import Entries
from storm_py.runtime.transfer.in_process import InProcessTransfer

KEY = "node-1:6700"


class Host:
    """What the in-process transfer reads of a worker runtime it binds: the batches it hands over are kept."""

    def __init__(self, topology_id: str) -> None:
        self.topology_id = topology_id
        self.conf: dict[str, Any] = {}
        self.send_remote: Any = None
        self.inbound: deque[Entries] = deque()
        self.wake = threading.Event()

    def deliver(self, entries: Entries) -> None:
        self.inbound.append(entries)


def bound(transfer: InProcessTransfer, topology_id: str, key: str) -> Host:
    host = Host(topology_id)
    transfer.bind(key, host)  # type: ignore[arg-type]  # only what bind reads
    return host


def test_a_worker_of_a_killed_topology_sends_nothing_to_the_new_topologys_worker_on_its_slot() -> None:
    transfer = InProcessTransfer()
    old_sender = bound(transfer, "wc-1-100", "node-2:6700")
    old = bound(transfer, "wc-1-100", KEY)
    transfer.unbind(KEY)  # killed: its worker on the slot stopped, the one on node-2 still runs
    new = bound(transfer, "wc-2-200", KEY)  # submitted again under the name, on the same slot
    old_sender.send_remote(KEY, [(3, [(1, 7, 3, 2)])])  # an acker row for task 3, a spout task of the new layout
    assert list(new.inbound) == [] and list(old.inbound) == []
    assert transfer.dropped == 1
    new_sender = bound(transfer, "wc-2-200", "node-2:6701")
    new_sender.send_remote(KEY, [(3, [(1, 7, 0)])])
    assert list(new.inbound) == [[(3, [(1, 7, 0)])]]


def test_what_a_killed_topology_sent_to_a_free_slot_never_reaches_the_next_topology_bound_there() -> None:
    transfer = InProcessTransfer()
    old_sender = bound(transfer, "wc-1-100", "node-2:6700")
    new_sender = bound(transfer, "wc-2-200", "node-2:6701")
    old_sender.send_remote(KEY, [(3, ["a tuple of the old layout"])])  # held: nothing is bound to the slot
    new_sender.send_remote(KEY, [(3, [(1, 7, 0)])])  # held for the new topology's worker
    new = bound(transfer, "wc-2-200", KEY)
    assert list(new.inbound) == [[(3, [(1, 7, 0)])]]
