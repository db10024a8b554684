"""Nimbus: the scheduling core, its monitor of dead slots, topology status, blob store, REST API and daemon."""
