"""The Trident planner: which operations fuse into which bolt, how bolts subscribe, and what it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py.errors import InvalidTopologyException
from storm_py.transactional.coordinated import CoordinatedBolt
from storm_py.transactional.streams import COORD_STREAM
from storm_py.trident import (
    BaseFunction,
    Count,
    FirstN,
    FixedBatchSpout,
    MapGet,
    MemoryMapState,
    Sum,
    TridentTopology,
)
from storm_py.trident.planner import SPOUT_ID, Plan, plan
from storm_py.trident.stream import drpc_stream


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.get_value(0).split():
            collector.emit([word])


def spout(*fields: str) -> FixedBatchSpout:
    return FixedBatchSpout(list(fields), 3, [None] * len(fields))


def kinds(p: Plan) -> list[list[str]]:
    """Each bolt's processor kinds, in order."""
    return [[n.proc.kind for n in b.nodes if n.proc is not None] for b in p.bolts]


def inputs(p: Plan, i: int) -> dict[tuple[str, str], tuple[str, list[str]]]:
    return p.bolts[i].inputs


def test_operations_between_repartitions_fuse_into_one_bolt() -> None:
    topology = TridentTopology()
    s = topology.new_stream("s", spout("sentence"))
    words = s.each(["sentence"], Split(), ["word"]).map(lambda t: list(t.values)).project(["word"])
    words.partition_by(["word"]).each(["word"], Split(), ["again"]).project(["again"])
    p = plan(topology)
    assert kinds(p) == [["each", "map", "project"], ["each", "project"]]
    ((src, _), grouping), = inputs(p, 0).items()
    assert src == SPOUT_ID and grouping == ("shuffle", [])
    ((src, _), grouping), = inputs(p, 1).items()
    assert src == "b-0" and grouping == ("fields", ["word"])
    assert [b.committer for b in p.bolts] == [False, False]


def test_grouped_persistent_aggregate_is_two_phase_and_commits() -> None:
    """A combiner aggregates partially in the bolt before the repartition, then combines and persists in a
    committer bolt partitioned by the group."""
    topology = TridentTopology()
    words = topology.new_stream("s", spout("sentence")).each(["sentence"], Split(), ["word"])
    words.group_by(["word"]).persistent_aggregate(MemoryMapState.factory(), Count(), ["count"]).parallelism_hint(4)
    p = plan(topology)
    assert kinds(p) == [["each", "aggregate"], ["aggregate", "persist"]]
    assert [b.committer for b in p.bolts] == [False, True]
    assert [b.parallelism for b in p.bolts] == [1, 4]
    assert list(inputs(p, 1).values()) == [("fields", ["word"])]


def test_parallelism_hint_reaches_back_to_the_last_repartition_and_names_name_bolts() -> None:
    topology = TridentTopology()
    s = topology.new_stream("s", spout("a"))
    s.each(["a"], Split(), ["b"]).name("split").parallelism_hint(3).shuffle().each(["b"], Split(), ["c"]).name("again")
    p = plan(topology)
    assert [(b.id, b.parallelism) for b in p.bolts] == [("b-0-split", 3), ("b-1-again", 1)]


def test_global_aggregation_plans_a_single_task_bolt() -> None:
    topology = TridentTopology()
    s = topology.new_stream("s", spout("v"))
    s.aggregate(["v"], Sum(), ["sum"])
    s.batch_global().partition_aggregate(["v"], Sum(), ["sum"])
    p = plan(topology)
    assert kinds(p) == [["aggregate"], ["aggregate"], ["aggregate"]]
    singles = [b.executor.single for b in p.bolts if b.executor is not None]
    assert singles == [None, "global", "batch_global"]


def test_state_query_is_colocated_with_its_state() -> None:
    topology = TridentTopology()
    words = topology.new_stream("words", spout("word"))
    counts = words.group_by(["word"]).persistent_aggregate(MemoryMapState.factory(), Count(), ["count"])
    queries = topology.new_stream("queries", spout("word"))
    queries.group_by(["word"]).state_query(counts, MapGet(), ["count"])
    p = plan(topology)
    assert kinds(p) == [["aggregate"], ["aggregate", "persist", "query"]]
    assert p.bolts[1].committer
    assert sorted(inputs(p, 1).values()) == [("fields", ["word"]), ("fields", ["word"])]
    assert sorted(p.spouts) == ["queries", "words"] and p.tx_id == "queries+words"


