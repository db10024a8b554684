"""This module owns the transfer between the workers of one process (LocalCluster): batches handed over by key."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from storm_py.runtime.transfer import Entries

log = logging.getLogger(__name__)

#: tuples held for a worker that is not (yet) bound before further ones are dropped and counted
MAX_HELD = 200_000


class InProcessTransfer:
    """Routes batches between the workers of one process by worker key.

    Like a ZeroMQ PUSH socket connecting before its peer binds, batches for a worker that is not bound yet are
    held (up to :data:`MAX_HELD` tuples per worker) and handed over when it binds; beyond that they are dropped
    and counted in ``dropped``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._receivers: dict[str, Callable[[Entries], None]] = {}
        self._held: dict[str, list[Entries]] = {}
        self._held_count: dict[str, int] = {}
        self.dropped = 0

    def bind(self, worker_key: str, deliver: Callable[[Entries], None]) -> None:
        with self._lock:
            self._receivers[worker_key] = deliver
            held = self._held.pop(worker_key, [])
            self._held_count.pop(worker_key, None)
        for entries in held:
            deliver(entries)

    def unbind(self, worker_key: str) -> None:
        with self._lock:
            self._receivers.pop(worker_key, None)

    def send(self, worker_key: str, entries: Entries) -> None:
        deliver = self._receivers.get(worker_key)
        if deliver is not None:
            deliver(entries)
            return
        n = sum(len(items) for _, items in entries)
        with self._lock:
            deliver = self._receivers.get(worker_key)
            if deliver is None:
                count = self._held_count.get(worker_key, 0)
                if count + n > MAX_HELD:
                    self.dropped += n
                    log.warning("dropped %d tuples for worker %s, which is not running", n, worker_key)
                    return
                self._held.setdefault(worker_key, []).append(entries)
                self._held_count[worker_key] = count + n
                return
        deliver(entries)
