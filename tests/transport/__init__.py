"""Tests of storm_py.protocol and storm_py.transport."""
