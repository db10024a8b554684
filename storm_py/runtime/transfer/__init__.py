"""This package owns how batches travel between workers: what travels (:data:`Entries`), frames, and the parts.

* :mod:`~storm_py.runtime.transfer.frames` -- batches to wire frames and back (pure);
* :mod:`~storm_py.runtime.transfer.socket_transfer` -- a worker process's sockets to its peers, with backpressure;
* :mod:`~storm_py.runtime.transfer.in_process` -- the workers of one process (LocalCluster), batches handed over
  as objects or, with ``topology.testing.always.try.serialize``, through the real frames.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: What travels between workers: ``[(target task, [items])]``, an item being a
#: :class:`~storm_py.api.tuple.Tuple` (bolt input) or a short row of ints (ack traffic, see
#: :mod:`storm_py.runtime.acker`).
Entries = list[tuple[int, list[Any]]]

#: Where a worker's transport hands the batches that arrive for it (the runtime's ``deliver``).
Deliver = Callable[[Entries], None]

__all__ = ["Deliver", "Entries"]
