"""Multilang word count for the dev-cluster test."""
