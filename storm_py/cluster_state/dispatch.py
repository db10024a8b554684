"""This module owns the storage thread: the single thread on which a storage session runs its callbacks.

Watch notifications, connection-state changes and housekeeping (re-arming watches, re-creating ephemeral
nodes) are posted here as zero-argument tasks and run one at a time, in order.  A failing task is logged and
does not stop the thread.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Task = Callable[[], None]


class CallbackThread:
    """A daemon thread running posted tasks in order; ``idle`` runs when no task came for ``idle_secs``."""

    def __init__(self, name: str, idle: Task | None = None, idle_secs: float = 1.0) -> None:
        self._name = name
        self._idle = idle
        self._idle_secs = idle_secs
        self._queue: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def post(self, task: Task) -> None:
        """Queue ``task``; starts the thread on first use; ignored after :meth:`stop`."""
        with self._lock:
            if self._stopped:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put(task)

    def on_thread(self) -> bool:
        """Whether the caller runs on this thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def stop(self, timeout: float = 10.0) -> None:
        """Run the tasks already queued, then end the thread (joined unless called from the thread itself)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            thread = self._thread
        if thread is None:
            return
        self._queue.put(None)
        if threading.current_thread() is not thread:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("storage thread %s did not stop within %.1fs", self._name, timeout)

    def _run(self) -> None:
        while True:
            try:
                task = self._queue.get(timeout=self._idle_secs) if self._idle else self._queue.get()
            except queue.Empty:
                task = self._idle
            if task is None:
                return
            try:
                task()
            except Exception:
                log.exception("storage callback failed on %s", self._name)
