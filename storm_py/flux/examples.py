"""This module owns the Python equivalents of the classes of Storm's flux-examples that its example Flux files name:
:class:`TestWindowBolt`, :class:`TestPrintBolt`, :class:`StatefulWordCounter` and
:class:`OnlyValueRecordTranslator` (the registry maps their Storm names here)."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from storm_py.api.components import BasicBolt, BasicOutputCollector, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.stateful import BaseStatefulBolt, KeyValueState
from storm_py.windowing import BaseWindowedBolt, TupleWindow

log = logging.getLogger("storm_py.flux.examples")


class TestWindowBolt(BaseWindowedBolt):
    """flux-examples' ``TestWindowBolt``: emits the number of tuples in each window, as field ``count``."""

    __test__ = False  # not a pytest class despite its Storm name

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def execute(self, window: TupleWindow[Tuple]) -> None:
        self.collector.emit([len(window.get())])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["count"])


class TestPrintBolt(BasicBolt):
    """flux-examples' ``TestPrintBolt``: logs every input's values at INFO on ``storm_py.flux.examples``; emits
    nothing."""

    __test__ = False

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        log.info("received %s from %s", tup.values, tup.source_component)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """No output."""


class StatefulWordCounter(BaseStatefulBolt):
    """flux-examples' ``StatefulWordCounter``: a running count per word (the input's first value) kept in the
    bolt's checkpointed state; emits ``[word, count]`` anchored to the input."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.counts = KeyValueState()

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Tuple) -> None:
        word = tup.values[0]
        count = int(self.counts.get(word, 0)) + 1
        self.counts.put(word, count)
        self.collector.emit([word, count], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word", "count"])


class ValuedRecord(Protocol):
    """What the translator reads of a consumed record: its value."""

    @property
    def value(self) -> Any: ...


class OnlyValueRecordTranslator:
    """flux-examples' ``OnlyValueRecordTranslator``: a Kafka record as its value alone, field ``value`` on the
    default stream."""

    def translate(self, record: ValuedRecord) -> tuple[str, list[Any]] | None:
        return DEFAULT_STREAM, [record.value]

    def streams(self) -> dict[str, list[str]]:
        return {DEFAULT_STREAM: ["value"]}


__all__ = ["OnlyValueRecordTranslator", "StatefulWordCounter", "TestPrintBolt", "TestWindowBolt", "ValuedRecord"]
