"""The sink's writer: replays replace or skip, the janitor, tasks' parts, file sizing, compaction, pyarrow reads."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from storm_py.errors import FailedException
from storm_py.spark import DatasetWriter, committed_txids, compact, read_committed, read_committed_table
from storm_py.spark.layout import CommitAction, DatasetError, DatasetLayout
from storm_py.spark.sink import WriterOptions
from tests.spark.helpers import SCHEMA, as_dicts, rows_for, sort_key

pytestmark = pytest.mark.spark


def rows_of(root) -> list[dict]:
    return sorted(read_committed_table(root, SCHEMA).to_pylist(), key=sort_key)


def expected(*txids: int, n: int = 5) -> list[dict]:
    return sorted((r for t in txids for r in as_dicts(rows_for(t, n), t)), key=sort_key)


def crash_at(point: str):
    def hook(p: str) -> None:
        if p == point:
            raise FailedException(f"crash at {p}")
    return hook


def test_a_replay_before_latest_replaces_the_txid_and_an_older_txid_is_skipped(tmp_path):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    assert w.commit(1, 10, rows_for(1)).committed
    with pytest.raises(FailedException):  # files of txid 2 published, _LATEST not moved: 2 is not committed
        w.commit(2, 20, rows_for(2, 9), hook=crash_at("before-latest"))
    assert committed_txids(tmp_path) == [1] and rows_of(tmp_path) == expected(1)
    result = w.commit(2, 21, rows_for(2))  # the replay (a new attempt) replaces what the failed one wrote
    assert result.action is CommitAction.PUBLISH and result.committed
    assert rows_of(tmp_path) == expected(1, 2)
    assert DatasetLayout(tmp_path).read_manifest(2).attempt == 21
    w.commit(3, 30, rows_for(3))
    again = w.commit(2, 22, rows_for(2, 50))  # below _LATEST: its commit was recorded, nothing changes
    assert again.action is CommitAction.SKIP
    assert rows_of(tmp_path) == expected(1, 2, 3)


def test_a_replay_of_the_last_txid_replaces_it_atomically_for_an_opaque_spout(tmp_path, spark):
    """An opaque spout's replay of N = _LATEST may hold other records: N then holds exactly the replay's rows,
    and a reader that took N's manifest before the switch still reads the old N whole."""
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    w.commit(1, 1, rows_for(1))
    w.commit(2, 2, rows_for(2, 7))
    layout = DatasetLayout(tmp_path)
    old = layout.read_manifest(2)
    replay = [[k, v + 500, d] for k, v, d in rows_for(2, 4)]

    result = w.commit(2, 3, replay)

    assert result.action is CommitAction.REPLACE and result.committed
    assert committed_txids(tmp_path) == [1, 2]
    want = sorted(expected(1) + [{"key": k, "value": v, "day": d, "txid": 2} for k, v, d in replay], key=sort_key)
    assert rows_of(tmp_path) == want
    assert sorted((r.asDict() for r in read_committed(spark, tmp_path).collect()), key=sort_key) == want
    assert layout.read_manifest(2).attempt == 3
    assert all((tmp_path / f.path).exists() for f in old.files), "readers holding the old manifest still read"
    assert sum(f.rows for f in old.files) == 7
    assert w.commit(2, 4, replay).committed, "a transactional replay (same rows) replaces with the same content"
    assert rows_of(tmp_path) == want

    removed = DatasetWriter(tmp_path, SCHEMA, ["day"]).start()  # a later start-up: the janitor
    assert all(not (tmp_path / f.path).exists() for f in old.files)
    assert set(removed) >= {f.path for f in old.files}
    assert rows_of(tmp_path) == want
    assert not list((tmp_path / "_commits" / "_replaced").glob("*.json"))


