"""The window and state keys a topology's page shows per component: a windowed bolt's window keys and message id
field, a stateful component's kind of state, the topology's state keys on the checkpoint spout; kept in the storm
base."""

from __future__ import annotations

from storm_py import Count, TopologyBuilder
from storm_py.cluster_state.models import StormBase
from storm_py.nimbus.component_settings import component_settings
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID
from tests.unit.test_stateful_windowed import WindowSum, _Spout


def test_windowed_bolts_show_their_window_keys_and_the_checkpoint_spout_the_state_keys():
    builder = TopologyBuilder()
    builder.set_spout("numbers", _Spout())
    builder.set_bolt("sum", WindowSum().with_tumbling_window(Count.of(3)).with_message_id_field("id")) \
        .shuffle_grouping("numbers")
    settings = component_settings(builder.create_topology(), {"topology.state.guarantee": "exactly_once"})
    assert settings["sum"] == {
        "topology.bolts.window.length.count": 3,
        "topology.bolts.sliding.interval.count": 3,
        "topology.bolts.message.id.field.name": "id",
        "topology.state.kind": "window",  # its state is kept per task: it cannot be rescaled by key group
    }
    state = settings[CHECKPOINT_COMPONENT_ID]
    assert state["topology.state.guarantee"] == "exactly_once"
    assert state["topology.state.provider"] == "memory" and state["topology.state.checkpoint.interval.ms"] == 1000
    assert "numbers" not in settings  # nothing applies to it


def test_a_topology_without_windows_or_state_shows_nothing_and_the_settings_survive_the_storm_base():
    builder = TopologyBuilder()
    builder.set_spout("numbers", _Spout())
    assert component_settings(builder.create_topology(), {}) == {}
    base = StormBase(name="t", status="active", launch_time=1.0, num_workers=1,
                     component_settings={"sum": {"topology.bolts.window.length.count": 3}})
    assert StormBase.from_json(base.to_json()).component_settings == base.component_settings
    assert StormBase.from_json({k: v for k, v in base.to_json().items() if k != "component_settings"}) \
        .component_settings == {}
