"""ParquetState: Trident batches land exactly once in the dataset ParquetBatchSink writes, read back by Spark;
replayed batches (failed before and after the write) are neither lost nor doubled, empty batches commit zero
rows, rows the schema refuses come out on the new-values stream."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from storm_py.local import LocalCluster
from storm_py.spark import ParquetState, ParquetUpdater, committed_txids, read_committed, read_committed_table
from storm_py.trident import FixedBatchSpout, TridentTopology
from tests.trident.helpers import FailOnce, Seen, record, wait

SCHEMA = {"word": "string", "n": "int64"}
ROWS = [["a", 1], ["b", 2], ["c", 3], ["d", "not a number"], ["e", 5], ["f", 6], ["g", 7]]


def build(root: Path, parallelism: int) -> tuple[TridentTopology, Any, Any]:
    topology = TridentTopology()
    stream = topology.new_stream(f"parquet-{parallelism}", FixedBatchSpout(["word", "n"], 2, *ROWS))
    state = (
        stream.each(["word"], FailOnce({"c"}, Seen()), [])
        .partition_by(["word"])
        .partition_persist(ParquetState.factory(root, SCHEMA), ["word", "n"], ParquetUpdater(), ["values", "reason"])
        .parallelism_hint(parallelism)
    )
    bad = state.new_values_stream().map(lambda t: [tuple(t["values"]), t["reason"]])
    bad.each(["values"], FailOnce({("d", "not a number")}, Seen()), [])  # fails txid 2 after it was written
    return topology, record(bad), record(stream)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_trident_batches_land_exactly_once(tmp_path: Path, parallelism: int) -> None:
    topology, bad, batches = build(tmp_path, parallelism)
    with LocalCluster() as cluster:
        cluster.submit_topology("parquet", {"topology.max.spout.pending": 2}, topology.build())
        wait(lambda: batches.has(6) and len(committed_txids(tmp_path)) >= 6, "six committed txids")
        cluster.kill_topology("parquet", wait_secs=0)
    table = read_committed_table(tmp_path).to_pylist()
    got = Counter((r["word"], r["n"], r["txid"]) for r in table)
    good = [r for r in ROWS if isinstance(r[1], int)]
    assert got == Counter((w, n, i // 2 + 1) for i, (w, n) in enumerate(ROWS) if isinstance(n, int))
    assert len(table) == len(good)
    assert committed_txids(tmp_path)[:6] == [1, 2, 3, 4, 5, 6]  # 5 and 6: empty batches, zero rows
    assert bad.rows(2) and all(row[0] == ("d", "not a number") for row in bad.rows(2))


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reads_the_trident_dataset(tmp_path: Path, spark: Any) -> None:
    topology, _, batches = build(tmp_path, 2)
    with LocalCluster() as cluster:
        cluster.submit_topology("parquet", {"topology.max.spout.pending": 2}, topology.build())
        wait(lambda: batches.has(5) and len(committed_txids(tmp_path)) >= 5, "five committed txids")
        cluster.kill_topology("parquet", wait_secs=0)
    rows = sorted((r.word, r.n, r.txid) for r in read_committed(spark, tmp_path, last=5).collect())
    assert rows == [("a", 1, 1), ("b", 2, 1), ("c", 3, 2), ("e", 5, 3), ("f", 6, 3), ("g", 7, 4)]
