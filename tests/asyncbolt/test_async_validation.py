"""Bad async bolts are refused before anything of their topology runs: an ``execute`` that is not a coroutine
function (at ``set_bolt``, and at submit for a topology put together without the builder's check), and invalid
async settings (naming the key and the component)."""

from __future__ import annotations

import pytest

from storm_py import AsyncBolt, InvalidTopologyException, LocalCluster, TopologyBuilder
from storm_py.nimbus.validation import checked_system_topology
from tests.asyncbolt.components import NumberSpout, SinkBolt


class PlainExecute(AsyncBolt):
    def execute(self, tup):  # type: ignore[override]  (the mistake under test)
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(["i", "answer"])


class GeneratorExecute(AsyncBolt):
    async def execute(self, tup):  # type: ignore[override]  (an async generator: the mistake under test)
        yield tup

    def declare_output_fields(self, declarer):
        declarer.declare(["i", "answer"])


class Good(AsyncBolt):
    async def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(["i", "answer"])


@pytest.mark.parametrize(("bolt", "kind"), [(PlainExecute(), "not a coroutine function"),
                                            (GeneratorExecute(), "an async generator")])
def test_set_bolt_refuses_an_execute_that_is_not_a_coroutine_function(bolt, kind):
    builder = TopologyBuilder()
    with pytest.raises(InvalidTopologyException, match="'enrich'") as err:
        builder.set_bolt("enrich", bolt)
    assert "execute" in str(err.value) and kind in str(err.value)
    assert err.value.fields["component"] == "enrich"


def topology_with(bolt: AsyncBolt, conf: dict | None = None):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout("validation", 3))
    declarer = builder.set_bolt("enrich", Good()).shuffle_grouping("numbers")
    declarer.add_configurations(conf or {})
    builder.set_bolt("sink", SinkBolt("validation")).shuffle_grouping("enrich")
    topo = builder.create_topology()
    topo.bolts["enrich"].obj = bolt  # as a topology put together by hand would hold it
    return topo


def test_submit_refuses_a_non_coroutine_execute_and_runs_nothing():
    with LocalCluster() as cluster:
        with pytest.raises(InvalidTopologyException, match=r"'enrich'.*execute"):
            cluster.submit_topology("bad-exec", {}, topology_with(PlainExecute()))
        assert cluster.get_topology_id("bad-exec") is None


@pytest.mark.parametrize(("key", "value"), [
    ("topology.async.max.in.flight", 0),
    ("topology.async.execute.timeout.secs", -1),
    ("topology.async.output.mode", "sorted"),
])
def test_an_invalid_component_setting_is_refused_at_submit_naming_key_and_component(key, value):
    topo = topology_with(Good(), {key: value})
    with LocalCluster() as cluster:
        with pytest.raises(InvalidTopologyException, match=key.replace(".", r"\.")) as err:
            cluster.submit_topology("bad-setting", {}, topo)
        assert "'enrich'" in str(err.value)
        assert cluster.get_topology_id("bad-setting") is None


def test_an_invalid_topology_setting_is_refused_at_submit_naming_key_and_component():
    with pytest.raises(InvalidTopologyException, match=r"topology\.async\.max\.in\.flight.*'enrich'"):
        checked_system_topology(topology_with(Good()), {"topology.async.max.in.flight": -3})
