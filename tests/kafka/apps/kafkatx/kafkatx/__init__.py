"""Test topologies reading Kafka: exactly-once per-key counts into SQLite, at-least-once checks."""
