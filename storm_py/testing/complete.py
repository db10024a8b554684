"""complete_topology: run a topology with fixed inputs until every spout tuple is done; return what was emitted."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from storm_py.api.topology import DIRECT, GLOBAL, ComponentSpec, Grouping, StormTopology, fill_component
from storm_py.api.tuple import DEFAULT_STREAM, Fields
from storm_py.clock import SYSTEM_CLOCK, Deadline
from storm_py.errors import WaitTimeoutError
from storm_py.testing.components import CaptureBolt, CaptureStore, FixedTupleSpout

if TYPE_CHECKING:
    from storm_py.local import LocalCluster

Results = dict[str, list[tuple[str, list[Any]]]]


def capture_topology(topology: StormTopology) -> tuple[StormTopology, CaptureStore]:
    """A copy of ``topology`` with a bolt that records every tuple of every stream."""
    store = CaptureStore()
    spouts = {k: _copy_spec(v) for k, v in topology.spouts.items()}
    bolts = {k: _copy_spec(v) for k, v in topology.bolts.items()}
    capture = ComponentSpec(f"capture-{uuid.uuid4().hex[:12]}", CaptureBolt(store), 1, False)
    for cid, spec in {**spouts, **bolts}.items():
        for stream, (_, direct) in spec.streams.items():
            capture.inputs[(cid, stream)] = Grouping(DIRECT) if direct else Grouping(GLOBAL, Fields())
    fill_component(capture)
    bolts[capture.id] = capture
    return StormTopology(spouts, bolts, list(topology.worker_hooks)), store


def _copy_spec(spec: ComponentSpec) -> ComponentSpec:
    return ComponentSpec(
        spec.id, spec.obj, spec.parallelism, spec.is_spout, dict(spec.inputs), dict(spec.conf), dict(spec.streams),
        dict(spec.columnar),
    )


def complete_topology(
    cluster: LocalCluster,
    topology: StormTopology,
    mocked_sources: Mapping[str, list[Any]] | None = None,
    storm_conf: Mapping[str, Any] | None = None,
    cleanup_state: bool = True,
    topology_name: str | None = None,
    timeout_secs: float = 60,
) -> Results:
    """Run ``topology`` until every spout is exhausted; return ``{component: [(stream, values), ...]}``.

    As Storm's ``Testing.completeTopology``: spouts named in ``mocked_sources`` are replaced by fixed-tuple
    spouts emitting the given values; every other spout must be completable (``is_exhausted()``; optional
    ``startup()`` is called before the submit and ``clean()`` after the run).  Once every spout is exhausted
    the topology is killed without a wait, and the call returns only after the cluster has removed it (its
    assignment, heartbeats, errors and code), so the same name can be submitted again at once.  With
    ``cleanup_state`` (the default) the spouts' ``clean()`` drops their shared state and the captured tuples
    are handed over and forgotten; without it the spouts keep their state for the test to inspect.
    """
    captured, store = capture_topology(topology)
    for sid, values in (mocked_sources or {}).items():
        if sid not in captured.spouts:
            raise ValueError(f"mocked source {sid!r} is not a spout of the topology")
        captured.spouts[sid].obj = FixedTupleSpout(values)
    spouts = [spec.obj for spec in captured.spouts.values()]
    for sid, spec in captured.spouts.items():
        if not hasattr(spec.obj, "is_exhausted"):
            raise ValueError(f"cannot complete topology: spout {sid!r} is not completable (no is_exhausted())")
    for spout in spouts:
        if hasattr(spout, "startup"):
            spout.startup()
    name = topology_name or f"topologytest-{uuid.uuid4().hex[:12]}"
    # as Storm's test kit: tuples between workers go through the codec and frames, as on a cluster
    conf = {"topology.testing.always.try.serialize": True, **dict(storm_conf or {})}
    cluster.submit_topology(name, conf, captured)
    topology_id = cluster.get_topology_id(name)
    simulated = cluster.simulated
    if simulated:
        cluster.advance_cluster_time(11)
    deadline = Deadline(timeout_secs)
    while not all(s.is_exhausted() for s in spouts):
        if deadline.expired():
            cluster.kill_topology(name, 0)
            raise WaitTimeoutError(f"topology {name} did not complete within {timeout_secs}s", topology=name)
        if simulated:
            cluster.advance_cluster_time(10)
        else:
            SYSTEM_CLOCK.sleep(0.005)
    cluster.wait_idle(max(1.0, deadline.remaining()))
    cluster.kill_topology(name, 0)
    _wait_removed(cluster, name, topology_id, deadline)
    if cleanup_state:
        for spout in spouts:
            if hasattr(spout, "clean"):
                spout.clean()
    return store.take()


def _wait_removed(cluster: LocalCluster, name: str, topology_id: str | None, deadline: Deadline) -> None:
    """Wait until nimbus has removed the killed topology (Storm waits for its assignment to disappear)."""
    while cluster.get_topology_id(name) is not None or (
        topology_id is not None and cluster.state.assignment(topology_id) is not None
    ):
        if deadline.expired():
            raise WaitTimeoutError(f"killed topology {name} was not removed in time", topology=name)
        if cluster.simulated:
            cluster.advance_cluster_time(1)
        else:
            SYSTEM_CLOCK.sleep(0.005)


def read_tuples(results: Results, component_id: str, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
    """The values ``component_id`` emitted on ``stream``, in the order captured."""
    return [values for s, values in results.get(component_id, []) if s == stream]
