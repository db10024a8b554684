"""Topology status transitions (Storm's TopologyActions)."""

from __future__ import annotations

import pytest

from storm_py.cluster_state.models import ACTIVE, INACTIVE, KILLED, REBALANCING, spouts_active
from storm_py.nimbus import topology_status as ts


@pytest.mark.parametrize(
    ("status", "action", "after"),
    [
        (ACTIVE, "deactivate", INACTIVE),
        (INACTIVE, "activate", ACTIVE),
        (ACTIVE, "activate", ACTIVE),
        (INACTIVE, "deactivate", INACTIVE),
        (ACTIVE, "rebalance", REBALANCING),
        (INACTIVE, "rebalance", REBALANCING),
        (REBALANCING, "activate", REBALANCING),
        (REBALANCING, "deactivate", REBALANCING),
        (ACTIVE, "kill", KILLED),
        (REBALANCING, "kill", KILLED),
        (KILLED, "kill", KILLED),
    ],
)
def test_transitions(status: str, action: str, after: str) -> None:
    assert ts.apply(status, action, "t") == after


@pytest.mark.parametrize(
    ("status", "action", "message"),
    [
        (KILLED, "activate", "is being killed"),
        (KILLED, "rebalance", "is being killed"),
        (REBALANCING, "rebalance", "already rebalancing"),
        (ACTIVE, "explode", "unknown topology action"),
    ],
)
def test_refused_transitions_name_the_topology_or_action(status: str, action: str, message: str) -> None:
    with pytest.raises(ts.InvalidTransitionError, match=message):
        ts.apply(status, action, "t")


def test_only_active_topologies_run_their_spouts() -> None:
    assert [s for s in (ACTIVE, INACTIVE, KILLED, REBALANCING) if spouts_active(s)] == [ACTIVE]
