"""Test topology for the metrics and UI acceptance tests."""
