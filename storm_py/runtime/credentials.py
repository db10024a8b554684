"""This module owns handing a topology's credentials to its tasks (Storm's worker credentials check and
``ICredentialsListener``): deciding when stored credentials are news (:class:`CredentialsWatch`, pure), carrying
them from the worker's poller to its loop thread (:class:`CredentialsInbox`) and calling each listening spout's
and bolt's ``set_credentials`` there (:func:`deliver_credentials`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from storm_py.api.credentials import CredentialsListener
from storm_py.runtime.contracts import layers
from storm_py.runtime.executor import Executor

#: ``report(component_id, task, error)``: where a listener's exception goes (the topology's errors).
ErrorReport = Callable[[str, int, BaseException], None]


class CredentialsWatch:
    """Decides, from each read of the stored credentials, what to hand to the tasks: the first read's credentials
    when there are any (a worker starting after an upload), then every change (an upload replaces the whole map;
    credentials removed read as an empty map, which is news when there were some)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] | None = None

    def changed(self, stored: Mapping[str, str] | None) -> dict[str, str] | None:
        """The credentials to deliver after reading ``stored`` (None: none stored), or None when nothing is new."""
        now = dict(stored or {})
        previous, self.seen = self.seen, now
        if previous is None:
            return now or None
        return now if now != previous else None


class CredentialsInbox:
    """Credentials offered by any thread, taken by the loop thread (the latest offer wins)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, str] | None = None

    @property
    def pending(self) -> bool:
        """Whether an offer waits (read without the lock: the loop polls it every pass)."""
        return self._pending is not None

    def offer(self, creds: Mapping[str, str]) -> None:
        """Hand in new credentials."""
        with self._lock:
            self._pending = dict(creds)

    def take(self) -> dict[str, str] | None:
        """The waiting credentials, if any (clearing them)."""
        with self._lock:
            creds, self._pending = self._pending, None
        return creds

    def deliver(self, executors: Iterable[Executor], report: ErrorReport) -> None:
        """On the loop thread, every pass: hand waiting credentials to the listeners of ``executors``."""
        if self._pending is not None:
            creds = self.take()
            if creds is not None:
                deliver_credentials(executors, creds, report)


def listeners(executors: Iterable[Executor]) -> list[tuple[str, int, Any]]:
    """``(component_id, task, component)`` of every spout and bolt of ``executors`` that defines
    ``set_credentials``."""
    out = []
    for ex in executors:
        for task, component in sorted(ex.components().items()):
            component = user_component(component)
            if isinstance(component, CredentialsListener):
                out.append((ex.component_id, task, component))
    return out


def user_component(component: Any) -> Any:
    """The component itself when it listens, else the user's spout or bolt inside the wrappers the runtime puts
    around it (a windowed bolt's executor, managed state's executors), each naming it ``wrapped_component``."""
    found = list(layers(component))
    return next((c for c in found if isinstance(c, CredentialsListener)), found[-1])


def deliver_credentials(executors: Iterable[Executor], creds: Mapping[str, str], report: ErrorReport) -> int:
    """Call ``set_credentials`` with a copy of ``creds`` on every listener; a listener that raises is reported
    and the others still get theirs.  Returns how many listeners were called."""
    called = 0
    for component_id, task, component in listeners(executors):
        called += 1
        try:
            component.set_credentials(dict(creds))
        except Exception as exc:  # a user's component: its failure is the topology's error, not the worker's
            report(component_id, task, exc)
    return called
