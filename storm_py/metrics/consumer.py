"""This module owns metrics consumers: Storm's ``IMetricsConsumer`` contract, the logging consumer, the bolt that
runs a consumer as a ``__metrics_<class>`` component, and the reading of ``topology.metrics.consumer.register``.

Every bucket an executor sends each of its tasks' metric values on the ``__metrics`` stream as
``[task_info, data_points]`` (plain lists, so they cross workers unchanged); the consumer bolt turns them into
:class:`TaskInfo` and :class:`DataPoint` and calls ``handle_data_points``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storm_py.api.components import Bolt
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.config.keys import setting
from storm_py.errors import ConfigError

log = logging.getLogger(__name__)

REGISTER_KEY = "topology.metrics.consumer.register"
METRICS_STREAM = "__metrics"
METRICS_TICK_STREAM = "__metrics_tick"
CONSUMER_PREFIX = "__metrics_"


@dataclass(frozen=True)
class TaskInfo:
    """Where data points come from (Storm's ``IMetricsConsumer.TaskInfo``)."""

    src_worker_host: str
    src_worker_port: int
    src_component_id: str
    src_task_id: int
    timestamp: float  # wall-clock seconds at the end of the bucket
    update_interval_secs: float

    def to_list(self) -> list[Any]:
        """The wire form."""
        return [self.src_worker_host, self.src_worker_port, self.src_component_id, self.src_task_id,
                self.timestamp, self.update_interval_secs]

    @classmethod
    def from_list(cls, raw: Sequence[Any]) -> TaskInfo:
        """Read the wire form."""
        host, port, component, task, timestamp, interval = raw
        return cls(str(host), int(port), str(component), int(task), float(timestamp), float(interval))


@dataclass(frozen=True)
class DataPoint:
    """One metric value of a bucket (Storm's ``IMetricsConsumer.DataPoint``)."""

    name: str
    value: Any


class MetricsConsumer:
    """Base of metrics consumers (Storm's ``IMetricsConsumer``); subclasses override what they need."""

    def prepare(self, conf: Mapping[str, Any], registration_argument: Any, context: TopologyContext) -> None:
        """Called once before any data points."""

    def handle_data_points(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        """One task's metric values of one bucket."""

    def cleanup(self) -> None:
        """The consumer's task is shutting down."""


class LoggingMetricsConsumer(MetricsConsumer):
    """Writes every data point to the ``storm_py.metrics.consumer`` log, one line each (Storm's format)."""

    def __init__(self) -> None:
        self.log = logging.getLogger("storm_py.metrics.consumer")

    def handle_data_points(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        head = (f"{int(task_info.timestamp)}\t{task_info.src_worker_host}:{task_info.src_worker_port}\t"
                f"{task_info.src_task_id:>3}:{task_info.src_component_id:<12}\t")
        for point in data_points:
            self.log.info("%s%-30s\t%s", head, point.name, point.value)


@dataclass(frozen=True)
class Registration:
    """One entry of ``topology.metrics.consumer.register``."""

    class_path: str
    parallelism: int
    argument: Any

    @property
    def component_id(self) -> str:
        """Storm's component id of the consumer: ``__metrics_<class>``."""
        return CONSUMER_PREFIX + self.class_path


def registrations(conf: Mapping[str, Any]) -> list[Registration]:
    """The consumers registered in a topology conf; a :class:`ConfigError` names a malformed entry."""
    raw = setting(conf, REGISTER_KEY) or []
    if not isinstance(raw, list):
        raise ConfigError(f"{REGISTER_KEY} must be a list of {{class, parallelism.hint, argument}} objects",
                          key=REGISTER_KEY)
    out: list[Registration] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("class"), str):
            raise ConfigError(f"{REGISTER_KEY}[{i}] needs a \"class\" string (\"module:Class\"), got {entry!r}",
                              key=REGISTER_KEY)
        path = str(entry["class"])
        module, sep, name = path.partition(":")
        if not sep or not module or not name:
            raise ConfigError(f"{REGISTER_KEY}[{i}] class {path!r} is not of the form module:Class", key=REGISTER_KEY)
        hint = entry.get("parallelism.hint", 1)
        if not isinstance(hint, int) or isinstance(hint, bool) or hint < 1:
            raise ConfigError(f"{REGISTER_KEY}[{i}] parallelism.hint must be an integer >= 1, got {hint!r}",
                              key=REGISTER_KEY)
        out.append(Registration(path, hint, entry.get("argument")))
    ids = [r.component_id for r in out]
    for i, reg in enumerate(out):  # the same class twice: Storm numbers the later ids
        if ids.count(reg.component_id) > 1:
            n = ids[:i].count(reg.component_id)
            if n:
                out[i] = Registration(f"{reg.class_path}#{n + 1}", reg.parallelism, reg.argument)
    return out


def load_consumer(class_path: str) -> MetricsConsumer:
    """An instance of ``module:Class`` (a ``#n`` suffix is ignored); a :class:`ConfigError` names what failed."""
    path = class_path.partition("#")[0]
    module_name, _, name = path.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), name)
        consumer = cls()
    except Exception as err:
        raise ConfigError(f"cannot load metrics consumer {path!r}: {type(err).__name__}: {err}",
                          key=REGISTER_KEY) from err
    if not callable(getattr(consumer, "handle_data_points", None)):
        raise ConfigError(f"metrics consumer {path!r} has no handle_data_points", key=REGISTER_KEY)
    return consumer  # type: ignore[no-any-return]


class MetricsConsumerBolt(Bolt):
    """Runs one registered consumer (Storm's ``MetricsConsumerBolt``); its inputs are ``[task_info, points]``."""

    def __init__(self, registration: Registration) -> None:
        self.registration = registration
        self.consumer: MetricsConsumer | None = None
        self.collector: Any = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: Any) -> None:
        self.collector = collector
        consumer = load_consumer(self.registration.class_path)
        consumer.prepare(conf, self.registration.argument, context)
        self.consumer = consumer

    def execute(self, tup: Tuple) -> None:
        if self.consumer is not None and not tup.is_tick():
            info = TaskInfo.from_list(tup.values[0])
            points = [DataPoint(str(name), value) for name, value in tup.values[1]]
            self.consumer.handle_data_points(info, points)
        self.collector.ack(tup)

    def cleanup(self) -> None:
        if self.consumer is not None:
            self.consumer.cleanup()
