"""Placement of executors onto worker slots (pure functions; nimbus calls them): Storm's even scheduler and its
Resource Aware Scheduler."""

from storm_py.scheduler.even import Slot, schedule_even
from storm_py.scheduler.resource_aware import Demand, Node, Plan, Resources, schedule_resource_aware

__all__ = ["Demand", "Node", "Plan", "Resources", "Slot", "schedule_even", "schedule_resource_aware"]
