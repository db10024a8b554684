"""Acceptance: exactly-once transactional counts in the distributed cluster, through kill -9 and kill + resubmit.

The ``txcount`` wheel (``tests/cluster/apps/txcount``, bundling the repository's transactional examples) runs
storm-starter's global count and word counts on a :class:`~storm_py.transactional.SequencePartitionedSpout`
(two partitions, 50 batches of data each) over three worker processes of a dev cluster on a real ZooKeeper,
with seeded ``FailedException``s in about 10 % of the attempts at each processing and commit point.  Midway,
either the worker holding the ``sum`` committer is killed with SIGKILL (the supervisor restarts it), or the
whole topology is killed and submitted again under the same transactional id.  In the end the SQLite counts
must equal the truth exactly, every txid must have been applied once, and the commit-phase calls must have come
in txid order (a replayed commit repeats the txid it replays, never an earlier one).
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.zk import KazooStorage
from tests.cluster.conftest import zk_root_conf
from tests.cluster.harness import APPS, REPO, DevClusterProcess, alive, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(400)]

NAME = "txcount"
#: how the topology runs: new transactions every 0.2 s, so the ~50 batches take well over ten seconds
SUBMIT_CONF: dict[str, Any] = {
    "topology.workers": 3,
    "topology.max.spout.pending": 3,
    "topology.message.timeout.secs": 6,
    "txcount.interval": 0.2,
    "txcount.batches": 50,
    "txcount.fault.rate": 0.1,
}
EXACT_WITHIN = 180.0
#: what the spout's coordinator logs once every partition was emitted to its end
EXHAUSTED = "every partition was emitted to its end"


def load_app() -> ModuleType:
    """The app's module, imported in the test process (for the truth and the database's tables and logs)."""
    sys.path.insert(0, str(APPS / "txcount"))
    try:
        from txcount import topology
    finally:
        sys.path.remove(str(APPS / "txcount"))
    return topology


app = load_app()


@pytest.fixture(scope="module")
def txcount_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app with the repository's transactional examples bundled as package ``examples``."""
    out = tmp_path_factory.mktemp("txcount-wheel")
    project = out / "txcount"
    shutil.copytree(APPS / "txcount", project, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (project / "examples").mkdir()
    for name in ("__init__.py", "sqlite_state.py", "transactional_global_count.py", "transactional_words.py"):
        shutil.copy(REPO / "examples" / name, project / "examples" / name)
    return build_wheel(project, out)


class Run:
    """One test's topology: its database, conf, and what the cluster and ZooKeeper say about it."""

    def __init__(self, cluster: DevClusterProcess, wheel: Path, db: Path, tx_id: str, seed: int) -> None:
        self.cluster = cluster
        self.wheel = wheel
        self.db = str(db)
        self.tx_id = tx_id
        self.conf: dict[str, Any] = {**SUBMIT_CONF, "txcount.db": self.db, "txcount.tx.id": tx_id,
                                     "txcount.seed": seed}
        self.expected = app.expected_counts(self.conf)
        self.total = sum(self.expected.values())
        app.create_db(self.db)
        self.counts = app.global_count.GlobalCountDB(self.db, create=False)
        self.words = app.words.WordsDB(self.db, create=False)
        # the cluster's own identity: its nodes are readable by it alone
        self.storage = KazooStorage.from_conf(cluster.client_conf())
        self.state = ClusterState(self.storage, cluster.client_conf())

    def close(self) -> None:
        self.storage.close()

    def submit(self, run: int) -> None:
        args = [arg for key, value in {**self.conf, "txcount.run": run}.items() for arg in ("-c", f"{key}={value}")]
        out = self.cluster.cli("submit", str(self.wheel), "txcount.topology:build", "--name", NAME, *args)
        assert f"Finished submitting topology: {NAME}" in out.stdout

    def count(self) -> int:
        return (self.counts.read() or (0, 0))[0]

    def applied(self) -> int:
        """How many transactions were applied to the global count."""
        return len(self.counts.history())

    def exact(self) -> bool:
        return (self.count() == self.total and self.words.word_counts() == dict(self.expected)
                and self.words.bucket_counts() == app.words.expected_buckets(dict(self.expected)))

    def currtx(self) -> int:
        """The next transaction to commit, as the coordinator persisted it in ZooKeeper."""
        return int(self.state.transactional_get(self.tx_id, "coordinator", "currtx") or 1)

    def quiet(self) -> bool:
        """The coordinator saw the source exhausted (it starts nothing new) and every transaction is committed."""
        logs = (self.cluster.workdir / "logs" / "workers-artifacts").glob("*/*/worker.log")
        if not any(EXHAUSTED in log.read_text(encoding="utf-8", errors="replace") for log in logs):
            return False
        meta = self.state.transactional_children(self.tx_id, "coordinator", "meta")
        return [int(t) for t in meta] == [self.currtx() - 1]  # metadata of the last committed one only

    def worker_pids(self) -> dict[int, int]:
        """Port -> pid of the topology's workers."""
        client = self.cluster.client()
        tid = client.topology_id(NAME)
        return {int(w["port"]): self.cluster.worker_pid(tid, int(w["port"])) for w in client.topology(NAME)["workers"]}

    def component_port(self, component: str) -> int:
        """The port of the worker running ``component`` (one task), from the topology's REST API."""
        client = self.cluster.client()
        found: list[int] = []

        def located() -> bool:
            found[:] = [int(s["port"]) for s in client.component(NAME, component)["executorStats"]]
            return len(found) == 1

        wait_until(located, 30, interval=0.2, what=f"the heartbeat of {component}")
        return found[0]

    def check_final(self) -> list[tuple[int, str, int, int]]:
        """Counts exact, each txid applied once in order, commit calls in txid order; returns the calls."""
        assert self.count() == self.total
        assert self.words.word_counts() == dict(self.expected)
        assert self.words.bucket_counts() == app.words.expected_buckets(dict(self.expected))
        history = self.counts.history()
        assert [t for t, _ in history] == list(range(1, len(history) + 1)), "every txid applied once, in order"
        assert history[-1][0] == self.currtx() - 1, "the last committed transaction is the last one applied"
        calls = app.commit_calls(self.db)
        for point in ("sum.before-write", "count.before-write", "buckets.before-write"):
            txids = [t for _, p, t, _ in calls if p == point]
            assert txids == sorted(txids), f"{point}: commits out of txid order: {txids}"
            assert set(txids) == set(range(1, max(txids) + 1)), f"{point}: a txid was never committed"
        faults = app.fired(self.db)
        assert any(p.endswith(".execute") for p, _, _ in faults), "some batches failed while processing"
        assert any(p.endswith("-write") for p, _, _ in faults), "some commits failed"
        return calls


@pytest.fixture
def txcount_run(dev_cluster, txcount_wheel, zookeeper, request, tmp_path) -> Iterator[Run]:
    zk_conf = zk_root_conf(request)
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_conf)
    seed = 1 + sum(map(ord, request.node.name)) % 1000
    run = Run(cluster, txcount_wheel, tmp_path / "counts.db", f"txcount-{seed}", seed)
    yield run
    run.close()


