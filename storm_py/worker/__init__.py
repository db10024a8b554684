"""The worker: one slot of one topology (its core) and the worker process around it."""