def test_a_replacement_that_fails_leaves_the_committed_txid_as_it_was(tmp_path):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    w.commit(1, 1, rows_for(1))
    with pytest.raises(FailedException):
        w.commit(1, 2, rows_for(1, 9), hook=crash_at("before-latest"))
    assert rows_of(tmp_path) == expected(1)
    DatasetWriter(tmp_path, SCHEMA, ["day"]).start()
    assert rows_of(tmp_path) == expected(1)
    layout = DatasetLayout(tmp_path)
    assert sum(1 for _ in layout.published_files()) == len(layout.read_manifest(1).files), "the attempt's files go"


def test_two_tasks_replace_the_last_txid_only_once_both_wrote_the_replay(tmp_path):
    a = DatasetWriter(tmp_path, SCHEMA, task=0, ntasks=2)
    b = DatasetWriter(tmp_path, SCHEMA, task=1, ntasks=2)
    rows = rows_for(1, 10)
    a.commit(1, 1, rows[:5])
    assert b.commit(1, 1, rows[5:]).committed
    replay = rows_for(1, 6)
    assert not a.commit(1, 2, replay[:2]).committed
    assert rows_of(tmp_path) == expected(1, n=10), "half a replacement is never seen"
    assert b.commit(1, 2, replay[2:]).committed
    assert rows_of(tmp_path) == expected(1, n=6)


def test_janitor_at_start_up_removes_a_crashed_attempt(tmp_path):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    w.commit(1, 1, rows_for(1))
    with pytest.raises(FailedException):
        w.commit(2, 2, rows_for(2), hook=crash_at("before-latest"))
    staged = DatasetLayout(tmp_path).staging_dir(2, 0)  # and an attempt that died while writing
    (staged / "half.parquet").write_bytes(b"PAR1")
    published = [p for p, t, _ in DatasetLayout(tmp_path).published_files() if t == 2]
    assert published

    restarted = DatasetWriter(tmp_path, SCHEMA, ["day"])  # a new process
    removed = restarted.start()
    assert all(not p.exists() for p in published)
    assert not staged.exists()
    assert any("txid=2" in r for r in removed)
    assert rows_of(tmp_path) == expected(1)
    assert restarted.commit(2, 3, rows_for(2)).committed
    assert rows_of(tmp_path) == expected(1, 2)


def test_a_txid_is_committed_once_every_sink_task_wrote_its_part(tmp_path):
    a = DatasetWriter(tmp_path, SCHEMA, ["day"], task=0, ntasks=2)
    b = DatasetWriter(tmp_path, SCHEMA, ["day"], task=1, ntasks=2)
    rows = rows_for(1, 10)
    first = a.commit(1, 5, rows[:4], source={"0": [0, 3]})
    assert not first.committed and committed_txids(tmp_path) == []
    assert rows_of(tmp_path) == []
    second = b.commit(1, 5, rows[4:], source={"0": [4, 9], "1": [0, 0]})
    assert second.committed and committed_txids(tmp_path) == [1]
    assert rows_of(tmp_path) == expected(1, n=10)
    manifest = DatasetLayout(tmp_path).read_manifest(1)
    assert manifest.tasks == [0, 1] and manifest.rows == 10
    assert manifest.source == {"0": [0, 9], "1": [0, 0]}
    assert manifest.fingerprint.startswith("sha256:") and manifest.schema == SCHEMA


def test_bad_rows_are_returned_with_reasons_and_never_written(tmp_path):
    w = DatasetWriter(tmp_path, SCHEMA)
    bad = [["k", "7", "d0"], ["k", 1], [None, 1, "d1"]]
    result = w.commit(1, 1, [*rows_for(1, 2), *bad])
    assert [r for r, _ in result.bad] == bad
    assert [why for _, why in result.bad] == [
        "field 'value': expected int64, got str '7'",
        "missing fields ['day']: 2 values for 3 fields",
        "field 'key': null in a non-null string field",
    ]
    assert rows_of(tmp_path) == expected(1, n=2)
    assert DatasetLayout(tmp_path).read_manifest(1).errors == 3


