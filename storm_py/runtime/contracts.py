"""This module owns the contracts a spout or bolt may declare to the runtime beyond Storm's interfaces, as
Protocols: a component run inside another (a wrapper), a log reader's lag report, a checkpoint's gauges.

The runtime puts some user components inside components of its own (a windowed bolt's executor, managed state's
spout and bolt executors); :func:`layers` walks from the outer one in, so what a user's component declares is
found whatever wraps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

#: wrappers nest a few deep at most; a deeper chain is cut here rather than followed
MAX_LAYERS = 8


@runtime_checkable
class Wrapper(Protocol):
    """A component that runs another: the user's spout or bolt, or a further wrapper."""

    @property
    def wrapped_component(self) -> Any: ...


@runtime_checkable
class LagReporter(Protocol):
    """A spout reading a log (the Kafka spout): ``{"type", "partitions": [[topic, partition, committed, log end],
    ...], "emitted"}``, read at each heartbeat."""

    def lag_report(self) -> dict[str, Any]: ...


@runtime_checkable
class CheckpointGaugeSource(Protocol):
    """The checkpoint spout of managed state: its last commit as gauges (``checkpoint.txid``, ...)."""

    def checkpoint_gauges(self) -> dict[str, float]: ...


def layers(component: Any) -> Iterator[Any]:
    """``component``, then each component it wraps, outermost first."""
    for _ in range(MAX_LAYERS):
        yield component
        if not isinstance(component, Wrapper):
            return
        component = component.wrapped_component
