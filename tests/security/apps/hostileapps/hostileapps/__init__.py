"""Topologies that misbehave, for the cluster's robustness tests."""
