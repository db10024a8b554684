"""The StateStorage contract, run against the in-memory twin and a real ZooKeeper (``backend`` fixture)."""

from __future__ import annotations

import threading

import pytest

from storm_py.clock import wait_until
from storm_py.cluster_state.storage import LeaderElection, StateStorage
from storm_py.errors import StateError

from .conftest import WAIT, Backend, Recorder, barrier

# ------------------------------------------------------------------------------------------------ data


def test_get_set_exists(backend: Backend) -> None:
    s = backend.session()
    assert s.get("/a") is None
    assert not s.exists("/a")
    s.set("/a/b/c", b"one")  # parents are created
    assert s.get("/a/b/c") == b"one"
    assert s.exists("/a") and s.exists("/a/b")
    assert s.get("/a") == b""
    s.set("/a/b/c", b"two")
    assert s.get("/a/b/c") == b"two"
    s.set("/empty", b"")
    assert s.get("/empty") == b""
    s.set("/bin", bytes(range(256)))
    assert s.get("/bin") == bytes(range(256))


def test_set_if_parent_never_creates_the_parent(backend: Backend) -> None:
    s = backend.session()
    assert not s.set_if_parent("/gone/child", b"x")
    assert not s.exists("/gone")
    s.set("/here", b"")
    assert s.set_if_parent("/here/child", b"one")
    assert s.set_if_parent("/here/child", b"two")
    assert s.get("/here/child") == b"two"
    s.delete("/here")
    assert not s.set_if_parent("/here/child", b"three")
    assert not s.exists("/here")


def test_sessions_share_the_tree(backend: Backend) -> None:
    a, b = backend.session(), backend.session()
    a.set("/shared", b"x")
    assert b.get("/shared") == b"x"
    b.delete("/shared")
    assert not a.exists("/shared")


def test_create(backend: Backend) -> None:
    s = backend.session()
    assert s.create("/p/q", b"d") == "/p/q"
    assert s.get("/p/q") == b"d"
    with pytest.raises(StateError) as info:
        s.create("/p/q", b"again")
    assert info.value.fields["reason"] == "node_exists"
    assert info.value.fields["path"] == "/p/q"
    assert s.get("/p/q") == b"d"


def test_sequential_names(backend: Backend) -> None:
    s = backend.session()
    first = s.create("/seq/n-", b"1", sequential=True)
    second = s.create("/seq/n-", b"2", sequential=True)
    assert first.startswith("/seq/n-") and second.startswith("/seq/n-")
    suffix1, suffix2 = first.removeprefix("/seq/n-"), second.removeprefix("/seq/n-")
    assert len(suffix1) == len(suffix2) == 10 and suffix1.isdigit() and suffix2.isdigit()
    assert int(suffix2) > int(suffix1)
    assert s.children("/seq") == sorted([first.rpartition("/")[2], second.rpartition("/")[2]])
    assert s.get(second) == b"2"


def test_children_sorted_and_absent(backend: Backend) -> None:
    s = backend.session()
    for name in ["c", "a", "b"]:
        s.set(f"/kids/{name}", b"")
    s.set("/kids/a/grandchild", b"")
    assert s.children("/kids") == ["a", "b", "c"]
    assert s.children("/nowhere") == []
    assert s.children("/kids/b") == []


def test_delete_is_recursive_and_tolerant(backend: Backend) -> None:
    s = backend.session()
    s.set("/d/x/y/z", b"")
    s.set("/d/w", b"")
    s.set("/dd", b"sibling with a common prefix")
    s.delete("/d/x")
    assert s.children("/d") == ["w"]
    s.delete("/d")
    assert not s.exists("/d")
    assert s.exists("/dd")
    s.delete("/d")  # absent: no error
    s.delete("/never/there")


def test_invalid_paths(backend: Backend) -> None:
    s = backend.session()
    for bad in ["relative", "/a//b", "/a/./b", "/a/../b", ""]:
        with pytest.raises(StateError):
            s.set(bad, b"")


