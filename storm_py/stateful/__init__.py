"""Managed state (Storm 2.x stateful bolts and checkpoints): :class:`KeyValueState`, :class:`BaseStatefulBolt`,
:class:`BaseStatefulWindowedBolt`, the state providers and the checkpoint spout and stream the builder wires
through a topology with stateful bolts.
"""

from __future__ import annotations

from storm_py.api.topology import register_topology_rewrite
from storm_py.stateful.api.bolt import BaseStatefulBolt
from storm_py.stateful.api.spout import StatefulSpout
from storm_py.stateful.api.windowed_bolt import BaseStatefulWindowedBolt
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID, CHECKPOINT_STREAM_ID
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.stateful.state.providers import StateProvider
from storm_py.stateful.wiring import with_checkpoints

register_topology_rewrite(with_checkpoints)

__all__ = [
    "CHECKPOINT_COMPONENT_ID",
    "CHECKPOINT_STREAM_ID",
    "BaseStatefulBolt",
    "BaseStatefulWindowedBolt",
    "KeyValueState",
    "StateProvider",
    "StatefulSpout",
]
