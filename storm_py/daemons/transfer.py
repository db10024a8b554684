"""Worker-to-worker transfer inside one process: batches handed over as objects (LocalCluster's transport)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from storm_py.runtime.worker_runtime import Entries

log = logging.getLogger(__name__)


class InProcessTransfer:
    """Routes batches between the workers of one process by worker key; unknown keys are counted as dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._receivers: dict[str, Callable[[Entries], None]] = {}
        self.dropped = 0

    def bind(self, worker_key: str, deliver: Callable[[Entries], None]) -> None:
        with self._lock:
            self._receivers[worker_key] = deliver

    def unbind(self, worker_key: str) -> None:
        with self._lock:
            self._receivers.pop(worker_key, None)

    def send(self, worker_key: str, entries: Entries) -> None:
        deliver = self._receivers.get(worker_key)
        if deliver is None:
            n = sum(len(items) for _, items in entries)
            with self._lock:
                self.dropped += n
            log.debug("dropped %d tuples for worker %s, which is not running", n, worker_key)
            return
        deliver(entries)