def test_closed_session_refuses_work(backend: Backend) -> None:
    s = backend.session()
    s.close()
    s.close()  # idempotent
    assert s.connection_state() == "lost"
    with pytest.raises(StateError) as info:
        s.get("/x")
    assert info.value.fields["reason"] == "closed"


def test_concurrent_sequential_creates_are_unique(backend: Backend) -> None:
    s = backend.session()
    created: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(10):
            path = s.create("/race/n-", b"", sequential=True)
            with lock:
                created.append(path)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert len(created) == len(set(created)) == 40
    assert len(s.children("/race")) == 40


# ------------------------------------------------------------------------------------------ ephemeral


def test_ephemeral_nodes_vanish_with_their_session(backend: Backend) -> None:
    a, b = backend.session(), backend.session()
    a.create("/eph/node", b"alive", ephemeral=True)
    a.set("/eph/persistent", b"stays")
    assert b.get("/eph/node") == b"alive"
    a.close()
    wait_until(lambda: not b.exists("/eph/node"), WAIT, what="the ephemeral node to vanish")
    assert b.get("/eph/persistent") == b"stays"


def test_ephemeral_nodes_cannot_have_children(backend: Backend) -> None:
    s = backend.session()
    s.create("/eph", b"", ephemeral=True)
    with pytest.raises(StateError) as info:
        s.create("/eph/child", b"")
    assert info.value.fields["reason"] == "ephemeral_parent"


def test_set_keeps_an_own_ephemeral_node_ephemeral(backend: Backend) -> None:
    a, b = backend.session(), backend.session()
    a.create("/reg", b"v1", ephemeral=True)
    a.set("/reg", b"v2")
    assert b.get("/reg") == b"v2"
    a.close()
    wait_until(lambda: not b.exists("/reg"), WAIT, what="the ephemeral node to vanish")


def test_set_recreates_an_own_ephemeral_node_as_ephemeral(backend: Backend) -> None:
    owner, other = backend.session(), backend.session()
    owner.create("/mine", b"v1", ephemeral=True)
    other.delete("/mine")  # someone removes it behind the owner's back
    owner.set("/mine", b"v2")  # the owner's next write puts it back, still ephemeral
    assert other.get("/mine") == b"v2"
    owner.close()
    wait_until(lambda: not other.exists("/mine"), WAIT, what="the ephemeral node to vanish")


def test_set_ephemeral_creates_updates_and_replaces(backend: Backend) -> None:
    old, new, observer = backend.session(), backend.session(), backend.session()
    old.set_ephemeral("/sup/s1", b"old incarnation")
    assert observer.get("/sup/s1") == b"old incarnation"
    new.set_ephemeral("/sup/s1", b"new incarnation")  # takes the node over
    new.set_ephemeral("/sup/s1", b"heartbeat")
    old.close()  # the old session's end must not take the new node along
    barrier(observer, observer)
    assert observer.get("/sup/s1") == b"heartbeat"
    new.close()
    wait_until(lambda: not observer.exists("/sup/s1"), WAIT, what="the ephemeral node to vanish")


def test_session_expiry_drops_and_restores_ephemeral_nodes(backend: Backend) -> None:
    owner, observer = backend.session(), backend.session()
    states = Recorder()
    owner.add_connection_listener(states)
    owner.create("/live/plain", b"v1", ephemeral=True)
    owner.set("/live/plain", b"v2")  # the latest data is what comes back
    owner.set_ephemeral("/live/registered", b"r1")
    sequential = owner.create("/live/seq-", b"", ephemeral=True, sequential=True)
    changes = Recorder()
    observer.watch_data(sequential, changes)

    backend.expire(owner)

    changes.wait_count(1, "the sequential node's deletion")
    states.wait_for(lambda calls: "lost" in calls and calls[-1] == "connected", "lost, then connected")
    wait_until(
        lambda: observer.get("/live/plain") == b"v2" and observer.get("/live/registered") == b"r1",
        WAIT,
        what="the ephemeral nodes to be re-created",
    )
    assert not observer.exists(sequential)  # sequential ephemeral nodes are not re-created
    assert owner.connection_state() == "connected"
    # Re-created nodes belong to the new session.
    owner.close()
    wait_until(lambda: not observer.exists("/live/plain"), WAIT, what="the re-created node to vanish")


