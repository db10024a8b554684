"""This module owns the settings nimbus records per component at submit: the window and state keys that apply.

A windowed bolt's window keys (and its message id field), and the topology's ``topology.state.*`` keys on the
checkpoint spout of a topology with state; the UI shows them (``componentSettings``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_py.api.topology import StormTopology
from storm_py.config.keys import KEYS
from storm_py.runtime.key_groups import STATE_KIND
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID
from storm_py.stateful.windowed_runner import MESSAGE_ID_FIELD
from storm_py.windowing.spec import WINDOW_KEYS

#: the per-component keys shown as a component's window and state settings
SHOWN_COMPONENT_KEYS = (*WINDOW_KEYS, MESSAGE_ID_FIELD, STATE_KIND)


def component_settings(topology: StormTopology, topology_conf: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each component's window and state keys where they apply: a windowed bolt's window keys (and its message
    id field), and the topology's ``topology.state.*`` keys on the checkpoint spout of a topology with state."""
    out: dict[str, dict[str, Any]] = {}
    for cid, spec in sorted(topology.components().items()):
        own = {k: spec.conf[k] for k in SHOWN_COMPONENT_KEYS if spec.conf.get(k) is not None}
        if cid == CHECKPOINT_COMPONENT_ID:
            own.update({k: topology_conf.get(k, KEYS[k].default) for k in sorted(KEYS)
                        if k.startswith("topology.state.") and topology_conf.get(k, KEYS[k].default) is not None})
        if own:
            out[cid] = own
    return out
