"""This package owns how batches travel between workers: what travels (:data:`Entries`), frames, and the parts.

* :mod:`~storm_py.runtime.transfer.frames` -- batches to wire frames and back (pure);
* :mod:`~storm_py.runtime.transfer.socket_transfer` -- a worker's sockets to its peers, with backpressure;
* :mod:`~storm_py.runtime.transfer.in_process` -- the workers of one process (LocalCluster): batches handed
  over as objects or, with ``topology.testing.always.try.serialize``, through the socket transfer over
  in-process mailboxes (the real codec, frames and backpressure).

A transport is bound to a worker with ``bind(worker_key, host)``: it starts delivering what arrives for the
worker to ``host.deliver`` and becomes the worker's sender (``host.send_remote``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Fields

#: What travels between workers: ``[(target task, [items])]``, an item being a
#: :class:`~storm_py.api.tuple.Tuple` (bolt input) or a short row of ints (ack traffic, see
#: :mod:`storm_py.runtime.acker`).
Entries = list[tuple[int, list[Any]]]

#: How a worker sends a batch to a peer worker (by worker key).
SendRemote = Callable[[str, Entries], None]


class TransferHost(Protocol):
    """What a transport needs from the worker runtime it serves."""

    #: tuples queued in the worker's executors, and the budget beyond which its spouts pause
    backlog: int
    backlog_limit: int
    send_remote: SendRemote | None
    #: tuples waiting to be sent to a peer worker, by its key (the transport sets it; load-aware shuffling reads it)
    peer_backlog: Callable[[str], int] | None

    @property
    def topology_id(self) -> str:
        """The id of the topology the worker runs."""
        ...

    @property
    def conf(self) -> Mapping[str, Any]:
        """The topology's conf."""
        ...

    @property
    def task_to_component(self) -> Mapping[int, str]:
        """The component of every task of the topology."""
        ...

    @property
    def component_streams(self) -> Mapping[str, Mapping[str, Fields]]:
        """The output fields of every stream of every component."""
        ...

    @property
    def columnar_streams(self) -> frozenset[tuple[str, str]]:
        """The columnar streams, ``(component, stream)``: each of their tuples carries one batch."""
        ...

    @property
    def topology(self) -> StormTopology:
        """The (system) topology the worker runs: what each task is and subscribes to."""
        ...

    @property
    def worker_tasks(self) -> list[int]:
        """The tasks of this worker."""
        ...

    @property
    def inbound(self) -> deque[Entries]:
        """Batches handed over and not yet taken in by the worker's loop."""
        ...

    @property
    def wake(self) -> threading.Event:
        """Set to wake the worker's loop."""
        ...

    def deliver(self, entries: Entries) -> None:
        """Hand in a batch from another worker (any thread)."""
        ...

    def report_error(self, component_id: str, task: int, exc: BaseException) -> None:
        """Record an error of a task for the topology summary."""
        ...

    def fail_unsent(self, items: list[Any]) -> None:
        """Fail at once the tuple trees of items that could not be sent (called on the worker's loop thread)."""
        ...


__all__ = ["Entries", "SendRemote", "TransferHost"]
