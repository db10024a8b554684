"""What the shipped monitoring files use: the metric names in the Grafana dashboard's and the alert rules' queries."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "storm-py.json"
RULES = REPO / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = REPO / "deploy" / "prometheus" / "alerts.test.yml"
SCRAPE_CONFIG = REPO / "deploy" / "prometheus" / "prometheus.yml"
_NAME = re.compile(r"\bstorm_[a-z_]+\b")


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def panels() -> list[dict[str, Any]]:
    """The dashboard's panels that show data (rows left out)."""
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def queries() -> list[str]:
    """Every PromQL expression of the dashboard (panels and variables) and of the alert rules."""
    exprs = [t["expr"] for p in panels() for t in p["targets"]]
    exprs += [v["query"] for v in dashboard()["templating"]["list"] if v["type"] == "query"]
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    exprs += [r["expr"] for g in rules["groups"] for r in g["rules"]]
    return exprs


def metric_names() -> set[str]:
    return {name for expr in queries() for name in _NAME.findall(expr)}


def scraped_names(text: str) -> set[str]:
    """Metric names with at least one sample in a ``/metrics`` scrape."""
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
