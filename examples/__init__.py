"""Example topologies (ports of storm-starter's)."""
