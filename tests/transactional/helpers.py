"""Test scaffolding: an in-memory transactional store, task contexts, and capturing collectors."""

from __future__ import annotations

from typing import Any

from storm_py.api.context import TopologyContext
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.transactional.state import TRANSACTIONAL_STATE_RESOURCE


def memory_state() -> ClusterState:
    """A cluster state over a fresh in-memory store (what LocalCluster's workers hand their tasks)."""
    return ClusterState(MemoryStorage(MemoryStore()))


def make_context(
    state: Any,
    component: str = "spout",
    task: int = 1,
    component_tasks: dict[str, list[int]] | None = None,
    clock: Any = None,
) -> TopologyContext:
    """A task context whose resources hold ``state`` as the transactional store."""
    tasks = component_tasks or {component: [task]}
    return TopologyContext(
        topology_id="topo-1",
        topology_name="topo",
        task_id=task,
        component_id=component,
        task_to_component={t: c for c, ts in tasks.items() for t in ts},
        component_tasks=tasks,
        component_streams={},
        worker_tasks=[t for ts in tasks.values() for t in ts],
        resources={TRANSACTIONAL_STATE_RESOURCE: state},
        clock=clock,
    )


class SpoutCapture:
    """A spout output collector recording ``stream -> [(values, msg_id)]``."""

    def __init__(self) -> None:
        self.emitted: dict[str, list[tuple[list[Any], Any]]] = {}

    def emit(self, values, msg_id=None, stream="default"):
        self.emitted.setdefault(stream, []).append((list(values), msg_id))
        return []

    def emit_direct(self, task_id, values, msg_id=None, stream="default"):
        self.emit(values, msg_id, stream)

    def get_pending_count(self):
        return 0

    def report_error(self, exc):
        raise AssertionError(f"unexpected error reported: {exc!r}")

    def msg_ids(self, stream: str) -> list[Any]:
        return [m for _, m in self.emitted.get(stream, [])]

    def take(self) -> dict[str, list[list[Any]]]:
        """``stream -> [[txid, second value?]]`` of everything emitted since the last call, then forget it."""
        out: dict[str, list[list[Any]]] = {}
        for stream, rows in self.emitted.items():
            for values, msg_id in rows:
                assert values[0] == msg_id, "every coordinator tuple has its attempt as message id"
                out.setdefault(stream, []).append([values[0].transaction_id, *values[1:2]])
        self.emitted = {}
        return out


class BoltCapture:
    """A bolt output collector recording emits per stream and acked/failed tuples' values."""

    def __init__(self) -> None:
        self.log: dict[Any, list[Any]] = {}
        self.events: list[tuple[Any, Any]] = []
        self.anchors: list[tuple[str, list[Any]]] = []
        #: the tasks ``emit`` says a stream's tuples go to
        self.targets: dict[str, list[int]] = {}

    def _add(self, key: Any, value: Any) -> None:
        self.log.setdefault(key, []).append(value)
        self.events.append((key, value))

    def emit(self, values, anchors=None, stream="default"):
        self._add(stream, list(values))
        if anchors is not None:
            anchors = [anchors] if hasattr(anchors, "values") else list(anchors)
            self.anchors.append((stream, [list(a.values) for a in anchors]))
        return self.targets.get(stream, [])

    def emit_direct(self, task_id, values, anchors=None, stream="default"):
        self._add(stream, list(values))

    def ack(self, tup):
        self._add("ack", list(tup.values))

    def fail(self, tup):
        self._add("fail", list(tup.values))

    def reset_timeout(self, tup):
        pass

    def report_error(self, exc):
        self._add("error", exc)

    def take(self) -> dict[Any, list[Any]]:
        out, self.log = self.log, {}
        self.events = []
        self.anchors = []
        return out
