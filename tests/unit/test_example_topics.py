"""Every example that reads or writes Kafka has topics of its own: examples run one after the other against one
broker (as the README runs them) never read each other's records."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def example_topics(source: str) -> dict[str, str]:
    """The module-level ``*TOPIC = "name"`` constants a module defines (not those it imports)."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.endswith("TOPIC"):
                    out[target.id] = node.value.value
    return out


def test_no_two_examples_share_a_topic():
    owners: dict[str, list[str]] = {}
    for path in sorted((REPO / "examples").glob("*.py")):
        for name, topic in example_topics(path.read_text(encoding="utf-8")).items():
            owners.setdefault(topic, []).append(f"{path.stem}.{name}")
    found = {owner for names in owners.values() for owner in names}
    assert {"kafka_word_count.INPUT_TOPIC", "kafka_word_count.OUTPUT_TOPIC", "kafka_exactly_once_counts.TOPIC",
            "events_pipeline.TOPIC"} <= found, found
    shared = {topic: names for topic, names in owners.items() if len(names) > 1}
    assert not shared, f"topics used by more than one example: {shared}"

