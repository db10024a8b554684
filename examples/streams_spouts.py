"""The spouts of storm-starter's Stream API examples: random integers with a timestamp, and numbers with their
squares."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from storm_py import Spout
from storm_py.api.components import OutputFieldsDeclarer, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.clock import Clock


class PacedSpout(Spout):
    """A spout taking one step every tenth of a second of the cluster's clock (:meth:`step`)."""

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.clock: Clock = context.clock
        self.next_at = self.clock.now()

    def next_tuple(self) -> None:
        now = self.clock.now()
        if now >= self.next_at:
            self.next_at = now + 0.1
            self.step()

    def step(self) -> None:
        raise NotImplementedError


class RandomIntegerSpout(PacedSpout):
    """Emits ``[value, ts, msgid]``: a random int below 10000, the cluster's wall time (epoch ms), a sequence
    number."""

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        super().open(conf, context, collector)
        self.rng = random.Random()
        self.seq = 0

    def step(self) -> None:
        self.seq += 1
        self.collector.emit([self.rng.randrange(10000), int(self.clock.wall() * 1000), self.seq], self.seq)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["value", "ts", "msgid"])


class NumberSpout(PacedSpout):
    """Emits ``[i, i * i]`` for the numbers ``i`` that pass ``keep`` (storm-starter's JoinExample spout)."""

    def __init__(self, keep: Callable[[int], bool]) -> None:
        self.keep = keep

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        super().open(conf, context, collector)
        self.i = 0

    def step(self) -> None:
        self.i += 1
        if self.keep(self.i):
            self.collector.emit([self.i, self.i * self.i])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["key", "val"])
