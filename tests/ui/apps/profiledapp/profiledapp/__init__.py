"""Test topology for the profiling browser test."""
