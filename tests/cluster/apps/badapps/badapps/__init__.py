"""Topology functions that are wrong in the ways users get them wrong."""
