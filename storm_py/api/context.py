"""TopologyContext: what a task knows about itself, its topology and its worker; and the read-only views
(``TopologyView``) of the running topology it holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from storm_py.api import metrics_v2
from storm_py.api.tuple import Fields
from storm_py.clock import SYSTEM_CLOCK, Clock


class GroupingView(Protocol):
    """A subscription's grouping as a task reads it (a :class:`~storm_py.api.topology.Grouping`)."""

    @property
    def kind(self) -> str: ...

    @property
    def fields(self) -> Fields | None: ...


class ComponentView(Protocol):
    """A component of the running topology as a task reads it (a :class:`~storm_py.api.topology.ComponentSpec`):
    its subscriptions, ``{(source component, stream): grouping}``."""

    @property
    def inputs(self) -> Mapping[tuple[str, str], GroupingView]: ...

    @property
    def columnar(self) -> Mapping[str, Any]:
        """Its columnar output streams (stream id -> declared schema or ``None``)."""
        ...


class TopologyView(Protocol):
    """The running topology as a task reads it (a :class:`~storm_py.api.topology.StormTopology`)."""

    def components(self) -> Mapping[str, ComponentView]: ...


class TopologyContext:
    """The view of the running topology a task receives in ``open``/``prepare``."""

    def __init__(
        self,
        *,
        topology_id: str,
        topology_name: str,
        task_id: int,
        component_id: str,
        task_to_component: Mapping[int, str],
        component_tasks: Mapping[str, list[int]],
        component_streams: Mapping[str, Mapping[str, Fields]],
        worker_tasks: list[int],
        worker_port: int | None = None,
        resources: dict[str, Any] | None = None,
        conf: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        sources: Mapping[tuple[str, str], Any] | None = None,
        topology: TopologyView | None = None,
    ) -> None:
        self.topology_id = topology_id
        self.topology_name = topology_name
        self.this_task_id = task_id
        self.this_component_id = component_id
        self._task_to_component = task_to_component
        self._component_tasks = component_tasks
        self._component_streams = component_streams
        self._worker_tasks = sorted(worker_tasks)
        self.this_worker_port = worker_port
        self._resources = resources if resources is not None else {}
        self._conf = conf or {}
        #: the cluster's clock (simulated in tests): components that keep time should read it
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self.metrics: dict[str, tuple[Any, float]] = {}
        self._sources = dict(sources or {})
        #: the running topology (its components' inputs and groupings), when the runtime hands it over
        self.topology = topology
        #: Storm's metrics v2 of this task: name -> (kind, metric); read, never reset, into every heartbeat
        self.metrics_v2: dict[str, tuple[str, Any]] = {}
        #: the task hooks of this task (``add_task_hook``; ``topology.auto.task.hooks`` adds its own first)
        self.hooks: list[Any] = []
        tasks = component_tasks.get(component_id, [task_id])
        self.this_task_index = tasks.index(task_id) if task_id in tasks else 0

    def get_component_tasks(self, component_id: str) -> list[int]:
        """Sorted task ids of ``component_id`` (empty when unknown)."""
        return list(self._component_tasks.get(component_id, []))

    def get_component_id(self, task_id: int) -> str | None:
        """The component a task belongs to."""
        return self._task_to_component.get(task_id)

    def get_this_worker_tasks(self) -> list[int]:
        """Every task id running in this task's worker."""
        return list(self._worker_tasks)

    def get_this_task_id(self) -> int:
        """This task's id."""
        return self.this_task_id

    def get_this_component_id(self) -> str:
        """This task's component id."""
        return self.this_component_id

    def get_this_task_index(self) -> int:
        """Index of this task among its component's sorted tasks."""
        return self.this_task_index

    def get_this_sources(self) -> dict[tuple[str, str], Any]:
        """The streams this component subscribes to: ``(component, stream)`` -> its grouping."""
        return dict(self._sources)

    def get_columnar_sources(self) -> frozenset[tuple[str, str]]:
        """The streams this component subscribes to that are columnar (their tuples carry batches)."""
        topology = self.topology
        if topology is None:
            return frozenset()
        components = topology.components()
        return frozenset((c, s) for c, s in self._sources if c in components and s in components[c].columnar)

    def get_component_output_fields(self, component_id: str, stream: str) -> Fields:
        """The fields of ``stream`` declared by ``component_id``."""
        try:
            return self._component_streams[component_id][stream]
        except KeyError:
            raise ValueError(f"component {component_id!r} declares no stream {stream!r}") from None

    def get_component_ids(self) -> list[str]:
        """All component ids of the topology (system components included)."""
        return sorted(self._component_tasks)

    def get_task_to_component(self) -> dict[int, str]:
        """Every task id of the topology with its component (system components included)."""
        return dict(self._task_to_component)

    def get_component_streams(self, component_id: str) -> list[str]:
        """The streams ``component_id`` declares."""
        return list(self._component_streams.get(component_id, {}))

    def get_resource(self, key: str) -> Any:
        """A worker-wide shared resource set by a worker hook (``None`` when unset)."""
        return self._resources.get(key)

    def set_resource(self, key: str, value: Any) -> None:
        """Share ``value`` with every task of this worker under ``key``."""
        self._resources[key] = value

    def register_metric(self, name: str, metric: Any, bucket_secs: float) -> Any:
        """Register a metric object (anything with ``get_value_and_reset()``), reported every ``bucket_secs``."""
        if name in self.metrics:
            raise ValueError(f"metric {name!r} is already registered for task {self.this_task_id}")
        self.metrics[name] = (metric, bucket_secs)
        return metric

    def _register_v2(self, kind: str, name: str, make: Any) -> Any:
        found = self.metrics_v2.get(name)
        if found is not None:
            if found[0] != kind:
                raise ValueError(f"metric {name!r} of task {self.this_task_id} is already registered as a {found[0]}")
            return found[1]
        metric = make()
        self.metrics_v2[name] = (kind, metric)
        return metric

    def register_counter(self, name: str) -> metrics_v2.Counter:
        """Storm's metrics v2 counter ``name`` of this task (the same one when asked again)."""
        counter: metrics_v2.Counter = self._register_v2("counter", name, metrics_v2.Counter)
        return counter

    def register_gauge(self, name: str, gauge: Any) -> metrics_v2.Gauge:
        """A gauge reading ``gauge`` (a callable returning a number, or a :class:`~storm_py.api.metrics_v2.Gauge`)."""
        made: metrics_v2.Gauge = self._register_v2(
            "gauge", name, lambda: gauge if isinstance(gauge, metrics_v2.Gauge) else metrics_v2.Gauge(gauge))
        return made

    def register_histogram(self, name: str) -> metrics_v2.Histogram:
        """Storm's metrics v2 histogram ``name`` of this task."""
        histogram: metrics_v2.Histogram = self._register_v2("histogram", name, metrics_v2.Histogram)
        return histogram

    def register_meter(self, name: str) -> metrics_v2.Meter:
        """Storm's metrics v2 meter ``name`` of this task (its rate on the cluster's clock)."""
        meter: metrics_v2.Meter = self._register_v2("meter", name, lambda: metrics_v2.Meter(self.clock))
        return meter

    def add_task_hook(self, hook: Any) -> None:
        """Register a task hook (a :class:`~storm_py.api.hooks.BaseTaskHook`); add it in ``prepare``/``open``."""
        self.hooks.append(hook)

    def get_hooks(self) -> list[Any]:
        """The task hooks registered for this task."""
        return list(self.hooks)

    def get_storm_conf(self) -> Mapping[str, Any]:
        """The topology configuration."""
        return self._conf