def test_delete_forgets_an_ephemeral_node(backend: Backend) -> None:
    owner, observer = backend.session(), backend.session()
    owner.create("/gone", b"", ephemeral=True)
    owner.delete("/gone")
    backend.expire(owner)
    wait_until(lambda: owner.connection_state() == "connected", WAIT, what="a new session")
    owner.set("/after-expiry", b"")  # the session is usable again
    barrier(owner, observer)
    assert not observer.exists("/gone")


# --------------------------------------------------------------------------------------------- watches


def test_data_watch_fires_on_create_change_and_delete(backend: Backend) -> None:
    writer, watcher = backend.session(), backend.session()
    calls = Recorder()
    watch = watcher.watch_data("/w/node", calls)
    assert watch.path == "/w/node"
    writer.set("/w/node", b"1")
    calls.wait_count(1, "creation")
    writer.set("/w/node", b"2")
    calls.wait_count(2, "change")
    writer.delete("/w/node")
    calls.wait_count(3, "deletion")
    writer.set("/w/node", b"3")
    calls.wait_count(4, "re-creation")
    assert set(calls.calls) == {"/w/node"}


def test_watch_not_called_for_the_state_it_found(backend: Backend) -> None:
    writer, watcher = backend.session(), backend.session()
    writer.set("/found/node", b"present")
    calls = Recorder()
    watcher.watch_data("/found/node", calls)
    watcher.watch_children("/found", calls)
    barrier(writer, watcher)
    assert calls.calls == []


def test_children_watch_fires_on_membership_not_data(backend: Backend) -> None:
    writer, watcher = backend.session(), backend.session()
    writer.set("/members/a", b"")
    calls = Recorder()
    watcher.watch_children("/members", calls)
    writer.set("/members/b", b"")
    calls.wait_count(1, "a child added")
    writer.set("/members/a", b"new data")  # not a membership change
    writer.set("/members/a/deeper", b"")  # a grandchild: not a membership change of /members
    barrier(writer, watcher)
    assert len(calls) == 1
    writer.delete("/members/b")
    calls.wait_count(2, "a child removed")


def test_children_watch_on_absent_parent(backend: Backend) -> None:
    writer, watcher = backend.session(), backend.session()
    calls = Recorder()
    watcher.watch_children("/later", calls)
    writer.set("/later/child", b"")  # creates the parent and a child
    calls.wait_for(lambda c: bool(c), "the first child")
    seen = len(calls)
    writer.set("/later/second", b"")
    calls.wait_count(seen + 1, "the second child")


def test_children_watch_sees_an_ephemeral_child_vanish(backend: Backend) -> None:
    member, watcher = backend.session(), backend.session()
    member.create("/group/m1", b"", ephemeral=True)
    calls = Recorder()
    watcher.watch_children("/group", calls)
    member.close()
    calls.wait_count(1, "the member's departure")
    assert watcher.children("/group") == []


def test_cancelled_watch_stays_silent(backend: Backend) -> None:
    writer, watcher = backend.session(), backend.session()
    calls = Recorder()
    watch = watcher.watch_data("/quiet", calls)
    writer.set("/quiet", b"1")
    calls.wait_count(1)
    watch.cancel()
    watch.cancel()  # idempotent
    writer.set("/quiet", b"2")
    writer.delete("/quiet")
    barrier(writer, watcher)
    assert len(calls) == 1


