"""One worker's execution: the system topology, groupers, acker, executors and the worker loop."""
