"""storm-starter's Stream API examples as topologies for a dev cluster: each example's pipeline function fed by a
finite spout of fixed rows and writing to JSON-lines files in the folder ``streams.out`` names, which the cluster
test reads.  Packaged into a wheel as module ``streamsapp.topologies``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from examples.streams_aggregate import aggregate
from examples.streams_branch import branch
from examples.streams_join import join
from examples.streams_stateful_word_count import stateful_word_count
from examples.streams_typed_tuples import typed_tuples
from examples.streams_windowed_word_count import windowed_word_count
from examples.streams_word_count import word_count as word_count_pipeline
from storm_py import Bolt, Count, Spout
from storm_py.api.components import OutputCollector, OutputFieldsDeclarer, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Tuple
from storm_py.streams import StreamBuilder, TumblingWindows

SENTENCES = ["the cow jumped over the moon", "an apple a day", "the moon and the cow", "a day"]
#: rounds of SENTENCES the word count reads
WORD_COUNT_ROUNDS = 50
WORDS = ["a", "b", "a", "c", "a", "b", "d", "a"]
QUERIES = ["a", "b", "zebra", "c", "d"]
#: the file whose existence lets the query spout start (the test creates it once every word is counted)
GO = "queries.go"


class RowSpout(Spout):
    """Emits ``rows`` once each, in order, with their index as message id (a failed row is emitted again);
    with ``gate``, only once the file of that name exists in the output folder."""

    def __init__(self, fields: list[str], rows: list[list[Any]], out: str, gate: str | None = None) -> None:
        self.fields = fields
        self.rows = rows
        self.gate = Path(out) / gate if gate else None

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.todo = list(range(len(self.rows)))[::-1]
        self.open_gate = self.gate is None

    def next_tuple(self) -> None:
        if not self.todo:
            return
        if not self.open_gate:
            assert self.gate is not None
            self.open_gate = self.gate.exists()
            if not self.open_gate:
                return
        i = self.todo.pop()
        self.collector.emit(self.rows[i], msg_id=i)

    def fail(self, msg_id: Any) -> None:
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.fields)


class FileSink:
    """A ``for_each`` consumer appending each value as a JSON line to ``<name>-<pid>.jsonl`` in ``out``."""

    def __init__(self, out: str, name: str) -> None:
        self.out = out
        self.name = name

    def __call__(self, value: Any) -> None:
        path = Path(self.out) / f"{self.name}-{os.getpid()}.jsonl"
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(value) + "\n")


class FileBolt(Bolt):
    """A sink bolt for ``to``: each input's values through a :class:`FileSink`, then acked."""

    def __init__(self, out: str, name: str) -> None:
        self.sink = FileSink(out, name)

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def execute(self, tup: Tuple) -> None:
        self.sink(list(tup.values))
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """No output."""


def _out(conf: dict[str, Any] | None) -> str:
    out = (conf or {}).get("streams.out")
    if not isinstance(out, str) or not out:
        raise ValueError(f"streams.out must name the output folder, got {out!r}")
    return out


def _rows(values: list[Any]) -> list[list[Any]]:
    """``[value, ts, msgid]`` rows (the examples' random-integer spout's fields)."""
    return [[v, 0, i] for i, v in enumerate(values)]


def word_count(conf: dict[str, Any] | None = None) -> StormTopology:
    out, builder = _out(conf), StreamBuilder()
    rows = [[s] for _ in range(WORD_COUNT_ROUNDS) for s in SENTENCES]
    word_count_pipeline(builder, RowSpout(["sentence"], rows, out), FileBolt(out, "counts"), parallelism=2)
    return builder.build()


def stateful(conf: dict[str, Any] | None = None) -> StormTopology:
    out, builder = _out(conf), StreamBuilder()
    stateful_word_count(builder, RowSpout(["word"], [[w] for w in WORDS], out),
                        RowSpout(["word"], [[q] for q in QUERIES], out, gate=GO),
                        FileSink(out, "counts"), FileSink(out, "answers"))
    return builder.build()


def windowed(conf: dict[str, Any] | None = None) -> StormTopology:
    out, builder = _out(conf), StreamBuilder()
    windowed_word_count(builder, RowSpout(["sentence"], [[s] for s in SENTENCES * 3], out), FileSink(out, "counts"),
                        TumblingWindows.of(Count.of(2)), at_least=1)
    return builder.build()


def joined(conf: dict[str, Any] | None = None) -> StormTopology:
    out, builder = _out(conf), StreamBuilder()
    join(builder, RowSpout(["key", "val"], [[1, 10], [2, 20], [3, 30]], out),
         RowSpout(["key", "val"], [[2, 200], [3, 300], [3, 301]], out), FileSink(out, "joined"),
         TumblingWindows.of(Count.of(6)))
    return builder.build()


def branched(conf: dict[str, Any] | None = None) -> StormTopology:
    out, builder = _out(conf), StreamBuilder()
    branch(builder, RowSpout(["value", "ts", "msgid"], _rows(list(range(10))), out), FileSink(out, "evens"),
           FileSink(out, "odds"))
    return builder.build()


def aggregated(conf: dict[str, Any] | None = None) -> StormTopology:
    out, builder = _out(conf), StreamBuilder()
    aggregate(builder, RowSpout(["value", "ts", "msgid"], _rows([4, -1, 2, 0, 10, 20, 30, 41]), out),
              FileSink(out, "averages"), TumblingWindows.of(Count.of(4)))
    return builder.build()


def typed(conf: dict[str, Any] | None = None) -> StormTopology:
    out, builder = _out(conf), StreamBuilder()
    stamps = [1000, 12000, 5000, 19999, 20000, 20001, 35000, 36000]
    typed_tuples(builder, RowSpout(["value", "ts", "msgid"], [[i, ts, i] for i, ts in enumerate(stamps)], out),
                 FileSink(out, "groups"), length=4)
    return builder.build()
