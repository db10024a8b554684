"""A stateful word count for the dev-cluster tests of managed state."""