def test_watches_survive_session_expiry(backend: Backend) -> None:
    writer, watcher = backend.session(), backend.session()
    writer.set("/sturdy/node", b"1")
    data_calls, child_calls, states = Recorder(), Recorder(), Recorder()
    watcher.watch_data("/sturdy/node", data_calls)
    watcher.watch_children("/sturdy", child_calls)
    watcher.add_connection_listener(states)
    backend.expire(watcher)
    states.wait_for(lambda calls: calls[-1:] == ["connected"], "the new session")
    writer.set("/sturdy/node", b"2")
    writer.set("/sturdy/other", b"")
    data_calls.wait_count(1, "data change after expiry")
    child_calls.wait_count(1, "child change after expiry")


def test_callbacks_run_on_the_storage_thread(backend: Backend) -> None:
    s = backend.session()
    threads: list[threading.Thread] = []
    s.watch_data("/t", lambda _path: threads.append(threading.current_thread()))
    s.set("/t", b"")
    wait_until(lambda: bool(threads), WAIT, what="the callback")
    assert threads[0] is not threading.current_thread()


def test_a_failing_callback_does_not_break_the_session(backend: Backend) -> None:
    s = backend.session()

    def boom(_path: str) -> None:
        raise RuntimeError("callback bug")

    s.watch_data("/boom", boom)
    calls = Recorder()
    s.watch_data("/boom", calls)
    s.set("/boom", b"1")
    s.set("/boom", b"2")
    calls.wait_for(lambda c: len(c) >= 1, "the second watch despite the first one failing")
    s.set("/after", b"ok")
    assert s.get("/after") == b"ok"


# -------------------------------------------------------------------------------------------- election


def _leader_of(*candidates: LeaderElection) -> list[str]:
    return [c.identifier for c in candidates if c.is_leader()]


def test_election_has_one_leader_and_fails_over_on_cancel(backend: Backend) -> None:
    a, b = backend.session(), backend.session()
    first = a.elect("/election", "nimbus-a:6627")
    second = b.elect("/election", "nimbus-b:6627")
    wait_until(lambda: _leader_of(first, second) == ["nimbus-a:6627"], WAIT, what="a to lead")
    assert first.leader_id() == second.leader_id() == "nimbus-a:6627"
    changes = Recorder()
    second.add_listener(changes)
    first.cancel()
    first.cancel()  # idempotent
    wait_until(lambda: _leader_of(first, second) == ["nimbus-b:6627"], WAIT, what="b to take over")
    changes.wait_for(lambda c: c == [True], "b's leadership listener")
    assert second.leader_id() == "nimbus-b:6627"
    assert isinstance(first, LeaderElection)


def test_election_fails_over_when_the_leader_dies(backend: Backend) -> None:
    a, b = backend.session(), backend.session()
    first = a.elect("/election", "a")
    second = b.elect("/election", "b")
    wait_until(lambda: first.is_leader(), WAIT, what="a to lead")
    assert not second.is_leader()
    a.close()
    wait_until(lambda: second.is_leader(), WAIT, what="b to take over after a's session ended")
    assert not first.is_leader()
    assert second.leader_id() == "b"


def test_election_reentered_after_session_expiry(backend: Backend) -> None:
    a, b = backend.session(), backend.session()
    first = a.elect("/election", "a")
    wait_until(lambda: first.is_leader(), WAIT, what="a to lead")
    second = b.elect("/election", "b")
    backend.expire(a)
    wait_until(lambda: second.is_leader(), WAIT, what="b to lead after a's session expired")
    # a is back in the race behind b, with exactly one candidate node.
    wait_until(lambda: len(b.children("/election")) == 2, WAIT, what="a to re-enter")
    assert not first.is_leader()
    b.close()
    wait_until(lambda: first.is_leader(), WAIT, what="a to lead again")
    assert first.leader_id() == "a"


def test_leader_id_without_candidates(backend: Backend) -> None:
    s = backend.session()
    election = s.elect("/lonely", "me")
    wait_until(election.is_leader, WAIT, what="the only candidate to lead")
    election.cancel()
    assert election.leader_id() is None
    assert not election.is_leader()


def test_storage_satisfies_the_protocol(backend: Backend) -> None:
    assert isinstance(backend.session(), StateStorage)
