"""The runtime's extension points are declared Protocols (storm_py/runtime/contracts.py): no attribute probes in
the runtime, the worker or managed state, and the components that extend the runtime are recognised by them."""

from __future__ import annotations

import ast
from typing import Any

from storm_py import TopologyBuilder
from storm_py.api.components import Bolt, OutputFieldsDeclarer, Spout
from storm_py.api.tuple import Tuple
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.multilang.bolt import ShellBolt
from storm_py.runtime.contracts import (
    BackgroundWork,
    BoundedInbox,
    Configured,
    ReplacesWrapped,
    ResolvesToBolt,
    RunsAsBasic,
    Wrapper,
    own_configuration,
)
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.transfer.in_process import InProcessTransfer
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.stateful.at_least_once.bolt_wrappers import CheckpointTupleForwarder
from storm_py.stateful.managed_bolt import ManagedBolt
from storm_py.worker.core import stack_owners
from tests.unit.sources import parsed_sources

#: the packages that may not probe a component, executor or transport for an attribute by name
NO_PROBES = ("storm_py/runtime/", "storm_py/worker/", "storm_py/stateful/")

#: ``(path, attribute)`` of the probes allowed there, each with why a Protocol cannot say it (at most 10)
ALLOWED_PROBES: dict[tuple[str, str], str] = {}


def probes(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, attribute)`` of every ``getattr(obj, name, default)`` and ``hasattr(obj, name)`` in ``tree``; a
    computed name is ``"?"``.  (``getattr(obj, name)`` without a default is a plain read, as in a delegating
    ``__getattr__``.)"""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        fn = node.func.id
        if (fn == "getattr" and len(node.args) == 3) or (fn == "hasattr" and len(node.args) == 2):
            name = node.args[1]
            found.append((node.lineno, name.value if isinstance(name, ast.Constant) else "?"))
    return found


def test_the_probe_finder_finds_getattr_with_a_default_and_hasattr_but_not_a_plain_read():
    tree = ast.parse("a = getattr(x, 'wake', None)\nb = hasattr(y, 'room')\nc = getattr(z, name)\n"
                     "d = callable(getattr(w, n, None))\n")
    assert sorted(probes(tree)) == [(1, "wake"), (2, "room"), (4, "?")]


def test_the_runtime_the_worker_and_managed_state_probe_no_attribute_by_name():
    assert len(ALLOWED_PROBES) <= 10
    assert all(reason.strip() for reason in ALLOWED_PROBES.values())
    found = {(path, name): line for path, _, tree in parsed_sources() if path.startswith(NO_PROBES)
             for line, name in probes(tree)}
    unexpected = [f"{path}:{line} probes {name!r}" for (path, name), line in sorted(found.items())
                  if (path, name) not in ALLOWED_PROBES]
    assert not unexpected, "declare a Protocol in storm_py/runtime/contracts.py instead: " + "; ".join(unexpected)
    stale = [key for key in ALLOWED_PROBES if key not in found]
    assert not stale, f"allowed probes that are gone (drop them from the list): {stale}"


def test_a_shell_bolt_declares_background_work_and_a_bounded_inbox():
    bolt = ShellBolt("python3", "-c", "pass")
    assert isinstance(bolt, BackgroundWork)
    assert isinstance(bolt, BoundedInbox)


class _Plain:
    """A duck-typed component: none of the contracts."""

    def execute(self, tup: Any) -> None:
        pass


def test_managed_state_wrappers_declare_what_they_run():
    user = _Plain()
    managed = ManagedBolt(user, stateful=False, checkpoint_sources=["$checkpoint"], barrier_sources=[])
    assert isinstance(managed, Wrapper) and managed.wrapped_component is user
    assert isinstance(managed, ResolvesToBolt) and not isinstance(managed, RunsAsBasic)
    forwarder = managed.resolve_bolt({"topology.state.guarantee": "at_least_once"})
    assert isinstance(forwarder, CheckpointTupleForwarder) and forwarder.wrapped_component is user
    assert isinstance(forwarder, RunsAsBasic) and forwarder.basic_bolt is None  # until prepared
    assert isinstance(forwarder, ReplacesWrapped) and not isinstance(forwarder, ResolvesToBolt)
    assert not isinstance(user, (RunsAsBasic, Wrapper, BackgroundWork, BoundedInbox, Configured, ResolvesToBolt))


def test_a_wrapper_passes_on_its_users_own_configuration_and_none_for_a_component_without_one():
    class Configuring(_Plain):
        def get_component_configuration(self) -> dict[str, Any] | None:
            return {"topology.tick.tuple.freq.secs": 5}

    assert own_configuration(_Plain()) is None
    managed = ManagedBolt(Configuring(), stateful=False, checkpoint_sources=[], barrier_sources=[])
    assert managed.get_component_configuration() == {"topology.tick.tuple.freq.secs": 5}
    forwarder = CheckpointTupleForwarder(Configuring(), [])
    assert forwarder.get_component_configuration() == {"topology.tick.tuple.freq.secs": 5}


def test_the_in_process_transfer_reports_no_counters():
    assert InProcessTransfer().metrics() == {}


class _Numbers(Spout):
    """Emits 0, 1, ... ``n - 1``, unanchored."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.sent = 0

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        if self.sent < self.n:
            self.collector.emit([self.sent])
            self.sent += 1

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["n"])


