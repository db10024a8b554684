"""A crash between any two steps of a commit leaves N committed or not, never part of N; the next start-up
recovers or removes what the crash left, and a replay of N replaces N.

A "crash" here raises out of the commit at a fault point and starts a new writer on the same root (what the
kernel keeps of a killed process: every write, durable or not).  The tests named ``lost`` also drop what a
power loss may drop: writes after the fsync round (the manifest's rename, the ``_LATEST`` hint) or, when the
crash came before the round completed, the tail of a data file.
"""

from __future__ import annotations

import json
import os

import pytest

from storm_py.errors import FailedException
from storm_py.spark import DatasetWriter, committed_txids, read_committed, read_committed_table
from storm_py.spark.layout import HINT_EVERY, LATEST, CommitAction, DatasetLayout
from tests.spark.helpers import SCHEMA, as_dicts, rows_for, sort_key

pytestmark = pytest.mark.spark

# fault point -> is N committed once the next start-up ran (what readers saw before it is checked separately)
POINTS = {
    "before-publish": False,  # nothing of N written yet
    "before-latest": False,  # N's files renamed out of _staging, no manifest
    "before-fsync": True,  # N's pending manifest complete, not fsynced: the kernel still has it, recovery commits
    "before-rename": True,  # pending manifest and files durable, not renamed: recovery commits
    "before-hint": True,  # N's manifest renamed into place (the commit point), _LATEST still says N-1
}
REPLAY = [[k, v + 500, d] for k, v, d in rows_for(2, 4)]  # an opaque spout's replay of txid 2: other rows


def crash_at(point: str):
    def hook(p: str) -> None:
        if p == point:
            raise FailedException(f"crash at {p}")
    return hook


def pyarrow_rows(root) -> list[dict]:
    return sorted(read_committed_table(root, SCHEMA).to_pylist(), key=sort_key)


def spark_rows(spark, root) -> list[dict]:
    return sorted((r.asDict() for r in read_committed(spark, root).collect()), key=sort_key)


def want(*batches: tuple[int, list]) -> list[dict]:
    return sorted((r for t, rows in batches for r in as_dicts(rows, t)), key=sort_key)


def assert_clean(root) -> None:
    """Only files the committed manifests list are left: no staged, pending or unpublished leftovers."""
    layout = DatasetLayout(root)
    listed = {f.path for m in layout.committed_manifests() for f in m.files}
    published = {p.relative_to(root).as_posix() for p, _, _ in layout.published_files()}
    assert published == listed
    assert not list(layout.commits.glob("*.pending"))
    assert not [p for p in layout.staging.rglob("*") if p.is_file()]
    assert layout.hint() <= layout.latest() < layout.hint() + HINT_EVERY
    control = {layout.commits, layout.staging}
    empty = [p for p in root.rglob("*") if p.is_dir() and not any(p.iterdir()) and p not in control
             and layout.commits not in p.parents]
    assert not empty, f"empty directories left: {empty}"


def crashed_commit(root, point: str, by: list[str] | None = None) -> None:
    w = DatasetWriter(root, SCHEMA, ["day"] if by is None else by)
    assert w.commit(1, 1, rows_for(1)).committed
    with pytest.raises(FailedException):
        w.commit(2, 2, rows_for(2, 9), hook=crash_at(point))


@pytest.mark.parametrize("by", [["day"], []], ids=["partitioned", "unpartitioned"])
@pytest.mark.parametrize("point", list(POINTS))
def test_a_crash_at_each_step_leaves_n_committed_or_not_and_a_replay_replaces_it(tmp_path, spark, point, by):
    crashed_commit(tmp_path, point, by)
    one, both = want((1, rows_for(1))), want((1, rows_for(1)), (2, rows_for(2, 9)))
    seen = pyarrow_rows(tmp_path)
    assert seen in (one, both), "readers see txid 2 whole or not at all"
    assert spark_rows(spark, tmp_path) == seen
    assert (seen == both) == (point == "before-hint"), "only the manifest's rename commits N"

    DatasetWriter(tmp_path, SCHEMA, by).start()  # the restarted process: recovery and the janitor
    assert DatasetLayout(tmp_path).hint() == (2 if POINTS[point] else 1), "start-up brings the hint up"
    recovered = both if POINTS[point] else one
    assert pyarrow_rows(tmp_path) == recovered and spark_rows(spark, tmp_path) == recovered
    assert_clean(tmp_path)

    w = DatasetWriter(tmp_path, SCHEMA, by)
    result = w.commit(2, 3, REPLAY)  # the coordinator never recorded 2: it is replayed
    assert result.committed
    assert result.action is (CommitAction.REPLACE if POINTS[point] else CommitAction.PUBLISH)
    replaced = want((1, rows_for(1)), (2, REPLAY))
    assert pyarrow_rows(tmp_path) == replaced and spark_rows(spark, tmp_path) == replaced
    assert w.commit(3, 4, rows_for(3)).action is CommitAction.PUBLISH
    DatasetWriter(tmp_path, SCHEMA, by).start()
    assert pyarrow_rows(tmp_path) == want((1, rows_for(1)), (2, REPLAY), (3, rows_for(3)))
    assert_clean(tmp_path)


