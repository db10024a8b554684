"""A topology whose figures are known in advance.

``counted`` emits ``metrics.trees`` tuples (ids 0..N-1), each judged by ``judge``: id % 10 == 0 fails,
id % 10 == 1 is never acked (times out), the rest are acked; id 5 is also reported as an error.  ``paced``
emits ``metrics.rate`` tuples per second forever into ``sleeper``, which sleeps ``metrics.sleep.ms`` per tuple:
its capacity is rate x sleep.  ``paced`` also reports lag as a log-reading spout would: a log ``paced-log`` with
one partition whose head is the count emitted and whose committed offset trails it by 3 (unless ``metrics.lag`` is
false: then no spout reports lag, as in a topology without Kafka).
Both register metrics; :class:`FileConsumer` appends every data point it receives to a JSON-lines file.
"""

from __future__ import annotations

import json
from typing import Any

from storm_py import BaseStatefulWindowedBolt, Bolt, Count, Spout, TopologyBuilder
from storm_py.clock import SYSTEM_CLOCK
from storm_py.metrics import CountMetric, MeanReducer, MetricsConsumer, MultiCountMetric, ReducedMetric


class CountedSpout(Spout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.total = int(conf.get("metrics.trees", 100))
        self.next_id = 0
        self.emits = context.register_metric("spout-emits", CountMetric(), int(conf.get("metrics.bucket", 2)))

    def next_tuple(self) -> None:
        if self.next_id < self.total:
            self.collector.emit([self.next_id], msg_id=self.next_id)
            self.emits.incr()
            self.next_id += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id"])


class PacedSpout(Spout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.period = 1.0 / float(conf.get("metrics.rate", 10))
        self.next_at = SYSTEM_CLOCK.now()
        self.n = 0

    def next_tuple(self) -> None:
        now = SYSTEM_CLOCK.now()
        if now >= self.next_at:
            self.next_at = max(self.next_at + self.period, now - 1.0)
            self.collector.emit([self.n])
            self.n += 1

    def lag_report(self) -> dict[str, Any]:
        return {"type": "KAFKA", "partitions": [["paced-log", 0, max(0, self.n - 3), self.n]], "emitted": self.n}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class UnloggedPacedSpout(PacedSpout):
    """``paced`` reading no log: it reports no lag."""

    lag_report = None  # type: ignore[assignment]


class JudgeBolt(Bolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        bucket = int(conf.get("metrics.bucket", 2))
        self.judged = context.register_metric("judged", MultiCountMetric(), bucket)
        self.mean_id = context.register_metric("mean-id", ReducedMetric(MeanReducer()), bucket)

    def execute(self, tup: Any) -> None:
        i = int(tup[0])
        self.mean_id.update(i)
        if i == 5:
            self.collector.report_error(ValueError("tuple 5 looks odd"))
        if i % 10 == 0:
            self.judged.scope("failed").incr()
            self.collector.fail(tup)
        elif i % 10 == 1:
            self.judged.scope("dropped").incr()  # never acked: the tree times out
        else:
            self.judged.scope("acked").incr()
            self.collector.ack(tup)


class SleeperBolt(Bolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.secs = float(conf.get("metrics.sleep.ms", 50)) / 1000.0

    def execute(self, tup: Any) -> None:
        SYSTEM_CLOCK.sleep(self.secs)
        self.collector.ack(tup)


class FileConsumer(MetricsConsumer):
    """Appends ``{"component", "task", "name", "value", "timestamp", "interval"}`` lines to the argument path."""

    def prepare(self, conf: Any, registration_argument: Any, context: Any) -> None:
        self.path = str(registration_argument)

    def handle_data_points(self, task_info: Any, data_points: list[Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            for point in data_points:
                out.write(json.dumps({
                    "component": task_info.src_component_id, "task": task_info.src_task_id, "name": point.name,
                    "value": point.value, "timestamp": task_info.timestamp,
                    "interval": task_info.update_interval_secs,
                }) + "\n")


def build(conf: dict[str, Any] | None = None) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("counted", CountedSpout(), 1)
    lag = (conf or {}).get("metrics.lag", True) is not False
    builder.set_spout("paced", PacedSpout() if lag else UnloggedPacedSpout(), 1)
    builder.set_bolt("judge", JudgeBolt(), 2).shuffle_grouping("counted")
    builder.set_bolt("sleeper", SleeperBolt(), 1).shuffle_grouping("paced")
    return builder.create_topology()


class NumberSpout(Spout):
    """Emits ``[id, id]`` for ids 0, 1, ... with the id as message id (``topology.max.spout.pending`` paces it)."""

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.next_id = 0

    def next_tuple(self) -> None:
        self.collector.emit([self.next_id, self.next_id], msg_id=self.next_id)
        self.next_id += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "value"])


class WindowSum(BaseStatefulWindowedBolt):
    """The sum of every window's new values, in its state."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, window: Any) -> None:
        self.state.put("sum", self.state.get("sum", 0) + sum(t.values[1] for t in window.get_new()))

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def build_windowed(conf: dict[str, Any] | None = None) -> Any:
    """``numbers`` into ``windowsum``, a stateful windowed bolt (tumbling windows of 5, message ids in ``id``)."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(), 1)
    bolt = WindowSum().with_tumbling_window(Count.of(5)).with_message_id_field("id")
    builder.set_bolt("windowsum", bolt, 1).shuffle_grouping("numbers")
    return builder.create_topology()
