"""The checkpoint spout's heartbeat gauges: the last committed txid and when it committed, in epoch seconds of
the cluster's clock (the UI's "last checkpoint" and /metrics read them)."""

from __future__ import annotations

from typing import Any

from storm_py.clock import SimulatedClock
from storm_py.stateful.at_least_once.checkpoint_spout import GAUGE_COMMITTED_AT, GAUGE_TXID, CheckpointSpout
from tests.unit.test_window_executor import context


class Collector:
    def __init__(self) -> None:
        self.emitted: list[tuple[list[Any], Any]] = []

    def emit(self, values: list[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        self.emitted.append((values, msg_id))
        return []


def test_the_commit_time_is_the_wall_time_of_the_commit() -> None:
    clock = SimulatedClock()
    spout, collector = CheckpointSpout(), Collector()
    spout.open({"topology.state.provider": "memory"}, context(clock), collector)
    committed: dict[int, float] = {}
    for _ in range(5):  # init state, then prepare and commit txid 0 and txid 1, a second apart
        clock.advance(1.0)
        spout.next_tuple()
        (values, msg_id), = collector.emitted
        collector.emitted.clear()
        spout.ack(msg_id)
        if values[1] == "COMMIT":
            committed[values[0]] = clock.wall()
        clock.advance(0.5)  # the gauges are read later than the commit
    gauges = spout.checkpoint_gauges()
    assert gauges[GAUGE_TXID] == 1.0
    assert gauges[GAUGE_COMMITTED_AT] == committed[1]
    assert abs(gauges[GAUGE_COMMITTED_AT] - clock.wall() + 0.5) < 1e-6
