"""Rows landed per second by the Parquet sink beside pyarrow writing the same rows, and a follow job's lag.

    python bench/spark_sink.py [--rows 300000] [--runs 3] [--lag-commits 20] [--json results.jsonl]

Landing: ``--rows`` event-like rows (string, int64, float64, string, bool, timestamp; Python lists, as a sink
receives them) cut into batches of 1,000 / 10,000 / 100,000 rows.  Each ``--runs`` times (median reported),
interleaved:

* sink: ``DatasetWriter.commit`` per batch (schema check, Arrow conversion, Parquet with zstd into
  ``_staging/``, rename into ``txid=N``, N's pending manifest, one round of fsyncs, the manifest's rename, the
  ``_LATEST`` hint every 16 txids) — what ``ParquetBatchSink.finish_batch`` does;
* pyarrow: per batch, the same rows to columns (``map(itemgetter(i), rows)``, as the sink does), ``pa.array``
  per column, ``pq.write_table`` (zstd) of one file with an fsync — the direct write with nothing around it;
* pyarrow durable: the same plus an fsync of the directory, so the new file survives a machine crash as the
  sink's committed files do (the sink's guarantee; the plain fsync does not make the file's name durable).

The three run alternately in each run, so the machine's load hits them alike, after a few untimed batches
through each (once-per-process costs such as the sink's lazy import of its Arrow module are not per batch).

``--no-fsync`` runs both without fsyncs (the sink's ``fsync=False``: atomic against a killed process, not
against a machine crash).

Lag: a writer commits a batch of 1,000 rows every 0.5 s while a follow loop (``run_step`` with a 0.1 s poll,
the local Spark of ``spark_session()``) processes them with a row-wise job; the lag of a txid is the time
from its commit returning to the step that holds it being published.  Median and 90th percentile.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.append(str(Path(__file__).resolve().parents[1]))  # after PYTHONPATH: a compiled build there wins

from storm_py.clock import SYSTEM_CLOCK
from storm_py.spark import DatasetWriter
from storm_py.spark.arrow import ARROW_TYPES
from storm_py.spark.jobs import JobOutput, run_step
from storm_py.spark.schema import Schema
from storm_py.spark.sink import WriterOptions

SCHEMA = {"user": "string", "seq": "int64", "amount": "float64", "kind": "string", "ok": "bool", "at": "timestamp"}
KINDS = ["view", "click", "purchase"]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def make_rows(n: int) -> list[list[Any]]:
    return [[f"user-{i % 997}", i, (i % 10_000) / 100.0, KINDS[i % 3], i % 2 == 0, T0 + dt.timedelta(seconds=i)]
            for i in range(n)]


def land_sink(root: Path, batches: list[list[list[Any]]], fsync: bool) -> float:
    writer = DatasetWriter(root, SCHEMA, options=WriterOptions(fsync=fsync))
    start = SYSTEM_CLOCK.now()
    for txid, batch in enumerate(batches, 1):
        writer.commit(txid, 1, batch)
    return SYSTEM_CLOCK.now() - start


def land_pyarrow(root: Path, batches: list[list[list[Any]]], fsync: bool, dir_fsync: bool = False) -> float:
    schema = Schema.from_dict(SCHEMA)
    arrow = pa.schema([pa.field(f.name, ARROW_TYPES[f.type], nullable=False) for f in schema.fields])
    root.mkdir(parents=True)
    start = SYSTEM_CLOCK.now()
    for txid, batch in enumerate(batches, 1):
        columns = [list(map(itemgetter(i), batch)) for i in range(len(arrow))]
        table = pa.Table.from_arrays([pa.array(c, type=t.type) for c, t in zip(columns, arrow, strict=True)],
                                     schema=arrow)
        with open(root / f"part-{txid}.parquet", "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if dir_fsync:
            fd = os.open(root, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
    return SYSTEM_CLOCK.now() - start


def warm_up(data: list[list[Any]], tmp: Path, fsync: bool) -> None:
    """A few untimed batches through each path first: the sink's lazily imported Arrow module and fsync threads,
    and pyarrow's first write, are once-per-process costs, not per-batch ones."""
    batches = [data[i:i + 1_000] for i in range(0, 5_000, 1_000)]
    land_sink(tmp / "warm-sink", batches, fsync)
    land_pyarrow(tmp / "warm-direct", batches, fsync, dir_fsync=fsync)
    for name in ("warm-sink", "warm-direct"):
        shutil.rmtree(tmp / name)


