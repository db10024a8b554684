"""Spark reads committed rows only: staged and unpublished files are invisible, and reads see a prefix of txids."""

from __future__ import annotations

import collections
import shutil
import threading

import pytest

from storm_py.errors import FailedException
from storm_py.spark import DatasetWriter, committed_txids, read_committed
from storm_py.spark.layout import DatasetLayout
from storm_py.spark.schema import Schema
from storm_py.spark.session import spark_schema
from tests.spark.helpers import SCHEMA, as_dicts, rows_for, sort_key

pytestmark = pytest.mark.spark


def test_spark_skips_staging_and_control_files_and_read_committed_skips_unpublished_txids(tmp_path, spark):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    w.commit(1, 1, rows_for(1))
    # txid 2: files published but _LATEST not moved; txid 3: still being written under _staging
    with pytest.raises(FailedException):
        w.commit(2, 2, rows_for(2), hook=lambda p: _fail_at(p, "before-latest"))
    staged = DatasetLayout(tmp_path).staging_dir(3, 0)
    shutil.copytree(tmp_path / "day=d0", staged / "day=d0")
    (tmp_path / ".hidden-tmp").write_bytes(b"not parquet")

    struct = spark_schema(Schema.from_dict(SCHEMA))
    plain = spark.read.schema(struct).parquet(str(tmp_path))
    assert sorted({r.txid for r in plain.collect()}) == [1, 2], "_staging, _commits and dot files are skipped"

    got = sorted((r.asDict() for r in read_committed(spark, tmp_path).collect()), key=sort_key)
    assert got == sorted(as_dicts(rows_for(1), 1), key=sort_key)
    types = lambda st: [(f.name, f.dataType) for f in st.fields]  # noqa: E731 (Spark reads files as nullable)
    assert types(read_committed(spark, tmp_path).schema) == types(struct)
    assert read_committed(spark, tmp_path, first=2).count() == 0


def test_an_empty_dataset_reads_as_no_rows_with_the_schema(tmp_path, spark):
    df = read_committed(spark, tmp_path, SCHEMA)
    assert df.count() == 0 and df.columns == ["key", "value", "day", "txid"]


@pytest.mark.slow
def test_continuous_reads_while_batches_commit_see_a_prefix_of_committed_txids(tmp_path, spark):
    """A writer commits 30 txids (every fourth first fails half-published and is replayed) while Spark reads.

    The writer waits for a read to finish after every fifth commit, so reads interleave with commits.
    """
    total = 30
    expected = {t: collections.Counter(str(r) for r in rows_for(t, 3 + t % 5)) for t in range(1, total + 1)}
    done = threading.Event()
    read_done = threading.Semaphore(0)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            w = DatasetWriter(tmp_path, SCHEMA, ["day"])
            for t in range(1, total + 1):
                if t % 4 == 0:
                    try:
                        w.commit(t, 1, rows_for(t, 50), hook=lambda p: _fail_at(p, "before-latest"))
                    except FailedException:
                        pass
                w.commit(t, 2, rows_for(t, 3 + t % 5))
                if t % 5 == 0:
                    read_done.acquire(timeout=60)
        except BaseException as exc:  # pragma: no cover - reported by the assertion below
            errors.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    seen: list[int] = []
    try:
        while not done.is_set() or not seen or seen[-1] < total:
            rows = read_committed(spark, tmp_path, SCHEMA).collect()
            by_txid: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
            for r in rows:
                by_txid[r.txid][str([r.key, r.value, r.day])] += 1
            prefix = len(by_txid)
            assert sorted(by_txid) == list(range(1, prefix + 1)), f"not a prefix: {sorted(by_txid)}"
            for t, counter in by_txid.items():
                assert counter == expected[t], f"txid {t} read partially or with a failed attempt's rows"
            seen.append(prefix)
            read_done.release()
            if done.is_set() and prefix == total:
                break
    finally:
        writer.join()
    assert not errors, errors
    assert committed_txids(tmp_path) == list(range(1, total + 1))
    assert len(set(seen)) >= 5, f"reads did not overlap the commits: {seen}"


def _fail_at(point: str, where: str) -> None:
    if point == where:
        raise FailedException(f"injected at {point}")


def test_partition_values_needing_escapes_read_back_through_the_file_list(tmp_path, spark):
    """read_committed hands Spark file paths: escaped directory names (/, =, %, :, spaces, non-ASCII) must read."""
    days = ["São Paulo/x=1", "100% [a]{b}*?", "2026-01-01 00:00:00"]
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    rows = [[f"k{i}", i, day] for i, day in enumerate(days)]
    w.commit(1, 1, rows)
    got = sorted((r.asDict() for r in read_committed(spark, tmp_path).collect()), key=sort_key)
    assert got == sorted(as_dicts(rows, 1), key=sort_key)
