"""ClusterState, the typed facade, over the in-memory twin and a real ZooKeeper (``backend`` fixture)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from storm_py.clock import wait_until
from storm_py.cluster_state import znodes
from storm_py.cluster_state.cluster_state import MAX_ERRORS_PER_COMPONENT, ClusterState
from storm_py.cluster_state.models import (
    Assignment,
    ErrorInfo,
    NimbusInfo,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
)
from storm_py.errors import StateError

from .conftest import WAIT, Backend, Recorder

CONF = {"storm.zookeeper.root": "/storm", "transactional.zookeeper.root": "/transactional"}


@pytest.fixture
def open_state(backend: Backend) -> Callable[[], ClusterState]:
    """Opens ClusterStates on one tree, each with its own session (closed by the backend fixture)."""
    return lambda: ClusterState(backend.session(), CONF)


def _base(name: str = "wordcount", status: str = "active") -> StormBase:
    return StormBase(
        name=name,
        status=status,  # type: ignore[arg-type]
        launch_time=1_700_000_000.5,
        num_workers=2,
        component_executors={"spout": 1, "split": 4},
        owner="alice",
        topology_conf={"topology.workers": 2, "topology.debug": False},
        topology_action_options={"action": "kill", "delay_secs": 30},
    )


def _assignment() -> Assignment:
    return Assignment(
        node_host={"sup-1": "host-a", "sup-2": "host-b"},
        executor_node_port={(1, 1): ("sup-1", 6700), (2, 3): ("sup-1", 6700), (4, 5): ("sup-2", 6701)},
        executor_start_time_secs={(1, 1): 10.0, (2, 3): 10.0, (4, 5): 12.5},
    )


def test_storm_bases(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    assert state.storm_base("t-1") is None
    assert state.active_topology_ids() == []
    state.set_storm_base("t-1", _base())
    state.set_storm_base("t-2", _base("other", "inactive"))
    assert state.storm_base("t-1") == _base()
    assert state.active_topology_ids() == ["t-1", "t-2"]
    assert state.storm_bases()["t-2"].status == "inactive"
    state.set_storm_base("t-1", _base(status="killed"))
    base = state.storm_base("t-1")
    assert base is not None and base.status == "killed"
    state.remove_storm_base("t-1")
    assert state.active_topology_ids() == ["t-2"]


def test_storm_base_watches(open_state: Callable[[], ClusterState]) -> None:
    writer, reader = open_state(), open_state()
    listing, one = Recorder(), Recorder()
    reader.watch_storm_bases(lambda: listing("changed"))
    reader.watch_storm_base("t-1", lambda: one("changed"))
    writer.set_storm_base("t-1", _base())
    listing.wait_count(1, "the new topology")
    one.wait_count(1, "the new storm base")
    writer.set_storm_base("t-1", _base(status="inactive"))
    one.wait_count(2, "the changed storm base")


def test_assignments(open_state: Callable[[], ClusterState]) -> None:
    writer, supervisor = open_state(), open_state()
    listing, content = Recorder(), Recorder()
    supervisor.watch_assignments(lambda: listing("changed"))
    supervisor.watch_assignment("t-1", lambda: content("changed"))
    writer.set_assignment("t-1", _assignment())
    listing.wait_count(1, "the new assignment")
    content.wait_count(1, "the assignment's creation")
    assignment = supervisor.assignment("t-1")
    assert assignment == _assignment()
    assert assignment is not None
    assert assignment.slots_on("sup-1") == {6700: [(1, 1), (2, 3)]}
    assert assignment.slots() == {("sup-1", 6700): [(1, 1), (2, 3)], ("sup-2", 6701): [(4, 5)]}
    assert supervisor.assignment_ids() == ["t-1"]
    assert supervisor.assignments() == {"t-1": _assignment()}
    writer.set_assignment("t-1", Assignment(node_host={"sup-1": "host-a"}))
    content.wait_count(2, "the rebalanced assignment")
    writer.remove_assignment("t-1")
    listing.wait_count(2, "the removed assignment")
    assert supervisor.assignment("t-1") is None


def test_supervisor_registration_is_ephemeral(open_state: Callable[[], ClusterState]) -> None:
    supervisor, nimbus = open_state(), open_state()
    joins = Recorder()
    nimbus.watch_supervisors(lambda: joins("changed"))
    info = SupervisorInfo(
        hostname="host-a", time_secs=100.0, ports=[6700, 6701], used_ports=[6700], version="0.1"
    )
    supervisor.set_supervisor_info("sup-1", info)
    joins.wait_count(1, "the registration")
    assert nimbus.supervisor_ids() == ["sup-1"]
    heartbeat = SupervisorInfo(hostname="host-a", time_secs=105.0, uptime_secs=5.0, ports=[6700, 6701])
    supervisor.set_supervisor_info("sup-1", heartbeat)
    assert nimbus.supervisor_info("sup-1") == heartbeat
    assert nimbus.supervisors() == {"sup-1": heartbeat}
    supervisor.close()
    joins.wait_count(2, "the supervisor's departure")
    wait_until(lambda: nimbus.supervisor_ids() == [], WAIT, what="the registration to vanish")
    assert nimbus.supervisor_info("sup-1") is None


def test_registrations_come_back_after_session_expiry(backend: Backend) -> None:
    supervisor, nimbus = ClusterState(backend.session(), CONF), ClusterState(backend.session(), CONF)
    supervisor.set_supervisor_info("sup-1", SupervisorInfo(hostname="h", time_secs=1.0))
    supervisor.set_supervisor_info("sup-1", SupervisorInfo(hostname="h", time_secs=2.0))
    supervisor.register_nimbus(NimbusInfo(host="h", port=6627))
    backend.expire(supervisor.storage)
    wait_until(
        lambda: (
            nimbus.supervisors() == {"sup-1": SupervisorInfo(hostname="h", time_secs=2.0)}
            and [n.id for n in nimbus.nimbuses()] == ["h:6627"]
        ),
        WAIT,
        what="the registrations to be restored",
    )


def test_worker_heartbeats(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    beat = WorkerHeartbeat(
        topology_id="t-1", executors=[(1, 1), (2, 3)], time_secs=50.0, uptime_secs=3.0, stats={"emitted": 10}
    )
    state.set_worker_heartbeat("t-1", "sup-1", 6700, beat)
    state.set_worker_heartbeat("t-1", "sup-2", 6701, WorkerHeartbeat("t-1", [(4, 5)], 51.0))
    state.set_worker_heartbeat("t-2", "sup-1", 6701, WorkerHeartbeat("t-2", [(1, 1)], 52.0))
    assert state.worker_heartbeat("t-1", "sup-1", 6700) == beat
    assert state.worker_heartbeat("t-1", "sup-9", 6700) is None
    beats = state.worker_heartbeats("t-1")
    assert sorted(beats) == [("sup-1", 6700), ("sup-2", 6701)]
    assert beats[("sup-1", 6700)].executors == [(1, 1), (2, 3)]
    assert state.heartbeat_topology_ids() == ["t-1", "t-2"]
    state.remove_worker_heartbeat("t-1", "sup-1", 6700)
    assert list(state.worker_heartbeats("t-1")) == [("sup-2", 6701)]
    state.remove_worker_heartbeats("t-1")
    assert state.worker_heartbeats("t-1") == {}
    assert state.heartbeat_topology_ids() == ["t-2"]


def test_errors_keep_the_last_ten_newest_first(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    for i in range(MAX_ERRORS_PER_COMPONENT + 5):
        state.report_error("t-1", "split", f"boom {i}", "host-a", 6700, 1000.0 + i)
    errors = state.errors("t-1", "split")
    assert [e.error for e in errors] == [f"boom {i}" for i in range(14, 4, -1)]
    assert errors[0] == ErrorInfo(error="boom 14", time_secs=1014.0, host="host-a", port=6700)
    assert state.last_error("t-1", "split") == errors[0]
    assert state.errors("t-1", "count") == []
    assert state.last_error("t-1", "count") is None


def test_topology_errors_by_component(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    state.report_error("t-1", "split", "a", "h", 1, 1.0)
    state.report_error("t-1", "odd/name with spaces", "b", "h", 1, 2.0)
    state.report_error("t-2", "split", "c", "h", 1, 3.0)
    by_component = state.topology_errors("t-1")
    assert sorted(by_component) == ["odd/name with spaces", "split"]
    assert by_component["odd/name with spaces"][0].error == "b"
    assert state.error_topology_ids() == ["t-1", "t-2"]
    state.remove_errors("t-1")
    assert state.topology_errors("t-1") == {}
    assert state.error_topology_ids() == ["t-2"]


def test_nimbus_registration_and_leadership(open_state: Callable[[], ClusterState]) -> None:
    first, second, ui = open_state(), open_state(), open_state()
    a = NimbusInfo(host="host-a", port=6627, version="0.1", start_time=5.0)
    b = NimbusInfo(host="host-b", port=6627, version="0.1", start_time=6.0)
    first.register_nimbus(a)
    second.register_nimbus(b)
    assert ui.nimbuses() == [a, b]
    assert ui.nimbus_leader() is None
    leader_changes = Recorder()
    ui.watch_nimbus_leader(lambda: leader_changes("changed"))
    election_a = first.nimbus_election(a.id)
    wait_until(election_a.is_leader, WAIT, what="nimbus a to lead")
    election_b = second.nimbus_election(b.id)
    assert ui.nimbus_leader() == "host-a:6627"
    assert not election_b.is_leader()
    first.close()  # the leader dies
    wait_until(election_b.is_leader, WAIT, what="nimbus b to take over")
    assert ui.nimbus_leader() == "host-b:6627"
    wait_until(lambda: ui.nimbuses() == [b], WAIT, what="nimbus a's registration to vanish")
    wait_until(lambda: len(leader_changes) >= 2, WAIT, what="two leader-change notifications")
    second.unregister_nimbus("host-b", 6627)
    assert ui.nimbuses() == []


def test_blob_key_registry(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    state.register_blob_holder("t-1-stormcode.whl", "host-a:6627", 1)
    state.register_blob_holder("t-1-stormcode.whl", "host-b:6627", 1)
    state.register_blob_holder("dir/with/slashes", "host-a:6627", 3)
    assert state.blob_keys() == ["dir/with/slashes", "t-1-stormcode.whl"]
    assert state.blob_holders("t-1-stormcode.whl") == {"host-a:6627": 1, "host-b:6627": 1}
    state.register_blob_holder("t-1-stormcode.whl", "host-a:6627", 2)
    state.remove_blob_holder("t-1-stormcode.whl", "host-b:6627")
    assert state.blob_holders("t-1-stormcode.whl") == {"host-a:6627": 2}
    state.remove_blob("t-1-stormcode.whl")
    assert state.blob_keys() == ["dir/with/slashes"]
    assert state.blob_holders("t-1-stormcode.whl") == {}


def test_transactional_state(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    assert state.transactional_get("tx", "coordinator", "currtx") is None
    state.transactional_set("tx", "coordinator", "currtx", value=7)
    state.transactional_set("tx", "coordinator", "meta", "7", value={"offset": 42, "partitions": [0, 1]})
    state.transactional_set("tx", "user", "0", "7", value=[1, "two", None])
    assert state.transactional_get("tx", "coordinator", "currtx") == 7
    assert state.transactional_get("tx", "coordinator", "meta", "7") == {"offset": 42, "partitions": [0, 1]}
    assert state.transactional_children("tx", "coordinator") == ["currtx", "meta"]
    assert state.transactional_children("tx", "user", "0") == ["7"]
    state.transactional_delete("tx", "coordinator", "meta", "7")
    assert state.transactional_children("tx", "coordinator", "meta") == []
    assert state.storage.get(znodes.tx_user("/transactional", "tx", 0, 7)) == b'[1,"two",null]'
    state.transactional_delete("tx")
    assert state.transactional_children("tx") == []


def test_remove_topology_cleans_up_everything(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    for topology_id in ("t-1", "t-2"):
        state.set_storm_base(topology_id, _base())
        state.set_assignment(topology_id, _assignment())
        state.set_worker_heartbeat(topology_id, "sup-1", 6700, WorkerHeartbeat(topology_id, [(1, 1)], 1.0))
        state.report_error(topology_id, "split", "boom", "h", 6700, 1.0)
    state.remove_topology("t-1")
    assert state.storm_base("t-1") is None
    assert state.assignment("t-1") is None
    assert state.worker_heartbeats("t-1") == {}
    assert state.topology_errors("t-1") == {}
    assert state.active_topology_ids() == ["t-2"]
    assert state.assignment_ids() == ["t-2"]
    assert state.heartbeat_topology_ids() == ["t-2"]
    assert state.error_topology_ids() == ["t-2"]
    state.remove_topology("t-1")  # idempotent


def test_roots_come_from_the_conf(backend: Backend) -> None:
    state = ClusterState(
        backend.session(), {"storm.zookeeper.root": "/apps/storm", "transactional.zookeeper.root": "/apps/tx"}
    )
    state.set_assignment("t-1", _assignment())
    state.transactional_set("tx", "x", value=1)
    assert state.storage.children("/apps") == ["storm", "tx"]
    assert state.storage.exists(znodes.assignment("/apps/storm", "t-1"))
    assert state.storage.exists(znodes.transactional("/apps/tx", "tx", "x"))


def test_values_are_utf8_json(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    state.report_error("t-1", "split", "ünïcödé ✓", "h", 1, 1.0)
    assert state.errors("t-1", "split")[0].error == "ünïcödé ✓"
    state.set_storm_base("t-1", _base())
    raw = state.storage.get(znodes.storm("/storm", "t-1"))
    assert raw is not None and raw.startswith(b"{") and b'"name":"wordcount"' in raw


def test_malformed_records_raise_state_errors_naming_the_node(open_state: Callable[[], ClusterState]) -> None:
    state = open_state()
    path = znodes.assignment("/storm", "t-bad")
    state.storage.set(path, b"not json")
    with pytest.raises(StateError) as info:
        state.assignment("t-bad")
    assert info.value.fields["path"] == path
    assert isinstance(info.value.__cause__, ValueError)
    state.storage.set(znodes.storm("/storm", "t-bad"), b'{"name": "x"}')
    with pytest.raises(StateError) as info:
        state.storm_base("t-bad")
    assert isinstance(info.value.__cause__, KeyError)
    state.storage.set(znodes.storm("/storm", "t-bad"), b'{"name": "x", "status": "dancing", "launch_time": 1,'
                      b' "num_workers": 1}')  # fmt: skip
    with pytest.raises(StateError):
        state.storm_base("t-bad")