def test_merge_fuses_its_inputs_and_join_repartitions_both_sides() -> None:
    topology = TridentTopology()
    a = topology.new_stream("a", spout("x", "y"))
    b = topology.new_stream("b", spout("k", "z"))
    topology.merge(a.project(["x"]), b.project(["k"]))
    topology.join(a, ["x"], b, ["k"], ["key", "y", "z"])
    p = plan(topology)
    assert kinds(p) == [["project", "project", "merge"], ["join"]]
    assert sorted(inputs(p, 1).values()) == [("fields", ["k"]), ("fields", ["x"])]


def test_first_n_is_a_partition_aggregate_then_a_global_one() -> None:
    topology = TridentTopology()
    topology.new_stream("s", spout("n")).shuffle().apply_assembly(FirstN(2, "n"))
    p = plan(topology)
    assert kinds(p) == [["aggregate"], ["aggregate"]]
    assert list(inputs(p, 1).values()) == [("global", [])]


def test_a_stream_read_two_ways_gets_one_stream_per_repartition() -> None:
    topology = TridentTopology()
    words = topology.new_stream("words", spout("word"))
    counts = words.group_by(["word"]).persistent_aggregate(MemoryMapState.factory(), Count(), ["count"])
    words.state_query(counts, ["word"], MapGet(), ["count"])
    p = plan(topology)
    streams = sorted(stream for (_, stream) in inputs(p, 1))
    assert len(set(streams)) == len(streams) == 2


def test_the_built_topology_runs_on_the_transactional_machinery() -> None:
    """Every bolt is a coordinated bolt reading its sources' count reports; the spouts share one coordinator."""
    topology = TridentTopology()
    topology.new_stream("s", spout("v")).shuffle().aggregate(["v"], Sum(), ["sum"])
    built = topology.build()
    components = built.components()
    assert sorted(components) == sorted([SPOUT_ID, f"{SPOUT_ID}/coordinator", "b-0", "b-1"])
    for cid in ("b-0", "b-1", SPOUT_ID):
        assert isinstance(components[cid].obj, CoordinatedBolt)
    assert (SPOUT_ID, COORD_STREAM) in components["b-0"].inputs
    assert ("b-0", COORD_STREAM) in components["b-1"].inputs


def test_bad_declarations_are_refused_with_the_name_of_what_is_wrong() -> None:
    topology = TridentTopology()
    s = topology.new_stream("s", spout("a", "b"))
    with pytest.raises(InvalidTopologyException, match="already used"):
        topology.new_stream("s", spout("a"))
    with pytest.raises(InvalidTopologyException, match="no field 'nope'"):
        s.each(["nope"], Split(), ["c"])
    with pytest.raises(InvalidTopologyException, match="already fields"):
        s.each(["a"], Split(), ["b"])
    with pytest.raises(InvalidTopologyException, match="different numbers of fields"):
        topology.merge(s, s.project(["a"]))
    with pytest.raises(InvalidTopologyException, match="out_fields"):
        topology.join(s, ["a"], s, ["a"], ["a", "b"])
    with pytest.raises(InvalidTopologyException, match="not a Trident spout"):
        topology.new_stream("t", object())
    with pytest.raises(InvalidTopologyException, match="needs at least one stream"):
        TridentTopology().build()
    bad = TridentTopology()
    t = bad.new_stream("t", spout("a")).project(["a"])
    merged = bad.merge(t, t.shuffle().project(["a"]))
    merged.each(["a"], Split(), ["w"])
    with pytest.raises(InvalidTopologyException, match="repartitioned and then combined"):
        bad.build()


class Requests:
    def next_tuple(self) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["args", "return-info"])


def test_a_drpc_stream_ends_in_a_batch_global_return_step() -> None:
    """Storm's completeDRPC: the stream's last operation and the request's return info meet in one task."""
    topology = TridentTopology()
    stream = drpc_stream(topology, "f", Requests(), object)
    stream.each(["args"], Split(), ["word"]).aggregate(Count(), ["count"])
    topology.build()  # adds the return step (once)
    p = plan(topology)
    assert kinds(p)[-1] == ["return"]
    assert sorted(inputs(p, len(p.bolts) - 1).values()) == [("batch_global", []), ("batch_global", [])]
    assert p.bolts[-1].executor is not None and p.bolts[-1].executor.single == "batch_global"
    assert list(p.spouts) == ["drpc-f"]
