"""``update_state_by_key`` under ``topology.state.guarantee: exactly_once`` (in-memory provider): a stateless
function that raises once rolls the topology back, and the state still counts every word exactly once."""

from __future__ import annotations

import threading
from collections import Counter

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.streams import StreamBuilder, ValueMapper
from storm_py.testing.registry import Shared
from tests.stateful.components import PositionSpout, new_run
from tests.streams.kit import Record

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 40
EXACTLY_ONCE = {"topology.state.checkpoint.interval.ms": 100, "topology.state.guarantee": "exactly_once"}


class RaiseOnce(Shared):
    """Raises on the first "fig" after ``armed`` is set, once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.raised = False

    def __call__(self, word: str) -> str:
        with self.lock:
            if word == "fig" and not self.raised:
                self.raised = True
                raise RuntimeError("a fig, once")
        return word


def test_a_raising_map_rolls_back_and_the_state_counts_each_word_once():
    new_run("streams-eo")
    raise_once, updates = RaiseOnce(), Record()
    builder = StreamBuilder()
    (builder.new_stream(PositionSpout("streams-eo", WORDS), ValueMapper(0))
     .repartition(2)
     .map(raise_once)
     .map_to_pair(lambda word: (word, 1))
     .update_state_by_key(0, lambda count, one: count + one)
     .to_pair_stream()
     .for_each(updates))
    truth = Counter(WORDS)

    def highest() -> dict[str, int]:
        best: dict[str, int] = {}
        for word, count in updates.snapshot():
            best[word] = max(best.get(word, 0), count)
        return best

    with LocalCluster() as cluster:
        cluster.submit_topology("streams-eo", EXACTLY_ONCE, builder.build())
        wait_until(lambda: highest() == dict(truth), 60, what="every word counted")
        assert raise_once.raised
        assert all(count <= truth[word] for word, count in updates.snapshot())  # never counted twice
        cluster.kill_topology("streams-eo", wait_secs=0)
