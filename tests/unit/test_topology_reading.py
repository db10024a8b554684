"""Nimbus's core returns data (a ``TopologyReading``), the UI shapes the topology page from it."""

from __future__ import annotations

import grimp

from storm_py.cluster_state.models import Assignment, ErrorInfo, StormBase
from storm_py.metrics.reports import TopologyReading
from storm_py.metrics.windows import ALL_TIME, StatsBook
from storm_py.ui import api_views


def _reading(assignment: Assignment | None) -> TopologyReading:
    base = StormBase(
        name="words", status="active", launch_time=100.0, num_workers=2,
        component_executors={"spout": 1, "count": 2}, component_tasks={"spout": 1, "count": 4},
        spout_ids=["spout"], topology_conf={"topology.workers": 2},
    )
    errors = {"count": [ErrorInfo("boom", 130.0, "h1", 6700), ErrorInfo("older", 120.0, "h1", 6700)]}
    return TopologyReading("words-1-100", base, assignment, errors, [], StatsBook(), 160.0, 2, "one slot free")


def test_the_topology_page_is_shaped_from_what_nimbus_read() -> None:
    assignment = Assignment(executor_node_port={(1, 1): ("n1", 6700), (2, 3): ("n1", 6700), (4, 4): ("n2", 6701)})
    reading = _reading(assignment)
    assert reading.workers == 2
    page = api_views.topology_summary(reading, "600")
    assert (page["id"], page["name"], page["status"], page["window"]) == ("words-1-100", "words", "ACTIVE", "600")
    assert page["uptimeSeconds"] == 60
    assert (page["tasksTotal"], page["executorsTotal"], page["workersTotal"]) == (5, 3, 2)
    assert (page["requestedWorkers"], page["schedulerInfo"]) == (2, "one slot free")
    assert page["assignment"] == {"1-1": ["n1", 6700], "2-3": ["n1", 6700], "4-4": ["n2", 6701]}
    assert [s["spoutId"] for s in page["spouts"]] == ["spout"]
    (bolt,) = page["bolts"]
    assert bolt["boltId"] == "count" and bolt["lastError"] == "boom"
    assert [e["error"] for e in bolt["errors"]] == ["boom", "older"]
    assert [row["window"] for row in page["topologyStats"]][-1] == ALL_TIME
    assert page["lastCheckpoint"] is None


def test_a_topology_not_yet_assigned_has_no_workers() -> None:
    page = api_views.topology_summary(_reading(None))
    assert page["workersTotal"] == 0 and page["assignment"] == {} and page["window"] == ALL_TIME


def test_nimbus_core_imports_nothing_of_the_ui() -> None:
    graph = grimp.build_graph("storm_py", exclude_type_checking_imports=False, cache_dir=None)
    shaped = sorted(m for m in graph.find_modules_directly_imported_by("storm_py.nimbus.core")
                    if m == "storm_py.ui" or m.startswith("storm_py.ui."))
    assert not shaped, f"nimbus's core returns data; the UI shapes it, yet the core imports {shaped}"
