"""storm-starter's SlidingWindowTopology: random integers -> a sliding-window sum -> a tumbling-window average.

The sum bolt keeps a running total from each window's new and expired tuples (30 tuples sliding every 10),
the way Storm's ``SlidingWindowSumBolt`` does; the average bolt averages every 3 sums (a tumbling window).
With ``window.event.time`` set, the sum window is 6 s sliding every 2 s of the tuples' own timestamps (field
``ts``) with a 1 s lag, and a tuple later than that goes to the ``late`` stream.

Run it in-process:  storm-py local examples.sliding_window_sum:build --ttl 10
                    storm-py local examples.sliding_window_sum:build --ttl 10 -c window.event.time=true
"""

from __future__ import annotations

import logging
import random
from typing import Any

from storm_py import BaseWindowedBolt, Bolt, Count, Duration, Spout, TopologyBuilder
from storm_py.api.components import OutputCollector, OutputFieldsDeclarer, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import Clock
from storm_py.windowing import TupleWindow

log = logging.getLogger(__name__)


class RandomIntegerSpout(Spout):
    """Emits ``[value, ts, msgid]``: a random integer below 1000 and the cluster clock's time in ms, every 10 ms
    of cluster time (``limit`` tuples at most; ``seed`` makes the values repeatable)."""

    def __init__(self, limit: int | None = None, seed: int | None = None) -> None:
        self.limit = limit
        self.seed = seed

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.clock: Clock = context.clock
        self.rng = random.Random(self.seed)
        self.msg_id = 0
        self.next_at = self.clock.now()

    def next_tuple(self) -> None:
        now = self.clock.now()
        if now < self.next_at or (self.limit is not None and self.msg_id >= self.limit):
            return
        self.next_at = now + 0.01
        self.msg_id += 1
        self.collector.emit([self.rng.randrange(1000), round(now * 1000), self.msg_id], self.msg_id)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["value", "ts", "msgid"])


class SlidingWindowSumBolt(BaseWindowedBolt):
    """A running sum over the window: add what came in, subtract what left."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.total = 0

    def execute(self, window: TupleWindow[Tuple]) -> None:
        self.total += sum(t["value"] for t in window.get_new())
        self.total -= sum(t["value"] for t in window.get_expired())
        log.debug("events in window: %d, sum: %d", len(window), self.total)
        self.collector.emit([self.total])  # anchored to every tuple of the window

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["sum"])


class TumblingWindowAvgBolt(BaseWindowedBolt):
    """The average of each window's sums."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def execute(self, window: TupleWindow[Tuple]) -> None:
        sums = [t["sum"] for t in window]
        if sums:
            self.collector.emit([sum(sums) / len(sums)])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["avg"])


class PrinterBolt(Bolt):
    """Logs and acks what it receives."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.component = context.get_this_component_id()

    def execute(self, tup: Tuple) -> None:
        print(f"{tup.source_component}/{tup.source_stream}: {tup.values}", flush=True)
        self.collector.ack(tup)


def topology_builder(conf: dict[str, Any] | None = None) -> TopologyBuilder:
    """The builder of the topology (``window.event.time`` for event time, ``window.tuples`` to stop the spout
    after that many tuples, ``window.seed`` for repeatable values)."""
    conf = conf or {}
    event_time = bool(conf.get("window.event.time", False))
    limit = conf.get("window.tuples")
    seed = conf.get("window.seed")
    builder = TopologyBuilder()
    builder.set_spout("integer", RandomIntegerSpout(None if limit is None else int(limit),
                                                    None if seed is None else int(seed)), 1)
    summer = SlidingWindowSumBolt()
    if event_time:
        summer = (summer.with_window(Duration.seconds(6), Duration.seconds(2)).with_timestamp_field("ts")
                  .with_lag(Duration.seconds(1)).with_late_tuple_stream("late"))
    else:
        summer = summer.with_window(Count(30), Count(10))
    builder.set_bolt("slidingsum", summer, 1).shuffle_grouping("integer")
    builder.set_bolt("tumblingavg", TumblingWindowAvgBolt().with_tumbling_window(Count(3)), 1).shuffle_grouping(
        "slidingsum")
    printer = builder.set_bolt("printer", PrinterBolt(), 1).shuffle_grouping("tumblingavg")
    if event_time:
        printer.shuffle_grouping("slidingsum", "late")
    return builder


def build(conf: dict[str, Any] | None = None) -> Any:
    """The sliding-window topology (see :func:`topology_builder` for the conf it reads)."""
    return topology_builder(conf).create_topology()