def landing(rows: int, runs: int, tmp: Path, fsync: bool) -> list[dict[str, Any]]:
    data = make_rows(rows)
    warm_up(data, tmp, fsync)
    results = []
    for size in (1_000, 10_000, 100_000):
        batches = [data[i:i + size] for i in range(0, rows - rows % size or rows, size)]
        landed = sum(len(b) for b in batches)
        sink_t, direct_t, durable_t = [], [], []
        for run in range(runs):
            sink_t.append(land_sink(tmp / f"sink-{size}-{run}", batches, fsync))
            direct_t.append(land_pyarrow(tmp / f"direct-{size}-{run}", batches, fsync))
            durable_t.append(land_pyarrow(tmp / f"durable-{size}-{run}", batches, fsync, dir_fsync=fsync))
            for name in ("sink", "direct", "durable"):
                shutil.rmtree(tmp / f"{name}-{size}-{run}")
        sink_rate = landed / statistics.median(sink_t)
        direct_rate = landed / statistics.median(direct_t)
        durable_rate = landed / statistics.median(durable_t)
        results.append({"bench": "landing", "fsync": fsync, "batch_rows": size, "rows": landed, "txids": len(batches),
                        "sink_rows_per_s": round(sink_rate), "pyarrow_rows_per_s": round(direct_rate),
                        "pyarrow_durable_rows_per_s": round(durable_rate),
                        "ratio": round(sink_rate / direct_rate, 3),
                        "ratio_durable": round(sink_rate / durable_rate, 3)})
        mode = "fsync" if fsync else "no fsync"
        print(f"{mode}, batch {size:>7,} rows: sink {sink_rate:>10,.0f} rows/s  pyarrow {direct_rate:>10,.0f} rows/s  "
              f"pyarrow+dir fsync {durable_rate:>10,.0f} rows/s  sink/pyarrow {sink_rate / direct_rate:.0%}  "
              f"sink/durable {sink_rate / durable_rate:.0%}  (load {os.getloadavg()[0]:.1f})", flush=True)
    return results


def per_row(spark: Any, df: Any) -> Any:
    return df.select("user", "seq", "txid")


def lag(commits: int, tmp: Path) -> dict[str, Any]:
    from storm_py.spark import spark_session

    spark = spark_session()
    root, out = tmp / "lag-data", tmp / "lag-out"
    writer = DatasetWriter(root, SCHEMA)
    committed_at: dict[int, float] = {}
    published_at: dict[int, float] = {}
    stop = threading.Event()
    rows = make_rows(1_000)

    def follow() -> None:
        while not stop.is_set():
            span = run_step(spark, per_row, root, out)
            if span is None:
                SYSTEM_CLOCK.sleep(0.1)
                continue
            now = SYSTEM_CLOCK.now()
            for t in range(span[0], span[1] + 1):
                published_at[t] = now

    spark.range(10).count()  # the session's first job is slow: not part of the lag
    follower = threading.Thread(target=follow)
    follower.start()
    try:
        for txid in range(1, commits + 1):
            writer.commit(txid, 1, rows)
            committed_at[txid] = SYSTEM_CLOCK.now()
            SYSTEM_CLOCK.sleep(0.5)
        deadline = SYSTEM_CLOCK.now() + 120
        while JobOutput(out).done_through() < commits and SYSTEM_CLOCK.now() < deadline:
            SYSTEM_CLOCK.sleep(0.1)
    finally:
        stop.set()
        follower.join()
    lags = sorted(published_at[t] - committed_at[t] for t in committed_at if t in published_at)
    steps = len(JobOutput(out).steps())
    result = {"bench": "follow_lag", "commits": commits, "steps": steps,
              "lag_median_s": round(statistics.median(lags), 3),
              "lag_p90_s": round(lags[int(0.9 * (len(lags) - 1))], 3)}
    print(f"follow lag over {commits} commits every 0.5 s ({steps} steps): median {result['lag_median_s']} s, "
          f"p90 {result['lag_p90_s']} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lag-commits", type=int, default=20)
    parser.add_argument("--no-fsync", action="store_true", help="land without fsyncs (both sides)")
    parser.add_argument("--json", default=None, help="append the results as JSON lines to this file")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="spark-sink-bench-"))
    try:
        results = landing(args.rows, args.runs, tmp, fsync=not args.no_fsync)
        if args.lag_commits:
            results.append(lag(args.lag_commits, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as fh:
            for r in results:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
