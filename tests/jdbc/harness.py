"""A bolt run by hand for the connector tests: a context, a collector that records, tuples and ticks."""

from __future__ import annotations

from typing import Any

from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Fields, Tuple, make_tick_tuple


class RecordingCollector:
    """Records what a bolt acks, fails, emits and reports."""

    def __init__(self) -> None:
        self.acked: list[Tuple] = []
        self.failed: list[Tuple] = []
        self.emitted: list[tuple[list[Any], Any]] = []
        self.errors: list[BaseException] = []

    def emit(self, values, anchors=None, stream=DEFAULT_STREAM):
        self.emitted.append((list(values), anchors))
        return []

    def emit_direct(self, task_id, values, anchors=None, stream=DEFAULT_STREAM):
        self.emitted.append((list(values), anchors))

    def ack(self, tup):
        self.acked.append(tup)

    def fail(self, tup):
        self.failed.append(tup)

    def reset_timeout(self, tup):
        pass

    def report_error(self, exc):
        self.errors.append(exc)


def context(component: str = "sink", task: int = 3, topology: str = "topo") -> TopologyContext:
    return TopologyContext(topology_id=f"{topology}-1", topology_name=topology, task_id=task, component_id=component,
                           task_to_component={task: component}, component_tasks={component: [task]},
                           component_streams={}, worker_tasks=[task])


def tup(fields: list[str], values: list[Any], source: str = "src") -> Tuple:
    return Tuple(list(values), Fields(fields), source, DEFAULT_STREAM, 1, None)


def tick() -> Tuple:
    return make_tick_tuple(0.1)


def run_bolt(bolt: Any, conf: dict[str, Any] | None = None, component: str = "sink") -> RecordingCollector:
    collector = RecordingCollector()
    bolt.prepare({"topology.message.timeout.secs": 30, **(conf or {})}, context(component), collector)
    return collector
