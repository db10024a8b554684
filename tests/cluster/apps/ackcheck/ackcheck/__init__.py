"""A test topology for at-least-once under failures (packaged as a wheel by the cluster tests)."""
