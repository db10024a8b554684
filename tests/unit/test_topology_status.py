"""Topology status transitions (Storm's TopologyActions)."""

from __future__ import annotations

import pytest

from storm_py.nimbus import topology_status as ts


@pytest.mark.parametrize(
    ("status", "action", "after"),
    [
        (ts.ACTIVE, "deactivate", ts.INACTIVE),
        (ts.INACTIVE, "activate", ts.ACTIVE),
        (ts.ACTIVE, "activate", ts.ACTIVE),
        (ts.INACTIVE, "deactivate", ts.INACTIVE),
        (ts.ACTIVE, "rebalance", ts.REBALANCING),
        (ts.INACTIVE, "rebalance", ts.REBALANCING),
        (ts.REBALANCING, "activate", ts.REBALANCING),
        (ts.REBALANCING, "deactivate", ts.REBALANCING),
        (ts.ACTIVE, "kill", ts.KILLED),
        (ts.REBALANCING, "kill", ts.KILLED),
        (ts.KILLED, "kill", ts.KILLED),
    ],
)
def test_transitions(status: str, action: str, after: str) -> None:
    assert ts.apply(status, action, "t") == after


@pytest.mark.parametrize(
    ("status", "action", "message"),
    [
        (ts.KILLED, "activate", "is being killed"),
        (ts.KILLED, "rebalance", "is being killed"),
        (ts.REBALANCING, "rebalance", "already rebalancing"),
        (ts.ACTIVE, "explode", "unknown topology action"),
    ],
)
def test_refused_transitions_name_the_topology_or_action(status: str, action: str, message: str) -> None:
    with pytest.raises(ts.InvalidTransitionError, match=message):
        ts.apply(status, action, "t")


def test_only_active_topologies_run_their_spouts() -> None:
    assert [s for s in (ts.ACTIVE, ts.INACTIVE, ts.KILLED, ts.REBALANCING) if ts.spouts_active(s)] == [ts.ACTIVE]
