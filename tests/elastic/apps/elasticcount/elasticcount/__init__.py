"""A Kafka-fed stateful word count whose components have more tasks than executors (to rebalance)."""