def test_files_and_row_groups_are_cut_by_size(tmp_path):
    w = DatasetWriter(tmp_path, SCHEMA, options=WriterOptions(max_rows_per_file=1000, row_group_rows=300))
    w.commit(1, 1, rows_for(1, 2500))
    files = DatasetLayout(tmp_path).read_manifest(1).files
    assert [f.rows for f in files] == [1000, 1000, 500]
    meta = pq.ParquetFile(tmp_path / files[0].path).metadata
    assert meta.num_row_groups == 4 and meta.row_group(0).num_rows == 300
    assert "txid" not in meta.schema.names and "key" in meta.schema.names, "txid comes from the directory"


def test_compaction_merges_small_txids_and_reads_stay_exact(tmp_path, spark):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    for t in range(1, 21):
        w.commit(t, t, rows_for(t, 3 if t != 10 else 40))
    before = rows_of(tmp_path)
    files_before = sum(1 for _ in DatasetLayout(tmp_path).published_files())

    layout = DatasetLayout(tmp_path)
    held = layout.committed_manifests()  # a reader that took the manifests before the compaction
    merged = compact(tmp_path, min_rows=20)

    assert merged == [(1, 7), (8, 9), (11, 17), (18, 19)], "txid 10 is big enough: runs stop at it; 20 is the last"
    assert all((tmp_path / f.path).exists() for m in held for f in m.files), "the held manifests still read"
    assert rows_of(tmp_path) == before
    via_spark = sorted((r.asDict() for r in read_committed(spark, tmp_path).collect()), key=sort_key)
    assert via_spark == before
    w.commit(21, 21, rows_for(21))  # the sink keeps committing after a compaction
    assert rows_of(tmp_path) == sorted(before + expected(21, n=5), key=sort_key)
    assert compact(tmp_path, min_rows=20) == [], "compacted txids are left alone, 20 alone is no run, 21 the last"
    files_after = sum(1 for _ in DatasetLayout(tmp_path).published_files())
    assert files_after < files_before / 3, "the next compaction deleted the originals"
    assert rows_of(tmp_path) == sorted(before + expected(21, n=5), key=sort_key)
    manifest = json.loads(DatasetLayout(tmp_path).manifest_path(3).read_text())
    assert manifest["compacted"] == f"{1:020d}-{7:020d}"


def test_an_interrupted_compaction_is_finished_by_the_next(tmp_path, spark):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    for t in range(1, 6):
        w.commit(t, t, rows_for(t, 2))
    before = rows_of(tmp_path)
    compact(tmp_path, min_rows=100)
    # as if the files of txid 2 had not been deleted yet: both the segment and the originals exist
    layout = DatasetLayout(tmp_path)
    original = tmp_path / layout.read_manifest(2).files[0].path
    original.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pq.read_table(next(iter((tmp_path / "_compacted").glob("*/*.parquet")))).slice(0, 1), original)
    assert rows_of(tmp_path) == before
    assert sorted((r.asDict() for r in read_committed(spark, tmp_path).collect()), key=sort_key) == before
    compact(tmp_path, min_rows=100)
    assert not original.exists()


def test_parts_of_an_earlier_attempt_never_complete_a_txid(tmp_path):
    """A replay may deal the rows to the tasks differently (shuffle grouping): only one attempt's parts count."""
    a = DatasetWriter(tmp_path, SCHEMA, task=0, ntasks=2)
    b = DatasetWriter(tmp_path, SCHEMA, task=1, ntasks=2)
    rows = rows_for(1, 10)
    assert not a.commit(1, 1, rows[:6]).committed  # attempt 1: task b fails before writing its part
    assert not b.commit(1, 2, rows[3:]).committed, "a's part is of attempt 1"
    assert committed_txids(tmp_path) == []
    assert a.commit(1, 2, rows[:3]).committed
    assert rows_of(tmp_path) == expected(1, n=10)


def test_one_compaction_at_a_time(tmp_path):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    for t in range(1, 5):
        w.commit(t, t, rows_for(t, 2))
    with DatasetLayout(tmp_path).compacting(), pytest.raises(DatasetError, match="another compaction"):
        compact(tmp_path, min_rows=100)
    assert compact(tmp_path, min_rows=100) == [(1, 3)], "the lock is released"
