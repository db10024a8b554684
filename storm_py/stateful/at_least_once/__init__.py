"""This package owns ``topology.state.guarantee: at_least_once`` (Storm's checkpoint protocol): the protocol's pure
core, the checkpoint spout that drives it, the bolts that wrap a user bolt (stateful executor, checkpoint forwarder)
and their per-tuple path."""
