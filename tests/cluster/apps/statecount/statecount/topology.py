"""words (a StatefulSpout: word i is VOCABULARY[i % len], for i < statecount.words, paced at statecount.rate per
second) -> split (shuffle, stateless) -> count (fields on word, stateful).

The spout's state holds the first index not yet acked (under exactly_once, where nothing is acked, the next index
to emit), so a restarted or resubmitted spout goes on from there; failed indexes are emitted again."""

from __future__ import annotations

from typing import Any

from storm_py import BaseStatefulBolt, Bolt, StatefulSpout, TopologyBuilder

VOCABULARY = ["apple", "pear", "fig", "kiwi", "plum", "lime", "date", "lemon"]


class Words(StatefulSpout):
    def __init__(self, total: int, rate: float) -> None:
        self.total = total
        self.rate = rate

    def open(self, conf, context, collector):
        self.collector = collector
        self.clock = context.clock
        self.tracked = conf.get("topology.state.guarantee") != "exactly_once"  # exactly_once: nothing is acked
        self.pos = 0
        self.pending: set[int] = set()
        self.replay: list[int] = []
        self.started = self.clock.now()
        self.sent = 0

    def init_state(self, state):
        self.state = state
        self.pos = int(state.get("pos", 0))
        self.pending = set()
        self.replay = []
        self.started = self.clock.now()
        self.sent = 0

    def pre_prepare(self, txid):
        self.state.put("pos", min(self.pending, default=self.pos))

    def next_tuple(self):
        if self.sent > (self.clock.now() - self.started) * self.rate:
            return
        if self.replay:
            i = self.replay.pop()
        elif self.pos < self.total:
            i = self.pos
            self.pos += 1
        else:
            return
        if self.tracked:
            self.pending.add(i)
        self.sent += 1
        self.collector.emit([VOCABULARY[i % len(VOCABULARY)]], msg_id=i)

    def ack(self, msg_id):
        self.pending.discard(msg_id)

    def fail(self, msg_id):
        if msg_id in self.pending:
            self.replay.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class Split(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup[0]], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class Count(BaseStatefulBolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.counts = state

    def execute(self, tup):
        self.counts.put(tup[0], self.counts.get(tup[0], 0) + 1)
        self.collector.ack(tup)


def build(conf: dict[str, Any]) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", Words(int(conf.get("statecount.words", 6000)), float(conf.get("statecount.rate", 300))))
    builder.set_bolt("split", Split(), 2).shuffle_grouping("words")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    return builder.create_topology()


def truth(total: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(total):
        w = VOCABULARY[i % len(VOCABULARY)]
        out[w] = out.get(w, 0) + 1
    return out