class _Background(Bolt):
    """Declares background work and a bounded inbox: takes ``capacity`` inputs in all, counts its background
    steps, and keeps the wake-up it was handed."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.executed: list[int] = []
        self.steps = 0
        self.wake: Any = None

    def bind_wake(self, wake: Any) -> None:
        self.wake = wake

    def background_step(self, now: float) -> bool:
        self.steps += 1
        return False

    def room(self) -> int:
        return self.capacity - len(self.executed)

    def execute(self, tup: Tuple) -> None:
        self.executed.append(tup.values[0])


def test_the_bolt_executor_binds_the_wake_up_steps_background_work_and_keeps_inputs_beyond_the_room():
    builder = TopologyBuilder()
    builder.set_spout("numbers", _Numbers(10))
    builder.set_bolt("shell", _Background(capacity=3)).shuffle_grouping("numbers")
    conf = defaults()
    conf.update({"topology.acker.executors": 0, "topology.workers": 1})
    topology = system_topology(builder.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    clock = SimulatedClock()
    rt = WorkerRuntime(topology_id="bg", topology_name="bg", topology=topology, conf=conf, layout=layout,
                       executors=executors, task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)},
                       worker_id="w", clock=clock)
    rt.prepare()
    rt.set_active(True)
    ex = next(ex for ex in rt.executors if ex.component_id == "shell")
    (bolt,) = ex.components().values()
    assert isinstance(bolt, _Background)

    rt.wake.clear()
    bolt.wake()  # the bolt's outside work wakes the worker loop
    assert rt.wake.is_set()

    for _ in range(50):
        rt.run_once(clock.now())
        clock.advance(0.01)
    assert bolt.steps >= 50  # every pass steps the background work
    assert bolt.executed == [0, 1, 2]  # no more than its room
    assert sum(len(batch) for _, batch in ex.inbox) == 7  # the rest waits in the executor's inbox
    bolt.capacity = 10
    rt.run_once(clock.now())
    assert bolt.executed == list(range(10))
    rt.shutdown()


def test_a_stuck_loop_is_traced_to_the_component_through_each_executors_components():
    builder = TopologyBuilder()
    builder.set_spout("numbers", _Numbers(1), 2)
    builder.set_bolt("shell", _Background(capacity=1)).shuffle_grouping("numbers")
    conf = defaults()
    conf.update({"topology.acker.executors": 1, "topology.workers": 1})
    topology = system_topology(builder.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    rt = WorkerRuntime(topology_id="st", topology_name="st", topology=topology, conf=conf, layout=layout,
                       executors=executors, task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)},
                       worker_id="w", clock=SimulatedClock())
    rt.prepare()
    owners = stack_owners(rt.executors)
    for ex in rt.executors:
        assert owners[id(ex)] == ex.component_id
    spouts = [obj for ex in rt.executors if ex.component_id == "numbers" for obj in ex.components().values()]
    bolts = [obj for ex in rt.executors if ex.component_id == "shell" for obj in ex.components().values()]
    assert len(spouts) == 2 and len(bolts) == 1
    assert [owners[id(obj)] for obj in spouts + bolts] == ["numbers", "numbers", "shell"]
    rt.shutdown()
