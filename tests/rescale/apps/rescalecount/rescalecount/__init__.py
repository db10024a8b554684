"""A stateful word count fed by Kafka whose count bolt is rescaled while it runs."""
