"""Acceptance: the events pipeline on a dev cluster, with seeded failures and kill -9 of the sink's worker.

The ``eventspipe`` wheel (the repository's events pipeline example) runs over three worker processes on a real
ZooKeeper with the deterministic source; about 10 % of the attempts fail at each processing and commit point.
Midway the worker holding the ``events`` sink is killed with SIGKILL and restarted by its supervisor.  In the
end the Spark daily report over the committed dataset must equal the report computed in Python over the
source events, every event must be in exactly one of the events and errors datasets, and the errors carry
their reasons.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from examples import events_pipeline as pipeline
from examples.daily_report import expected_report, report, report_rows
from storm_py.clock import wait_until
from storm_py.spark import committed_txids, read_committed, read_committed_table, read_output, run_step
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401 (the cluster tests' fixture)
from tests.cluster.harness import REPO, alive, build_wheel

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper,
              pytest.mark.timeout(420)]

APP = Path(__file__).parent / "apps" / "eventspipe"
NAME = "eventspipe"


@pytest.fixture(scope="module")
def eventspipe_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eventspipe-wheel")
    project = out / "eventspipe"
    shutil.copytree(APP, project, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (project / "examples").mkdir()
    for name in ("__init__.py", "events_pipeline.py"):
        shutil.copy(REPO / "examples" / name, project / "examples" / name)
    return build_wheel(project, out)


def component_port(cluster: Any, component: str) -> int:
    client = cluster.client()
    found: list[int] = []

    def located() -> bool:
        found[:] = [int(s["port"]) for s in client.component(NAME, component)["executorStats"]]
        return len(found) == 1

    wait_until(located, 60, interval=0.2, what=f"the heartbeat of {component}")
    return found[0]


def test_kill_9_of_the_sink_worker_with_failures_in_both_phases_keeps_the_report_exact(
        eventspipe_wheel, zookeeper, request, tmp_path, spark):
    cluster = request.getfixturevalue("dev_cluster")(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    root = tmp_path / "data"
    fault_log = tmp_path / "faults.log"
    conf: dict[str, Any] = {
        "events.root": str(root), "events.seed": 5, "events.partitions": 2, "events.take": 10,
        "events.batches": 40, "events.interval": 0.2, "events.fault.rate": 0.1, "events.fault.log": str(fault_log),
        "topology.workers": 3, "topology.max.spout.pending": 3, "topology.message.timeout.secs": 6,
    }
    args = [arg for key, value in conf.items() for arg in ("-c", f"{key}={value}")]
    out = cluster.cli("submit", str(eventspipe_wheel), "eventspipe.topology:build", "--name", NAME, *args)
    assert f"Finished submitting topology: {NAME}" in out.stdout
    events = str(root / "events")
    total = len(pipeline.source_rows(conf))

    wait_until(lambda: len(committed_txids(events)) >= 8, 180, interval=0.2, what="eight txids committed")
    port = component_port(cluster, "events")
    tid = cluster.client().topology_id(NAME)
    victim = cluster.worker_pid(tid, port)
    os.kill(victim, signal.SIGKILL)
    assert pipeline.landed(str(root)) < total, "the data ended before the kill: raise events.batches"
    wait_until(lambda: cluster.worker_pid(tid, port) != victim, 60, interval=0.2, what="a new worker")
    assert alive(cluster.worker_pid(tid, port))

    wait_until(lambda: pipeline.complete(str(root), total), 240, interval=0.5, what="every event committed")
    cluster.cli("kill", NAME, "-w", "0")

    good, bad = pipeline.truth(conf)
    run_step(spark, report, events, str(tmp_path / "report"))
    assert report_rows(read_output(spark, str(tmp_path / "report"))) == expected_report(good)
    keys = [(r.partition, r.offset) for r in read_committed(spark, events).select("partition", "offset").collect()]
    assert sorted(keys) == sorted((g["partition"], g["offset"]) for g in good), "each good event exactly once"
    errors = read_committed_table(str(root / "errors")).to_pylist()
    assert sorted((e["partition"], e["offset"]) for e in errors) == sorted((b[0], b[1]) for b in bad)
    assert all(e["reason"] for e in errors)

    fired = pipeline.read_fault_log(str(fault_log))
    points = {p for p, _ in fired}
    assert points & {"enrich.execute", "sink.execute"}, f"no failure while processing: {points}"
    assert points & {"sink.before-publish", "sink.before-latest", "sink.after-commit"}, \
        f"no failure while committing: {points}"
    print(f"{len(committed_txids(events))} txids committed, {len(fired)} injected failures, worker {victim} killed")
