"""pystorm spout -> pystorm split (JSON) -> pystorm count (msgpack) -> a Python bolt printing the final counts."""

from __future__ import annotations

from collections import Counter
from typing import Any

from storm_py import Bolt, TopologyBuilder
from storm_py.multilang import ShellBolt, ShellSpout


class Sentences(ShellSpout):
    def __init__(self, n: int) -> None:
        super().__init__("python3", "sentence_spout.py", str(n), "json")

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])


class Split(ShellBolt):
    def __init__(self) -> None:
        super().__init__("python3", "split_bolt.py", "json")

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


class Count(ShellBolt):
    def __init__(self) -> None:
        super().__init__("python3", "count_bolt.py", "msgpack")

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])


class Report(Bolt):
    """Keeps the highest running count of each word; prints them when the topology is killed."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.task = context.this_task_id
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Any) -> None:
        word, count = tup.values
        self.counts[word] = max(self.counts[word], count)
        self.collector.ack(tup)

    def cleanup(self) -> None:
        pairs = ", ".join(f"{w}={c}" for w, c in sorted(self.counts.items()))
        print(f"final counts (task {self.task}): {pairs}", flush=True)


def build(conf: dict[str, Any]) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences(int(conf.get("mlwc.sentences", 100))))
    builder.set_bolt("split", Split(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"]).add_configuration(
        "topology.multilang.serializer", "msgpack")
    builder.set_bolt("report", Report(), 2).fields_grouping("count", ["word"])
    return builder.create_topology()