def report(record_property: Any, run: Run, calls: list[tuple[int, str, int, int]]) -> None:
    faults = app.fired(run.db)
    commits = collections.Counter(p for _, p, _, _ in calls)
    record_property("transactions", run.applied())
    record_property("injected_failures", len(faults))
    print(f"{run.applied()} transactions committed; {len(faults)} injected failures "
          f"({sum(1 for p, _, _ in faults if p.endswith('.execute'))} while processing); commit calls {dict(commits)}")


@pytest.mark.parametrize("victim_component", ["sum", "spout/coordinator"])
def test_kill_9_of_a_worker_keeps_the_counts_exact(txcount_run: Run, victim_component: str, record_property) -> None:
    """The worker of the committer ``sum`` (or of the coordinator) dies mid-run and is restarted."""
    run = txcount_run
    run.submit(run=1)
    wait_until(lambda: run.applied() >= 12, 120, interval=0.2, what="a dozen transactions committed")
    port = run.component_port(victim_component)
    tid = run.cluster.client().topology_id(NAME)
    victim = run.cluster.worker_pid(tid, port)
    holds_sum = port == run.component_port("sum")
    if holds_sum:
        assert victim in {pid for _, p, _, pid in app.commit_calls(run.db) if p == "sum.before-write"}, \
            "the REST API's worker of the committer is where its commits ran"
    os.kill(victim, signal.SIGKILL)
    killed_at = run.applied()
    assert run.count() < run.total, "the data ended before the kill: raise txcount.batches or the interval"

    # the supervisor restarts the worker on the same slot, and records how the old one died
    wait_until(lambda: run.cluster.worker_pid(tid, port) != victim, 60, interval=0.2, what="a new worker")
    assert alive(run.cluster.worker_pid(tid, port))
    wait_until(run.exact, EXACT_WITHIN, interval=0.25, what="exact counts")
    wait_until(run.quiet, 60, interval=0.25, what="the coordinator to stop at the end of the data")
    calls = run.check_final()
    codes = (run.cluster.artifacts(tid) / str(port) / "exit-codes").read_text()
    assert f"pid={victim} " in codes and "exit=-9" in codes
    if holds_sum:
        after = [pid for _, p, t, pid in calls if p == "sum.before-write" and t > killed_at + 1]
        assert after and victim not in after, "later commits ran in the restarted worker"
    report(record_property, run, calls)
    run.cluster.cli("kill", NAME, "-w", "0")


def test_kill_and_resubmit_continues_at_the_next_txid_with_exact_counts(txcount_run: Run, record_property) -> None:
    run = txcount_run
    run.submit(run=1)
    wait_until(lambda: run.applied() >= 15, 120, interval=0.2, what="fifteen transactions committed")
    workers = run.worker_pids()
    assert "Killed topology: txcount" in run.cluster.cli("kill", NAME, "-w", "0").stdout
    wait_until(lambda: "No topologies running." in run.cluster.cli("list").stdout, 60, interval=0.25,
               what="the topology to be gone")
    wait_until(lambda: not any(alive(pid) for pid in workers.values()), 60, interval=0.2,
               what="its workers to exit")
    at_kill = run.currtx()
    last_applied = run.counts.history()[-1][0]
    assert last_applied in (at_kill - 1, at_kill), "the last commit may have been written but not acknowledged"
    assert run.count() < run.total, "the data ended before the kill: raise txcount.batches or the interval"
    calls_before = len(app.commit_calls(run.db))

    run.submit(run=2)
    wait_until(run.exact, EXACT_WITHIN, interval=0.25, what="exact counts")
    wait_until(run.quiet, 60, interval=0.25, what="the coordinator to stop at the end of the data")
    calls = run.check_final()
    resumed = [t for r, p, t, _ in calls[calls_before:] if p == "sum.before-write"]
    assert all(r == 2 for r, _, _, _ in calls[calls_before:])
    assert resumed[0] == at_kill, f"the resubmitted topology starts at txid {resumed[0]}, not {at_kill}"
    report(record_property, run, calls)
    run.cluster.cli("kill", NAME, "-w", "0")
