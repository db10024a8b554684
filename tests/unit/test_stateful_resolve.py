"""What runs a managed bolt is chosen once, from the topology's conf, by the system-topology rewrite (the stateful
executor or checkpoint forwarder under at_least_once, the aligned executor under exactly_once), never by the
managed bolt at ``prepare``; each task runs its own copy, made before anything compiled exists, and its inputs go
straight into the compiled path of what runs it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from storm_py.api.components import BasicBolt
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.contracts import ResolvesToBolt, RunsAsBasic, Wrapper, layers
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.stateful.at_least_once.bolt_wrappers import CheckpointTupleForwarder, StatefulBoltExecutor
from storm_py.stateful.exactly_once.aligned_bolt import AlignedBoltExecutor
from storm_py.stateful.managed_bolt import ManagedBolt
from tests.stateful.components import (
    CountBolt,
    SinkBolt,
    SplitBolt,
    committed_counts,
    new_run,
    truth,
    word_count_topology,
)

WORDS = ["apple", "pear", "fig", "apple", "kiwi", "pear", "apple"] * 10


class Upper(BasicBolt):
    """A basic bolt: emits its word in capitals."""

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([str(tup.values[0]).upper()])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


def conf_of(guarantee: str) -> dict[str, Any]:
    conf = defaults()
    conf.update({"topology.acker.executors": 1, "topology.workers": 1, "topology.state.guarantee": guarantee,
                 "topology.state.checkpoint.interval.ms": 100})
    return conf


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_the_system_topology_runs_the_bolt_the_guarantee_chooses_in_place_of_each_managed_bolt(guarantee):
    user = word_count_topology("resolve-kinds", WORDS)
    assert all(isinstance(spec.obj, ManagedBolt) for spec in user.bolts.values())
    users = {cid: spec.obj.wrapped_component for cid, spec in user.bolts.items()}

    system = system_topology(user, conf_of(guarantee))

    kinds = {cid: type(system.bolts[cid].obj) for cid in ("split", "count", "sink")}
    if guarantee == "exactly_once":
        assert kinds == dict.fromkeys(("split", "count", "sink"), AlignedBoltExecutor)
        assert system.bolts["count"].obj.stateful and not system.bolts["sink"].obj.stateful
    else:
        assert kinds == {"split": CheckpointTupleForwarder, "count": StatefulBoltExecutor,
                         "sink": CheckpointTupleForwarder}
    for cid, obj in users.items():
        resolved = system.bolts[cid].obj
        assert isinstance(resolved, Wrapper) and resolved.wrapped_component is obj
        assert not isinstance(resolved, ResolvesToBolt)
    # the user's topology keeps what it was built with: another conf resolves it again
    assert all(isinstance(spec.obj, ManagedBolt) for spec in user.bolts.values())
    assert [type(c) for c in layers(user.bolts["count"].obj)] == [ManagedBolt, CountBolt]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_what_runs_a_managed_bolt_holds_nothing_compiled_until_prepare_so_each_task_gets_a_copy(guarantee):
    for user, stateful in ((CountBolt("resolve-copy"), True), (SplitBolt("resolve-copy"), False),
                           (Upper(), False)):
        resolved = ManagedBolt(user, stateful, ["$checkpointspout"], ["words"]).resolve_bolt(conf_of(guarantee))
        assert not hasattr(resolved, "path")  # the compiled path is made at prepare
        twin = copy.deepcopy(resolved)
        assert type(twin) is type(resolved) and twin.wrapped_component is not user
        assert isinstance(twin.wrapped_component, type(user))


def test_a_managed_bolt_is_never_prepared_itself():
    managed = ManagedBolt(SplitBolt("resolve-never"), stateful=False, checkpoint_sources=[], barrier_sources=[])
    with pytest.raises(TypeError, match="managed bolt of SplitBolt is not run itself"):
        managed.prepare({}, None, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="managed bolt of SplitBolt is not run itself"):
        managed.execute(None)  # type: ignore[arg-type]


def worker(name: str, guarantee: str) -> tuple[WorkerRuntime, SimulatedClock]:
    conf = conf_of(guarantee)
    topology = system_topology(word_count_topology(name, WORDS), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    clock = SimulatedClock()
    rt = WorkerRuntime(topology_id=name, topology_name=name, topology=topology, conf=conf, layout=layout,
                       executors=executors, task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)},
                       worker_id="w", clock=clock)
    rt.prepare()
    rt.set_active(True)
    return rt, clock


def test_each_task_runs_its_own_copy_and_its_inputs_go_straight_into_the_compiled_path():
    name = "resolve-run"
    run = new_run(name)
    rt, clock = worker(name, "at_least_once")
    try:
        bolts = [b for ex in rt.executors if ex.component_id == "count" for b in ex.components().values()]
        assert len(bolts) == 2 and len({id(b) for b in bolts}) == 2
        users = [b.wrapped_component for b in bolts]
        assert all(type(u) is CountBolt for u in users) and users[0] is not users[1]
        for bolt in bolts:
            assert type(bolt) is StatefulBoltExecutor and "execute" not in vars(bolt)
            assert bolt.execute.__self__ is bolt.path  # the executor calls the compiled path, no wrapper between
        split = next(ex for ex in rt.executors if ex.component_id == "split")
        assert all(type(b) is CheckpointTupleForwarder and not isinstance(b, ResolvesToBolt)
                   for b in split.components().values())
        sink = next(ex for ex in rt.executors if ex.component_id == "sink")
        assert all(isinstance(b, RunsAsBasic) and b.basic_bolt is None for b in sink.components().values())
        assert type(next(iter(sink.components().values())).wrapped_component) is SinkBolt
        want = truth(WORDS)
        for n in range(3000):
            rt.run_once(clock.now())
            clock.advance(0.01)
            if n % 10 == 0 and committed_counts(run) == want:
                break
        assert committed_counts(run) == want
    finally:
        rt.shutdown()
