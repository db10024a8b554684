"""Partitioned and opaque-partitioned transactional spouts (the in-memory ones here, Kafka's the same way) as
Trident streams: partitions spread over emitter tasks, metadata kept per partition, exact counts under replays."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from storm_py.transactional import MemoryTransactionalSpout, OpaqueMemoryTransactionalSpout
from storm_py.trident import Count, MemoryMapState, TridentTopology
from storm_py.trident.planner import SPOUT_ID
from storm_py.trident.spout import CommitterTridentSpoutsExecutor
from tests.trident.helpers import FailOnce, Seen, running, wait

DATA: dict[int, list[list[Any]]] = {
    0: [["cat"], ["dog"], ["chicken"], ["cat"], ["dog"], ["apple"]],
    1: [["cat"], ["dog"], ["apple"], ["banana"]],
    2: [["cat"], ["cat"], ["cat"], ["cat"], ["cat"], ["dog"], ["dog"], ["dog"], ["dog"]],
}
EXPECTED = Counter(row[0] for rows in DATA.values() for row in rows)


@pytest.mark.parametrize("spout_class", [MemoryTransactionalSpout, OpaqueMemoryTransactionalSpout])
def test_partitioned_spouts_count_exactly_once(spout_class: Any) -> None:
    data = {p: list(rows) for p, rows in DATA.items()}
    topology = TridentTopology()
    stream = topology.new_stream(f"memory-{spout_class.__name__}", spout_class(data, ["word"], 2)).parallelism_hint(2)
    assert list(stream.get_output_fields()) == ["word"]
    factory = MemoryMapState.factory("opaque" if spout_class is OpaqueMemoryTransactionalSpout else "transactional")
    state = (
        stream.each(["word"], FailOnce({"banana"}, Seen()), [])
        .group_by(["word"])
        .persistent_aggregate(factory, Count(), ["count"])
    )
    state.new_values_stream().each(["word"], FailOnce({"apple"}, Seen()), [])
    built = topology.build()
    assert built.components()[SPOUT_ID].parallelism == 2
    assert isinstance(built.components()[SPOUT_ID].obj.delegate.spout, CommitterTridentSpoutsExecutor) == (
        spout_class is OpaqueMemoryTransactionalSpout
    )
    with running(topology):
        wait(lambda: {k[0]: v for k, v in factory.values().items()} == dict(EXPECTED), "every word counted")
