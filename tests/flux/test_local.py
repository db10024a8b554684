"""Storm's Flux files run unchanged in a LocalCluster: the word count, the multilang topology (a Node.js spout and
a Python bolt through FluxShellSpout/FluxShellBolt) and a windowed bolt configured with Storm's ``$Count``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.flux import build, load, parse_file

pytestmark = pytest.mark.timeout(120)


def _component(summary: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(c for c in summary["spouts"] + summary["bolts"] if (c.get("spoutId") or c.get("boltId")) == cid)


def _run_until(path: Path, done: Any, what: str, properties_file: Path | None = None) -> dict[str, Any]:
    t = build(load(path, properties_file))
    with LocalCluster(supervisors=1) as cluster:
        cluster.submit_topology(t.name, t.conf, t.topology)
        summary: dict[str, Any] = {}

        def check() -> bool:
            nonlocal summary
            summary = cluster.get_topology_summary(t.name)
            return bool(done(summary))

        wait_until(check, 60, interval=0.25, what=what)
        cluster.kill_topology(t.name, 0)
    return summary


def test_simple_wordcount_counts_words_locally(configs: Path) -> None:
    summary = _run_until(configs / "simple_wordcount.yaml",
                         lambda s: int(_component(s, "bolt-2").get("executed", 0)) >= 10, "10 counts logged")
    assert int(_component(summary, "bolt-1").get("executed", 0)) >= 10
    assert not any(c.get("lastError") for c in summary["spouts"] + summary["bolts"])


def test_multilang_runs_node_and_python_shell_components(configs: Path) -> None:
    summary = _run_until(configs / "multilang.yaml",
                         lambda s: int(_component(s, "count").get("executed", 0)) >= 10
                         and int(_component(s, "sentence-spout").get("acked", 0)) >= 2,
                         "sentences split, counted and acked")
    assert not any(c.get("lastError") for c in summary["spouts"] + summary["bolts"])


def test_substituted_topology_runs_under_its_substituted_name(configs: Path) -> None:
    summary = _run_until(configs / "substitution-test.yaml",
                         lambda s: int(_component(s, "count").get("executed", 0)) >= 5, "words counted",
                         configs / "test.properties")
    assert summary["name"] == "substitution-topology"


def test_a_windowed_bolt_takes_storms_count_windows(write) -> None:
    path = write("windowing.yaml", '''
        name: "sliding-window-topology"
        components:
          - id: "windowLength"
            className: "org.apache.storm.topology.base.BaseWindowedBolt$Count"
            constructorArgs: [5]
          - id: "slidingInterval"
            className: "org.apache.storm.topology.base.BaseWindowedBolt$Count"
            constructorArgs: [3]
        spouts:
          - id: "spout-1"
            className: "org.apache.storm.testing.TestWordSpout"
        bolts:
          - id: "bolt-1"
            className: "tests.flux.components:WindowCount"
            configMethods:
              - name: "withWindow"
                args: [ref: "windowLength", ref: "slidingInterval"]
          - id: "bolt-2"
            className: "org.apache.storm.flux.wrappers.bolts.LogInfoBolt"
        streams:
          - from: "spout-1"
            to: "bolt-1"
            grouping: {type: FIELDS, args: ["word"]}
          - from: "bolt-1"
            to: "bolt-2"
            grouping: {type: SHUFFLE}
        ''')
    t = build(parse_file(path))
    assert t.context.get_bolt("bolt-1").get_component_configuration()["topology.bolts.window.length.count"] == 5
    summary = _run_until(path, lambda s: int(_component(s, "bolt-2").get("executed", 0)) >= 2, "two windows")
    assert not any(c.get("lastError") for c in summary["spouts"] + summary["bolts"])
