"""This module owns Storm's local serialization check (``topology.testing.always.try.serialize``): with the key
on, tuples between the tasks of one worker go through the codec too, so a value that could not cross workers
fails in a one-worker topology as well."""

from __future__ import annotations

from typing import Any, Protocol

from storm_py.api.tuple import Tuple
from storm_py.errors import CodecError
from storm_py.protocol.codec import encode


class CheckHost(Protocol):
    """What the check needs of the worker: where errors and failed trees go."""

    def report_error(self, component_id: str, task: int, exc: BaseException) -> None: ...

    def fail_unsent(self, items: list[Any]) -> None: ...


def encodable(host: CheckHost, items: list[Any]) -> list[Any]:
    """The items of a local batch whose tuples the codec can carry; a refused tuple is reported for its component
    and its trees fail (as a tuple the transport cannot send to another worker)."""
    kept: list[Any] = []
    for item in items:
        if type(item) is Tuple:
            try:
                encode(item.values)
            except CodecError as err:
                host.report_error(item.source_component, item.source_task, err)
                host.fail_unsent([item])
                continue
        kept.append(item)
    return kept
