"""Tests of the schedulers."""
