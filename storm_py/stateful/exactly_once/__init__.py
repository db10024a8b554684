"""This package owns ``topology.state.guarantee: exactly_once`` (aligned barriers): the coordinator's pure core, the
aligned bolt with its barrier alignment and per-tuple path, and a stateful spout's per-call path."""
