"""This module owns the contracts a spout or bolt may declare to the runtime beyond Storm's interfaces, as
Protocols: a bolt that stands for the bolt its tasks run, chosen once from the topology's conf, a component run
inside another (a wrapper), a wrapper that runs as a basic bolt once prepared, work
that arrives from outside a bolt's inputs and a bounded inbox (a shell bolt's), a bolt taking batches whole, its
own configuration, a log reader's lag report, a checkpoint's gauges, a spout that checkpoints while its topology is
held, a wrapper whose component the runtime replaces
before ``prepare`` and a bolt with executions in flight that a checkpoint drains (an async bolt's driver).

The runtime asks for one of these with ``isinstance`` once, when it prepares a task (never per tuple), and keeps
what it found; it never probes a component for an attribute by name.

The runtime puts some user components inside components of its own (a windowed bolt's executor, managed state's
spout and bolt executors); :func:`layers` walks from the outer one in, so what a user's component declares is
found whatever wraps it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from storm_py.api.components import BasicBolt, Configured, own_configuration
from storm_py.api.tuple import Tuple

__all__ = ["BackgroundWork", "BoundedInbox", "CheckpointGaugeSource", "CheckpointsWhileHeld", "Configured", "Drains",
           "LagReporter", "ReplacesWrapped", "ResolvesToBolt", "RunsAsBasic", "TakesBatches", "Wrapper", "layers",
           "own_configuration"]

#: wrappers nest a few deep at most; a deeper chain is cut here rather than followed
MAX_LAYERS = 8


@runtime_checkable
class ResolvesToBolt(Protocol):
    """A bolt of a built topology that stands for the bolt its tasks run, which the topology's conf chooses
    (managed state's bolt: the executor of ``topology.state.guarantee``).  The system-topology rewrite puts
    ``resolve_bolt(conf)`` in its place (``conf``: the topology's merged with the component's own), once per component
    and before any task is made, so it is never prepared itself; what it returns is copied for each task and must
    hold nothing a copy cannot take until ``prepare``."""

    def resolve_bolt(self, conf: dict[str, Any]) -> Any: ...


@runtime_checkable
class Wrapper(Protocol):
    """A component that runs another: the user's spout or bolt, or a further wrapper."""

    @property
    def wrapped_component(self) -> Any: ...


@runtime_checkable
class ReplacesWrapped(Protocol):
    """A wrapper whose wrapped component the runtime may replace before ``prepare`` (an async bolt's executor puts
    the bolt's driver in its place)."""

    @property
    def wrapped_component(self) -> Any: ...

    def replace_wrapped(self, component: Any) -> None: ...


@runtime_checkable
class Drains(Protocol):
    """A bolt with executions in flight after ``execute`` returned (an async bolt's driver).  A checkpoint calls
    ``drain()`` before it prepares the state: it returns once every execution in flight completed (acked, failed or
    timed out).  A rollback calls ``cancel_in_flight()`` first: it cancels them and returns their inputs, neither
    acked nor failed."""

    def drain(self) -> None: ...

    def cancel_in_flight(self) -> list[Tuple]: ...


@runtime_checkable
class RunsAsBasic(Protocol):
    """A wrapper that, once prepared, may run as a basic bolt (a checkpoint forwarder of a user's basic bolt): the
    executor runs ``basic_bolt`` in its place, acking and anchoring for it; ``None`` runs the wrapper itself."""

    @property
    def basic_bolt(self) -> BasicBolt | None: ...


@runtime_checkable
class BackgroundWork(Protocol):
    """A bolt whose work also arrives from outside its inputs (a shell bolt's process).

    The executor hands it the worker loop's wake-up before ``prepare`` (called when outside work arrived) and calls
    ``background_step(now)`` on every pass of the loop, on the loop's thread; it returns whether it did anything.
    """

    def bind_wake(self, wake: Callable[[], None]) -> None: ...

    def background_step(self, now: float) -> bool: ...


@runtime_checkable
class BoundedInbox(Protocol):
    """A bolt with background work that takes at most ``room()`` more inputs now; the executor keeps the rest in
    its inbox."""

    def room(self) -> int: ...


@runtime_checkable
class TakesBatches(Protocol):
    """A bolt that takes the tuples of a columnar stream whole, one batch each (a vector bolt's runner); the
    executor hands any other bolt the rows of such a tuple as tuples of their own."""

    def takes_batches(self) -> bool: ...


@runtime_checkable
class LagReporter(Protocol):
    """A spout reading a log (the Kafka spout): ``{"type", "partitions": [[topic, partition, committed, log end],
    ...], "emitted"}``, read at each heartbeat."""

    def lag_report(self) -> dict[str, Any]: ...


@runtime_checkable
class CheckpointGaugeSource(Protocol):
    """The checkpoint spout of managed state: its last commit as gauges (``checkpoint.txid``, ...)."""

    def checkpoint_gauges(self) -> dict[str, float]: ...


@runtime_checkable
class CheckpointsWhileHeld(Protocol):
    """A spout taking part in managed state's checkpoints (the checkpoint spout, a stateful spout's executor).
    While its topology is held for a checkpoint (nimbus asks for one before rescaling the tasks) such a spout
    keeps running while the others are deactivated; ``request`` is the request's id (``None``: released).  It
    emits no data of its own while held, and the checkpoint spout begins a checkpoint at once."""

    def hold_for_checkpoint(self, request: int | None) -> None: ...


def layers(component: Any) -> Iterator[Any]:
    """``component``, then each component it wraps, outermost first."""
    for _ in range(MAX_LAYERS):
        yield component
        if not isinstance(component, Wrapper):
            return
        component = component.wrapped_component
