"""KeyValueState's two-phase commits (Storm's InMemoryKeyValueState expectations) and the provider factory."""

from __future__ import annotations

import pytest

from storm_py import KeyValueState
from storm_py.api.context import TopologyContext
from storm_py.errors import ConfigError, InvalidTopologyException, StateBackendError
from storm_py.stateful.state.key_value import MEMORY_STORES
from storm_py.stateful.state.providers import new_state, provider_config


def ctx(topology_id: str = "topo-1") -> TopologyContext:
    return TopologyContext(topology_id=topology_id, topology_name="topo", task_id=3, component_id="count",
                           task_to_component={3: "count"}, component_tasks={"count": [3]},
                           component_streams={}, worker_tasks=[3])


def test_put_get_delete_iterate_and_len():
    s = KeyValueState()
    s.put("a", 1)
    s.put(("k", 2), [1, 2])
    s.delete("missing")
    assert s.get("a") == 1 and s.get("b") is None and s.get("b", 0) == 0
    assert len(s) == 2 and sorted(map(repr, s)) == sorted(map(repr, [("a", 1), (("k", 2), [1, 2])]))
    s.delete("a")
    assert s.get("a") is None and len(s) == 1


def test_keys_may_be_anything_the_codec_carries():
    s = KeyValueState()
    s.put(["user", 7], 1)
    s.put({"k": [1, 2]}, 2)
    assert s.get(["user", 7]) == 1 and s.get({"k": [1, 2]}) == 2 and s.get(["user", 8]) is None
    s.prepare_commit(0)
    s.commit(0)
    s.delete({"k": [1, 2]})
    assert list(s) == [(["user", 7], 1)]


def test_rollback_returns_to_the_last_commit_and_commit_needs_a_prepare():
    s = KeyValueState()
    s.put("a", 1)
    s.prepare_commit(1)
    s.put("a", 2)
    s.commit(1)
    assert s.get("a") == 2 and s.committed_txid() == 1  # the current map goes on from there
    s.put("b", 3)
    s.prepare_commit(2)
    s.rollback()
    assert dict(s) == {"a": 1}
    with pytest.raises(StateBackendError, match="cannot commit txid 2: it was not prepared"):
        s.commit(2)
    s.commit(1)  # committing a committed txid again does nothing (a recovery may)


def test_a_restarted_task_finds_its_prepared_and_committed_snapshots():
    MEMORY_STORES.forget("topo-r")
    first = new_state("count-3", {}, ctx("topo-r"))
    first.put("a", 1)
    first.prepare_commit(0)
    first.commit(0)
    first.put("a", 5)
    first.prepare_commit(1)
    again = new_state("count-3", {}, ctx("topo-r"))  # the task died between prepare and commit
    assert again.get("a") == 1
    again.commit(1)
    assert dict(new_state("count-3", {}, ctx("topo-r"))) == {"a": 5}
    assert len(new_state("count-3", {}, ctx("topo-other"))) == 0  # another submission starts empty


class Provider:
    made: list[str] = []

    def new_state(self, namespace, conf, context):
        Provider.made.append(namespace)
        return KeyValueState()


class NotAState:
    def new_state(self, namespace, conf, context):
        return {}


def test_module_class_providers_and_bad_provider_settings():
    conf = {"topology.state.provider": f"{__name__}:Provider"}
    assert isinstance(new_state("count-3", conf, ctx()), KeyValueState) and Provider.made == ["count-3"]
    with pytest.raises(ConfigError, match="returned dict, not a KeyValueState"):
        new_state("count-3", {"topology.state.provider": f"{__name__}:NotAState"}, ctx())
    with pytest.raises(ConfigError, match=r"'no\.such\.module:X' cannot be loaded"):
        new_state("count-3", {"topology.state.provider": "no.such.module:X"}, ctx())
    assert provider_config({"topology.state.provider.config": '{"port": 7000}'}) == {"port": 7000}
    with pytest.raises(ConfigError, match=r"provider\.config is not valid JSON"):
        provider_config({"topology.state.provider.config": "{port"})


def test_submit_checks_name_the_provider_and_the_spout_that_cannot_be_exactly_once():
    from storm_py import TopologyBuilder
    from storm_py.stateful.wiring import check_topology
    from storm_py.testing import FeederSpout
    from tests.unit.test_stateful_executors import Counter

    builder = TopologyBuilder()
    builder.set_spout("feed", FeederSpout(["word"]))
    builder.set_bolt("count", Counter()).shuffle_grouping("feed")
    topo = builder.create_topology()
    with pytest.raises(InvalidTopologyException, match="'feed' \\(FeederSpout\\) is not a StatefulSpout"):
        check_topology(topo, {"topology.state.guarantee": "exactly_once"})
    with pytest.raises(InvalidTopologyException, match=r"needs ackers .*topology\.acker\.executors is 0"):
        check_topology(topo, {"topology.state.guarantee": "exactly_once", "topology.acker.executors": 0})
    with pytest.raises(InvalidTopologyException,
                       match="'memcache' is not 'memory', 'redis', 'checkpoint_dir' or 'module:Class'"):
        check_topology(topo, {"topology.state.provider": "memcache"})
    check_topology(topo, {})
