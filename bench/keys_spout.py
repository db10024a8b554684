"""The keyed spout the rebalance and rescale benches share: ``key0 .. key{N-1}`` once, then a trickle of the first
keys, its position in its managed state."""

from __future__ import annotations

import time

from storm_py import StatefulSpout


class KeysSpout(StatefulSpout):
    """Emits ``key0 .. key{N-1}`` once, then a trickle of the first keys (position in its state)."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def open(self, conf, context, collector):
        self.collector = collector
        self.pos = 0
        self.last = 0.0

    def init_state(self, state):
        self.state = state
        self.pos = state.get("pos", 0)

    def pre_prepare(self, txid):
        self.state.put("pos", self.pos)

    def next_tuple(self):
        if self.pos >= self.keys:
            now = time.monotonic()
            if now - self.last < 0.002:
                return
            self.last = now
        self.collector.emit([f"key{self.pos % self.keys}"])
        self.pos += 1

    def declare_output_fields(self, declarer):
        declarer.declare(["key"])
