"""Topology dependencies: the wheelhouse resolved at submit, and the supervisors' cache of virtualenvs built from it."""
