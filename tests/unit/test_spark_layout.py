"""The dataset layout's decisions: the commit rule, names, manifests, offsets and the janitor (stdlib only)."""

from __future__ import annotations

import json

import pytest

from storm_py.spark.janitor import clean_up
from storm_py.spark.layout import (
    CommitAction,
    DatasetError,
    DatasetLayout,
    FileEntry,
    Manifest,
    committed_txids,
    escape_value,
    merge_parts,
    parse_partition_dir,
    part_name,
    partition_dir,
    plan_commit,
    source_ranges,
)


def test_commit_rule_publishes_the_next_txid_and_skips_published_ones():
    assert plan_commit(0, 1) is CommitAction.PUBLISH
    assert plan_commit(4, 5) is CommitAction.PUBLISH
    assert plan_commit(5, 5) is CommitAction.REPLACE, "a replay of the last committed txid replaces it"
    assert plan_commit(5, 2) is CommitAction.SKIP
    with pytest.raises(DatasetError, match=r"txids 6\.\.7 were never published"):
        plan_commit(5, 8)


def test_names_and_partition_directories_round_trip():
    assert part_name(12, 3, 1) == "part-00000000000000000012-00003-0001.parquet"
    rel = partition_dir(["day", "city", "vip"], ["2026-01-01", "São Paulo/x=1", True], 7)
    assert rel == "day=2026-01-01/city=São Paulo%2Fx%3D1/vip=true/txid=7"
    assert parse_partition_dir(rel) == {"day": "2026-01-01", "city": "São Paulo/x=1", "vip": "true"}
    assert escape_value("") == "__HIVE_DEFAULT_PARTITION__"


def test_source_offsets_become_ranges_per_partition_and_merge_across_tasks():
    a = source_ranges([(0, 5), (0, 3), (1, 10), (1, "bad"), (0, True)])
    assert a == {"0": [3, 5], "1": [10, 10]}
    b = source_ranges([(0, 6), (2, 1)])
    part = lambda task, src: Manifest(4, 9, [FileEntry(f"t{task}", 2)], {"a": "int64"}, "fp", src, 1, [task])  # noqa: E731
    merged = merge_parts([part(1, b), part(0, a)])
    assert merged.source == {"0": [3, 6], "1": [10, 10], "2": [1, 1]}
    assert [f.path for f in merged.files] == ["t0", "t1"] and merged.rows == 4 and merged.errors == 2
    assert merged.tasks == [0, 1]
    other = Manifest(4, 9, [], {"a": "string"}, "fp2", {}, 0, [2])
    with pytest.raises(DatasetError, match="different schemas"):
        merge_parts([part(0, a), other])


def _touch(path, data=b"x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_latest_pointer_and_committed_txids(tmp_path):
    layout = DatasetLayout(tmp_path)
    assert layout.latest() == 0 and committed_txids(tmp_path) == []
    layout.ensure()
    layout.set_latest(3)
    assert committed_txids(tmp_path) == [1, 2, 3]
    assert json.loads((tmp_path / "_commits" / "_LATEST").read_text()) == {"txid": 3}
    assert not [p for p in (tmp_path / "_commits").iterdir() if p.name.endswith(".tmp")]
    (tmp_path / "_commits" / "_LATEST").write_text("{bro")
    assert layout.latest() == 0, "a torn hint is only a hint: the manifests say what is committed"
    layout.write_manifest(Manifest(1, 0, [], {}, "f"))
    assert layout.latest() == 1
    layout.manifest_path(2).write_bytes(b'{"txid": 2, "half')
    with pytest.raises(DatasetError, match="unreadable"):
        layout.read_manifest(2)


def test_janitor_removes_only_its_own_unpublished_leftovers(tmp_path):
    layout = DatasetLayout(tmp_path)
    layout.ensure()
    layout.set_latest(2)
    committed = tmp_path / "day=a" / "txid=2" / part_name(2, 0, 0)
    mine_late = tmp_path / "day=a" / "txid=3" / part_name(3, 0, 0)
    other_late = tmp_path / "day=b" / "txid=3" / part_name(3, 1, 0)
    gone_task = tmp_path / "day=b" / "txid=3" / part_name(3, 4, 0)
    for p in (committed, mine_late, other_late, gone_task):
        _touch(p)
    _touch(tmp_path / "_staging" / f"{3:020d}" / "00000-abc" / "f.parquet")
    _touch(tmp_path / "_staging" / f"{3:020d}" / "00001-def" / "f.parquet")
    _touch(layout.parts_dir(3) / "task-00000.json")
    _touch(layout.parts_dir(3) / "task-00001.json")
    _touch(layout.pending_path(3), b'{"txid": 3, "half')  # a crash in 3's fsync round
    replaced = tmp_path / "day=a" / "txid=2" / part_name(2, 0, 1, "0a1b")  # not in 2's manifest: replaced
    _touch(replaced)
    layout.write_manifest(Manifest(2, 1, [FileEntry(committed.relative_to(tmp_path).as_posix(), 1)], {}, "f"))

    removed = clean_up(DatasetLayout(tmp_path), task=0, ntasks=2)

    assert committed.exists() and other_late.exists()
    assert not replaced.exists(), "files of the last committed txid that its manifest does not list go"
    assert not mine_late.exists() and not gone_task.exists()
    assert not (tmp_path / "day=a" / "txid=3").exists(), "emptied txid directories go too"
    assert not (tmp_path / "_staging" / f"{3:020d}" / "00000-abc").exists()
    assert (tmp_path / "_staging" / f"{3:020d}" / "00001-def").exists()
    assert not (layout.parts_dir(3) / "task-00000.json").exists()
    assert (layout.parts_dir(3) / "task-00001.json").exists()
    assert not layout.manifest_path(3).exists() and not layout.pending_path(3).exists()
    assert layout.manifest_path(2).exists()
    assert len(removed) == 5
