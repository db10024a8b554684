"""JoinResult: results joined with return-infos by request id; a half left alone is failed and forgotten."""

from __future__ import annotations

from typing import Any

from storm_py.api.context import TopologyContext
from storm_py.clock import SimulatedClock
from storm_py.drpc.bolts import JoinResult
from storm_py.testing import test_tuple


class Collector:
    def __init__(self) -> None:
        self.emitted: list[tuple[list[Any], list[Any]]] = []
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        self.emitted.append((list(values), list(anchors or [])))
        return []

    def ack(self, tup: Any) -> None:
        self.acked.append(tup)

    def fail(self, tup: Any) -> None:
        self.failed.append(tup)


def _join() -> tuple[JoinResult, Collector, SimulatedClock]:
    clock = SimulatedClock()
    context = TopologyContext(topology_id="t", topology_name="t", task_id=1, component_id="bolt1",
                              task_to_component={1: "bolt1"}, component_tasks={"bolt1": [1]},
                              component_streams={}, worker_tasks=[1], clock=clock)
    join, out = JoinResult("prepare-request"), Collector()
    join.prepare({"topology.message.timeout.secs": 10}, context, out)  # type: ignore[arg-type]
    return join, out, clock


def test_a_result_and_its_return_info_are_joined_in_either_order_as_str():
    join, out, _ = _join()
    ret = test_tuple([7, '{"id":"a","host":"h","port":1}'], component="prepare-request", stream="ret")
    res = test_tuple([7, 42], component="bolt0")
    join.execute(res)
    assert out.emitted == []
    join.execute(ret)
    assert out.emitted == [(["42", '{"id":"a","host":"h","port":1}'], [res, ret])]
    assert out.acked == [res, ret] and join.pending() == 0


def test_a_half_whose_other_half_never_comes_is_failed_after_twice_the_message_timeout():
    join, out, clock = _join()
    lonely = test_tuple([1, "info"], component="prepare-request", stream="ret")
    join.execute(lonely)
    clock.advance(19.0)
    join.execute(test_tuple([2, "x"], component="bolt0"))
    assert join.pending() == 2 and out.failed == []
    clock.advance(2.0)
    join.execute(test_tuple([3, "y"], component="bolt0"))
    assert out.failed == [lonely] and join.pending() == 2
