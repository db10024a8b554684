"""``build(conf)``: the events pipeline of ``examples.events_pipeline`` as the cluster runs it (conf ``events.*``)."""

from __future__ import annotations

from typing import Any

from examples import events_pipeline


def build(conf: dict[str, Any] | None = None) -> Any:
    return events_pipeline.build(conf)
