"""The supervisor: its core, the pure slot decisions, worker launchers, downloaded code, log viewer and daemon."""
