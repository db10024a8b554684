"""Topology status transitions (Storm's ``TopologyActions``): a pure table of what each action does."""

from __future__ import annotations

from storm_py.cluster_state.models import ACTIVE, INACTIVE, KILLED, REBALANCING
from storm_py.errors import StormPyError


class InvalidTransitionError(StormPyError):
    """An action that the topology's current status does not allow (e.g. activating a killed topology)."""

    code = "invalid_transition"


def apply(status: str, action: str, name: str = "") -> str:
    """The status after ``action`` (activate, deactivate, kill, rebalance) from ``status``."""
    if action == "kill":
        return KILLED
    if status == KILLED:
        raise InvalidTransitionError(f"topology {name!r} is being killed; cannot {action} it", topology=name)
    if action == "activate":
        return ACTIVE if status in (ACTIVE, INACTIVE) else status
    if action == "deactivate":
        return INACTIVE if status in (ACTIVE, INACTIVE) else status
    if action == "rebalance":
        if status == REBALANCING:
            raise InvalidTransitionError(f"topology {name!r} is already rebalancing", topology=name)
        return REBALANCING
    raise InvalidTransitionError(f"unknown topology action {action!r}", action=action)


def wanted_workers(num_workers: int, executors: int) -> int:
    """How many workers the even scheduler gives a topology when slots are plenty: ``topology.workers``, but
    never more than its executors (nor fewer than one)."""
    return max(1, min(num_workers, executors))


def scheduler_info(assigned: int, wanted: int) -> str:
    """Storm UI's ``schedulerInfo``: "" when fully scheduled, else why not.

    Storm schedules what fits: a topology asking for more workers than there are free slots runs on the free
    ones (and on none while no slot is free), its status unchanged; this says so instead of leaving it silent.
    """
    if assigned >= wanted:
        return ""
    if assigned == 0:
        return f"not running: no free slot for any of its {wanted} workers (waiting for slots)"
    return f"running on {assigned} of {wanted} workers: not enough free slots"
