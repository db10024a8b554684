"""Placement of executors onto worker slots (pure functions; nimbus calls them)."""

from storm_py.scheduler.even import Slot, schedule_even

__all__ = ["Slot", "schedule_even"]