def test_lost_rename_and_hint_after_a_returned_commit_are_recovered_from_the_durable_pending_manifest(tmp_path):
    """The commit returned (the coordinator records N), then a power loss dropped the manifest's rename and the
    hint, which get no fsync of their own: the pending manifest and N's files were durable, so N stays."""
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    w.commit(1, 1, rows_for(1))
    assert w.commit(2, 2, rows_for(2, 9)).committed
    layout = DatasetLayout(tmp_path)
    os.replace(layout.manifest_path(2), layout.pending_path(2))
    (layout.commits / LATEST).write_text(json.dumps({"txid": 1}))
    assert committed_txids(tmp_path) == [1]

    DatasetWriter(tmp_path, SCHEMA, ["day"]).start()
    assert committed_txids(tmp_path) == [1, 2] and layout.hint() == 2
    assert pyarrow_rows(tmp_path) == want((1, rows_for(1)), (2, rows_for(2, 9)))
    assert DatasetWriter(tmp_path, SCHEMA, ["day"]).commit(3, 3, rows_for(3)).action is CommitAction.PUBLISH
    assert_clean(tmp_path)


@pytest.mark.parametrize("damage", ["truncated data file", "missing data file", "torn pending manifest"])
def test_lost_writes_of_an_unfinished_fsync_round_leave_n_uncommitted(tmp_path, damage):
    """A power loss during the fsync round may keep the pending manifest but not all of N's data (or only
    part of the manifest): recovery checks every listed file's size and Parquet footer and drops such an N."""
    crashed_commit(tmp_path, "before-rename")
    layout = DatasetLayout(tmp_path)
    manifest = json.loads(layout.pending_path(2).read_bytes())
    data = tmp_path / manifest["files"][0]["path"]
    if damage == "truncated data file":
        os.truncate(data, data.stat().st_size - 7)
    elif damage == "missing data file":
        data.unlink()
    else:
        pending = layout.pending_path(2)
        os.truncate(pending, pending.stat().st_size // 2)

    DatasetWriter(tmp_path, SCHEMA, ["day"]).start()
    assert committed_txids(tmp_path) == [1]
    assert_clean(tmp_path)
    assert DatasetWriter(tmp_path, SCHEMA, ["day"]).commit(2, 3, REPLAY).action is CommitAction.PUBLISH
    assert pyarrow_rows(tmp_path) == want((1, rows_for(1)), (2, REPLAY))


def test_a_torn_missing_or_behind_hint_is_only_a_hint(tmp_path):
    w = DatasetWriter(tmp_path, SCHEMA, ["day"])
    for t in (1, 2, 3):
        w.commit(t, t, rows_for(t))
    layout = DatasetLayout(tmp_path)
    assert layout.hint() == 0 and committed_txids(tmp_path) == [1, 2, 3], "rewritten every HINT_EVERY txids"
    (layout.commits / LATEST).write_bytes(b"")  # written without fsync: a crash may leave it empty
    assert committed_txids(tmp_path) == [1, 2, 3]
    (layout.commits / LATEST).unlink()
    assert committed_txids(tmp_path) == [1, 2, 3]
    assert w.commit(3, 4, rows_for(3)).action is CommitAction.REPLACE
    DatasetWriter(tmp_path, SCHEMA, ["day"]).start()
    assert layout.hint() == 3


@pytest.mark.parametrize("by", [["day"], []], ids=["partitioned", "unpartitioned"])
@pytest.mark.parametrize("point", list(POINTS))
def test_the_same_writer_retrying_after_a_failed_commit_sees_what_the_failure_left(tmp_path, point, by):
    """The commit phase is retried in the same process: a failure after the commit point leaves N committed,
    so the retry replaces it (the writer's remembered last txid is dropped when a commit fails)."""
    w = DatasetWriter(tmp_path, SCHEMA, by)
    w.commit(1, 1, rows_for(1))
    with pytest.raises(FailedException):
        w.commit(2, 2, rows_for(2, 9), hook=crash_at(point))
    result = w.commit(2, 3, REPLAY)
    assert result.action is (CommitAction.REPLACE if point == "before-hint" else CommitAction.PUBLISH)
    assert pyarrow_rows(tmp_path) == want((1, rows_for(1)), (2, REPLAY))
    DatasetWriter(tmp_path, SCHEMA, by).start()
    assert pyarrow_rows(tmp_path) == want((1, rows_for(1)), (2, REPLAY))
    assert_clean(tmp_path)


def test_a_batch_of_only_bad_rows_leaves_no_directory_behind(tmp_path):
    """N's directory is created ahead of its files; a txid whose every row is rejected has no files."""
    w = DatasetWriter(tmp_path, SCHEMA)
    w.commit(1, 1, rows_for(1))
    result = w.commit(2, 2, [["k", "not an int", "d0"]])
    assert result.committed and result.rows == 0 and len(result.bad) == 1
    assert not (tmp_path / "txid=2").exists()
    assert pyarrow_rows(tmp_path) == want((1, rows_for(1)))
    assert_clean(tmp_path)


def test_the_fsync_round_covers_n_s_directories_and_the_directories_holding_their_names(tmp_path, monkeypatch):
    """A new directory's entry is durable only once its parent is fsynced: N's ``day=*/txid=N`` directories,
    the ``day=*`` directories and the root are all in the round that precedes the commit point."""
    import storm_py.spark.layout as layout_module

    synced: list = []
    real = layout_module.fsync_round
    monkeypatch.setattr(layout_module, "fsync_round",
                        lambda files, dirs: (synced.extend([*files, *dirs]), real(files, dirs))[1])
    DatasetWriter(tmp_path, SCHEMA, ["day"]).commit(1, 1, rows_for(1))
    dirs = {p for p in synced if not isinstance(p, int)}
    assert dirs == {tmp_path, tmp_path / "day=d0", tmp_path / "day=d1",
                    tmp_path / "day=d0" / "txid=1", tmp_path / "day=d1" / "txid=1"}
