"""This package owns what users of managed state extend or implement: the stateful bolt, spout and windowed bolt
base classes, and the contract of a sink that takes part in checkpoints."""
