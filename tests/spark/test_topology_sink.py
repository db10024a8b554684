"""The sink in a LocalCluster: an opaque spout's replay of the last committed txid replaces it; no thread is left."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.errors import FailedException
from storm_py.spark import ParquetBatchSink, committed_txids, read_committed, read_committed_table
from storm_py.spark.jobs import JobOutput
from storm_py.transactional import OpaqueMemoryTransactionalSpout, TransactionalTopologyBuilder
from storm_py.transactional.attempt import TransactionAttempt

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = {"partition": "int64", "offset": "int64", "word": "string"}
N = 12  # records per partition


class ReplayAfterCommit:
    """Fails txid 2 once after its commit landed (before the coordinator records it) and, for the replay,
    stops partition 1 of the opaque spout: the replayed txid 2 holds other records than the first attempt."""

    def __init__(self, spout: OpaqueMemoryTransactionalSpout) -> None:
        self.spout = spout
        self.lock = threading.Lock()
        self.fired: list[int] = []
        self.replayed: list[int] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> ReplayAfterCommit:
        return self  # shared by every copy of the sink in the process

    def __call__(self, point: str, attempt: TransactionAttempt) -> None:
        if point != "sink.after-commit" or attempt.transaction_id != 2:
            return
        with self.lock:
            if not self.fired:
                self.fired.append(attempt.attempt_id)
                self.spout.set_disabled(1, True)
                raise FailedException("txid 2 committed, then the batch failed")
            if attempt.attempt_id not in self.fired:
                self.replayed.append(attempt.attempt_id)
                self.spout.set_disabled(1, False)


def spark_job_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("spark-job")]


def test_an_opaque_replay_of_the_last_txid_replaces_it_and_the_attached_job_stops_with_the_topology(tmp_path, spark):
    root = str(tmp_path / "data")
    data: dict[int, list[Any]] = {p: [[p, o, f"w{p}-{o}"] for o in range(N)] for p in (0, 1)}
    spout = OpaqueMemoryTransactionalSpout(data, list(SCHEMA), 3)
    hook = ReplayAfterCommit(spout)
    builder = TransactionalTopologyBuilder("opaque-sink", "spout", spout, 2)
    sink = ParquetBatchSink(root, SCHEMA, fault_hook=hook, job="tests.spark.sample_jobs:offsets",
                            job_output=str(tmp_path / "out"), job_every_txids=1)
    builder.set_committer_bolt("sink", sink, 1).shuffle_grouping("spout")
    assert not spark_job_threads()
    with LocalCluster() as cluster:
        cluster.submit_topology("opaque-sink", {"topology.max.spout.pending": 1,
                                                "topology.message.timeout.secs": 5}, builder.build_topology())
        wait_until(spout.is_exhausted, 120, interval=0.1, what="every record committed")
        wait_until(lambda: bool(spark_job_threads()), 30, interval=0.1, what="the attached job's runner")
        cluster.kill_topology("opaque-sink")
        wait_until(lambda: not spark_job_threads(), 90, interval=0.1, what="the attached job's runner to stop")

    assert hook.fired and hook.replayed, "txid 2 was committed, failed and replayed"
    rows = read_committed_table(root).to_pylist()
    keys = sorted((r["partition"], r["offset"]) for r in rows)
    assert keys == sorted((p, o) for p in (0, 1) for o in range(N)), "every record exactly once"
    assert not any(r["partition"] == 1 for r in rows if r["txid"] == 2), "txid 2 holds the replay's records"
    assert read_committed(spark, root).count() == 2 * N
    assert JobOutput(tmp_path / "out").done_through() <= committed_txids(root)[-1]
    assert not spark_job_threads()
